"""Section 3: the encoder-decoder Transformer (Figure 1).

    src (B, S) -> embed + position -> N x EncoderLayer -> memory (B, S, d_model)
    tgt_in (B, T) -> embed + position -> N x DecoderLayer(memory) -> linear -> logits

Inside each stack the activations skip the padding: (n_real, d_model) rows, unpacked
only inside attention (:mod:`transformer.packing`). The outputs at real positions are the
padded layout's (tests/test_packing.py); positions the source mask hides, and target
padding, come out as zeros.
"""
from __future__ import annotations

import torch
from torch import nn

from .attention import KVCache
from .config import ModelConfig
from .dropout import Dropout
from .embedding import TokenEmbedding
from .layers import DecoderLayer, EncoderLayer
from .packing import Packing
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding


class Transformer(nn.Module):
    # Position-wise layers run on real tokens only (see transformer.packing). False runs
    # them on the padded (B, L, d_model) layout, for comparison: the same real outputs.
    skip_padding: bool = True

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        d = cfg.d_model
        self.src_embed = TokenEmbedding(cfg.vocab_size, d, cfg.pad_id)
        self.tgt_embed = (self.src_embed if cfg.share_embeddings
                          else TokenEmbedding(cfg.tgt_vocab_size, d, cfg.pad_id))
        Positional = (SinusoidalPositionalEncoding if cfg.positional == "sinusoidal"
                      else LearnedPositionalEncoding)
        self.src_pos, self.tgt_pos = Positional(cfg.max_len, d), Positional(cfg.max_len, d)
        self.embed_dropout = Dropout(cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        # Pre-norm leaves the residual stream un-normalised: close each stack with a norm.
        pre = cfg.norm_position == "pre"
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        # Pre-softmax projection: shares the embedding matrix when cfg.share_embeddings.
        self.output_weight = (self.tgt_embed.weight if cfg.share_embeddings else
                              nn.Parameter(torch.empty(cfg.tgt_vocab_size, d).normal_(0, d ** -0.5)))
        self._init_weights()
        for i, layer in enumerate(self.encoder_layers):
            layer.self_attn.record_name = f"encoder.{i}.self"
        for i, layer in enumerate(self.decoder_layers):
            layer.self_attn.record_name = f"decoder.{i}.self"
            layer.cross_attn.record_name = f"decoder.{i}.cross"

    def _init_weights(self):
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    # ---------------------------------------------------------------- checks
    def _check_tokens(self, name: str, tokens, vocab_size: int) -> None:
        if not isinstance(tokens, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(tokens).__name__}")
        if tokens.dtype not in (torch.long, torch.int32, torch.int16, torch.uint8, torch.int8):
            raise TypeError(f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype}")
        if tokens.dim() != 2:
            raise ValueError(f"{name} must have shape (batch, length), got shape {tuple(tokens.shape)}")
        if tokens.size(1) > self.cfg.max_len:
            raise ValueError(f"{name} has length {tokens.size(1)}, longer than the positional "
                             f"table (cfg.max_len={self.cfg.max_len})")
        if tokens.numel():
            lo, hi = int(tokens.min()), int(tokens.max())
            if lo < 0 or hi >= vocab_size:
                bad = hi if hi >= vocab_size else lo
                raise ValueError(f"{name} holds token id {bad}, outside the vocabulary "
                                 f"[0, {vocab_size})")

    def source_mask(self, src: torch.Tensor) -> torch.Tensor | None:
        """(B, 1, 1, S) bool, True at real tokens; None when nothing is padding."""
        keep = src != self.cfg.pad_id
        return None if bool(keep.all()) else keep[:, None, None, :]

    # ------------------------------------------------------------- the model
    def encode(self, src: torch.Tensor, src_mask=None) -> torch.Tensor:
        """src (B, S) token ids -> memory (B, S, d_model)."""
        self._check_tokens("src", src, self.cfg.vocab_size)
        if src_mask is None:
            src_mask = self.source_mask(src)
        x = self.src_pos(self.src_embed(src))                           # (B, S, d_model)
        packing = Packing.of_mask(src_mask, *src.shape) if self.skip_padding else None
        if packing is not None:
            x = packing.pack(x)                                         # (n_src, d_model)
        x = self.embed_dropout(x)
        for layer in self.encoder_layers:
            x = layer(x, src_mask, packing)
        x = self.encoder_norm(x)
        return packing.unpack(x) if packing is not None else x         # zeros where masked

    def decode_states(self, tgt_in, memory, src_mask=None, cache: KVCache | None = None,
                      rows: torch.Tensor | None = None):
        """tgt_in (B, T) -> decoder output (B, T, d_model), before the projection.

        With a ``cache``, ``tgt_in`` holds only the new positions (usually one).
        ``rows``: (B, T) bool; return only those positions' states, (n, d_model) in
        row-major order (the loss wants the non-pad ones).
        """
        self._check_tokens("tgt_in", tgt_in, self.cfg.tgt_vocab_size)
        if memory.dim() != 3 or memory.size(0) != tgt_in.size(0):
            raise ValueError(f"memory must have shape (batch={tgt_in.size(0)}, src_len, "
                             f"d_model), got {tuple(memory.shape)}")
        start = cache.length if cache is not None else 0
        if start + tgt_in.size(1) > self.cfg.max_len:
            raise ValueError(f"decoding past position {self.cfg.max_len}, the length of the "
                             f"positional table (cfg.max_len)")
        y = self.tgt_pos(self.tgt_embed(tgt_in), start)                  # (B, T, d_model)
        packing = memory_packing = None
        if self.skip_padding and cache is None:
            packing = Packing.of_right_padded(tgt_in, self.cfg.pad_id)
            memory_packing = Packing.of_mask(src_mask, *memory.shape[:2])
            if memory_packing is not None:
                memory = memory_packing.pack(memory)                    # (n_src, d_model)
        if packing is not None:
            y = packing.pack(y)                                         # (n_tgt, d_model)
        y = self.embed_dropout(y)
        for i, layer in enumerate(self.decoder_layers):
            self_cache = cache.layer(i, "self") if cache is not None else None
            cross_cache = cache.layer(i, "cross") if cache is not None else None
            y = layer(y, memory, src_mask, self_cache, cross_cache, packing, memory_packing)
        if cache is not None:
            cache.length += tgt_in.size(1)
        y = self.decoder_norm(y)
        if rows is not None and packing is not None and torch.equal(rows, packing.keep):
            return y                                                    # already (n, d)
        y = packing.unpack(y) if packing is not None else y             # (B, T, d_model)
        return y if rows is None else y[rows]

    def project(self, states: torch.Tensor) -> torch.Tensor:
        """Pre-softmax linear map: (..., d_model) -> logits (..., tgt_vocab)."""
        return states @ self.output_weight.t()

    def decode(self, tgt_in, memory, src_mask=None, cache: KVCache | None = None):
        """tgt_in (B, T) -> logits (B, T, tgt_vocab)."""
        return self.project(self.decode_states(tgt_in, memory, src_mask, cache))

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt_in (B, T), both padded with cfg.pad_id -> logits (B, T, V)."""
        self._check_tokens("src", src, self.cfg.vocab_size)
        self._check_tokens("tgt_in", tgt_in, self.cfg.tgt_vocab_size)
        if src.size(0) != tgt_in.size(0):
            raise ValueError(f"src and tgt_in have different batch sizes: {src.size(0)} and "
                             f"{tgt_in.size(0)}")
        src_mask = self.source_mask(src)
        return self.decode(tgt_in, self.encode(src, src_mask), src_mask)

    def num_parameters(self) -> int:
        """Trainable parameters, each shared matrix counted once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
