"""The one set of rules for token-id inputs, shared by the model and the decoders.

Every public entry point (``Transformer.forward``, ``greedy_decode``, ``beam_search``,
``sequence_scores``) checks its inputs once, here; the steps inside (``encode``,
``decode``, the fast form's packed paths) trust them. The value checks cost one
device-to-host copy per call, whatever the number of tensors.
"""
from __future__ import annotations

import torch

from .config import ModelConfig

INTEGER_DTYPES = (torch.long, torch.int32, torch.int16, torch.uint8, torch.int8)


def _check_layout(name: str, tokens) -> None:
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got "
                        f"{type(tokens).__name__}")
    if tokens.dtype not in INTEGER_DTYPES:
        raise TypeError(f"{name} must hold integer token ids (torch.long), got dtype "
                        f"{tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, length), got shape "
                         f"{tuple(tokens.shape)}")


def check_tokens(cfg: ModelConfig, src=None, tgt_in=None, *, start: int = 0) -> None:
    """Raise a one-line ``TypeError``/``ValueError`` naming the problem, else return.

    ``src`` (B, S): ids in [0, vocab_size), S <= cfg.max_len, every row with at least one
    non-pad token (the batching convention appends EOS). ``tgt_in`` (B, T): ids in
    [0, tgt_vocab_size), positions ``start .. start + T`` inside the positional table,
    the same batch size as ``src``.
    """
    checks = []                                    # (name, tokens, vocab size)
    if src is not None:
        _check_layout("src", src)
        if src.size(1) > cfg.max_len:
            raise ValueError(f"src has length {src.size(1)}, longer than the positional "
                             f"table (cfg.max_len={cfg.max_len})")
        checks.append(("src", src, cfg.vocab_size))
    if tgt_in is not None:
        _check_layout("tgt_in", tgt_in)
        if src is not None and src.size(0) != tgt_in.size(0):
            raise ValueError(f"src and tgt_in have different batch sizes: {src.size(0)} and "
                             f"{tgt_in.size(0)}")
        if start + tgt_in.size(1) > cfg.max_len:
            raise ValueError(f"tgt_in reaches position {start + tgt_in.size(1)}, past the "
                             f"positional table (cfg.max_len={cfg.max_len})")
        checks.append(("tgt_in", tgt_in, cfg.tgt_vocab_size))
    checks = [c for c in checks if c[1].numel()]
    if not checks:
        return
    stats = []                                     # one host sync for every value check
    for _, tokens, _ in checks:
        stats += [tokens.min(), tokens.max()]
    if src is not None and src.numel():
        stats.append((src != cfg.pad_id).any(1).all())
    values = torch.stack([s.long() for s in stats]).tolist()
    for i, (name, _, vocab) in enumerate(checks):
        lo, hi = values[2 * i], values[2 * i + 1]
        if lo < 0 or hi >= vocab:
            raise ValueError(f"{name} holds token id {hi if hi >= vocab else lo}, outside "
                             f"the vocabulary [0, {vocab})")
    if src is not None and src.numel() and not values[-1]:
        bad = int((src != cfg.pad_id).any(1).logical_not().nonzero()[0])
        raise ValueError(f"src row {bad} holds only padding: every source needs at least one "
                         f"token (the batching convention appends EOS)")


def check_memory(memory: torch.Tensor, batch: int, d_model: int) -> None:
    """The encoder output handed to a decoder: (batch, src_len, d_model)."""
    if (not isinstance(memory, torch.Tensor) or memory.dim() != 3
            or memory.size(0) != batch or memory.size(2) != d_model):
        shape = tuple(memory.shape) if isinstance(memory, torch.Tensor) else type(memory).__name__
        raise ValueError(f"memory must have shape (batch={batch}, src_len, d_model={d_model}), "
                         f"got {shape}")
