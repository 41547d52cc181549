"""The fast form of the Transformer: the plain model's parameters, run faster.

:class:`FastTransformer` is :class:`transformer.model.Transformer` (a subclass: the same
modules, parameter names and checkpoints) with the speed-ups of this package plugged in:

* :class:`~transformer.fast.attention.FastMultiHeadAttention`: the fused kernel;
* padding-free rows (:mod:`transformer.fast.packing`): inside each stack the activations
  are the real tokens only, (n_real, d_model), and the encoder's packed output goes
  straight to the decoder's cross-attention;
* the KV cache (:mod:`transformer.fast.kv_cache`): ``decode(..., cache=...)`` runs only the
  new positions;
* :class:`~transformer.fast.dropout.CheapDropout` in place of every ``nn.Dropout``.

The encoder and decoder layers are the plain ones: what the fast attention needs travels
in a :class:`~transformer.fast.attention.Layout`, their ``visibility``.
tests/test_fast.py proves outputs and gradients equal to the plain model's (post- and
pre-norm); the trainer and the command line use this form.
"""
from __future__ import annotations

import torch

from ..model import Transformer
from ..validation import check_memory, check_tokens
from .attention import FastMultiHeadAttention, Layout
from .dropout import use_cheap_dropout
from .kv_cache import KVCache
from .packing import Packing, pack, unpack


class FastTransformer(Transformer):
    """``FastTransformer(cfg)``: the same model as ``Transformer(cfg)`` (same initial
    weights for the same seed), faster. ``skip_padding=False`` keeps the padded layout."""

    attention = FastMultiHeadAttention

    def __init__(self, cfg, skip_padding: bool = True):
        super().__init__(cfg)
        self.skip_padding = skip_padding
        use_cheap_dropout(self)

    # ---------------------------------------------------------------- stacks
    def encode_rows(self, src: torch.Tensor, src_mask: torch.Tensor):
        """The encoder stack on real tokens: (memory rows (n_src, d_model), their Packing),
        or ((B, S, d_model), None) on the padded layout."""
        rows = Packing.of_mask(src_mask) if self.skip_padding else None
        x = self.embed_dropout(pack(self.src_pos(self.src_embed(src)), rows))   # (n_src, d)
        layout = Layout(src_mask, query_rows=rows, key_rows=rows)
        for layer in self.encoder_layers:
            x = layer(x, layout)
        return self.encoder_norm(x), rows

    def decode_rows(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
                    memory_rows: Packing | None = None, cache: KVCache | None = None):
        """The decoder stack: (states, their Packing or None), like :meth:`encode_rows`.

        ``memory`` is (B, S, d_model), or packed rows with ``memory_rows`` their packing.
        With a ``cache``, ``tgt_in`` holds only the new positions (usually one).
        """
        start = cache.length if cache is not None else 0
        if start + tgt_in.size(1) > self.cfg.max_len:
            raise ValueError(f"decoding past position {self.cfg.max_len}, the length of the "
                             f"positional table (cfg.max_len)")
        rows = None
        if self.skip_padding and cache is None:
            rows = Packing.of_right_padded(tgt_in, self.cfg.pad_id)
        y = self.embed_dropout(pack(self.tgt_pos(self.tgt_embed(tgt_in), start), rows))
        for i, layer in enumerate(self.decoder_layers):
            self_cache = cache.layer(i, "self") if cache is not None else None
            cross_cache = cache.layer(i, "cross") if cache is not None else None
            y = layer(y, memory, Layout(None, True, rows, rows, self_cache),
                      Layout(src_mask, False, rows, memory_rows, cross_cache))
        if cache is not None:
            cache.length += tgt_in.size(1)
        return self.decoder_norm(y), rows

    # ------------------------------------------------- the plain interface
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """As :meth:`Transformer.encode`: memory (B, S, d_model), zeros at padding."""
        memory, rows = self.encode_rows(src, src_mask)
        return unpack(memory, rows)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
               cache: KVCache | None = None) -> torch.Tensor:
        """As :meth:`Transformer.decode` (zeros at target padding); with a ``cache``, only
        the new positions ``tgt_in`` are computed."""
        check_memory(memory, tgt_in.size(0), self.cfg.d_model)
        states, rows = self.decode_rows(tgt_in, memory, src_mask, cache=cache)
        return unpack(states, rows)

    def both_stacks(self, src: torch.Tensor, tgt_in: torch.Tensor):
        """Encoder then decoder, the memory kept packed between them: (decoder states,
        their Packing or None), as :meth:`decode_rows`."""
        src_mask = self.source_mask(src)
        memory, memory_rows = self.encode_rows(src, src_mask)
        return self.decode_rows(tgt_in, memory, src_mask, memory_rows)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """As :meth:`Transformer.forward`; the memory stays packed between the stacks."""
        check_tokens(self.cfg, src, tgt_in)
        states, rows = self.both_stacks(src, tgt_in)
        return self.project(unpack(states, rows))

    def target_states(self, src: torch.Tensor, tgt_in: torch.Tensor,
                      is_target: torch.Tensor) -> torch.Tensor:
        """Decoder states at the positions ``is_target`` (B, T) marks, (n, d_model) in
        row-major order: the training loss projects only the non-pad targets."""
        states, rows = self.both_stacks(src, tgt_in)
        if rows is not None and torch.equal(rows.is_real, is_target):
            return states                              # packed rows are those positions
        return unpack(states, rows)[is_target]


def compile_layers(model: Transformer) -> Transformer:
    """``torch.compile`` each encoder and decoder layer in place, with dynamic shapes.

    A whole-model compile recompiles for every new batch shape, and the packing's
    data-dependent sizes (``nonzero``) break its graph; a layer sees (n_real, d_model) rows
    whatever the batch, so with the token count symbolic one compilation serves every
    batch. Packing, the loss and the optimizer stay eager. Parameters and checkpoints are
    unchanged (``nn.Module.compile`` keeps the module). Returns ``model``.
    """
    for layer in (*model.encoder_layers, *model.decoder_layers):
        layer.compile(dynamic=True)
    return model


def fast_form(model: Transformer) -> FastTransformer:
    """A :class:`FastTransformer` with ``model``'s configuration, weights, device and mode."""
    return _convert(model, FastTransformer)


def plain_form(model: Transformer) -> Transformer:
    """A plain :class:`~transformer.model.Transformer` with ``model``'s weights and mode."""
    return _convert(model, Transformer)


def _convert(model: Transformer, cls) -> Transformer:
    with torch.random.fork_rng(devices=[]):      # building draws initial weights: not ours
        other = cls(model.cfg)
    other.load_state_dict(model.state_dict())
    return other.to(next(model.parameters()).device).train(model.training)
