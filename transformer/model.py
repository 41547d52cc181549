"""Section 3: the encoder-decoder Transformer (Figure 1), in the paper's plain form.

    src (B, S) -> embed + position -> N x EncoderLayer -> memory (B, S, d_model)
    tgt_in (B, T) -> embed + position -> N x DecoderLayer(memory) -> linear -> logits

:class:`transformer.fast.FastTransformer` is the same model, with the same parameters and
checkpoints, run faster (padding-free rows, fused kernels, a KV cache for decoding); the
trainer and the command line use it, and tests/test_fast.py proves it equal to this one.
"""
from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention, causal_mask
from .config import ModelConfig
from .embedding import TokenEmbedding
from .layers import DecoderLayer, EncoderLayer
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .validation import check_tokens


class Transformer(nn.Module):
    """The model of section 3: ``Transformer(ModelConfig.base())`` is the base model."""

    attention = MultiHeadAttention     # the attention sub-layers' class (the fast form's differs)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        d = cfg.d_model
        self.src_embed = TokenEmbedding(cfg.vocab_size, d)
        self.tgt_embed = (self.src_embed if cfg.share_embeddings
                          else TokenEmbedding(cfg.tgt_vocab_size, d))
        Positional = (SinusoidalPositionalEncoding if cfg.positional == "sinusoidal"
                      else LearnedPositionalEncoding)
        self.src_pos, self.tgt_pos = Positional(cfg.max_len, d), Positional(cfg.max_len, d)
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg, self.attention)
                                            for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg, self.attention)
                                            for _ in range(cfg.n_decoder_layers))
        # Pre-norm leaves the residual stream un-normalised: close each stack with a norm.
        pre = cfg.norm_position == "pre"
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if pre else nn.Identity()
        # Pre-softmax projection: shares the embedding matrix when cfg.share_embeddings.
        self.output_weight = (self.tgt_embed.weight if cfg.share_embeddings else nn.Parameter(
            torch.empty(cfg.tgt_vocab_size, d).normal_(0, d ** -0.5)))
        self._init_weights()

    def _init_weights(self):
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def source_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, S) bool: True at real source tokens, the keys a query may attend to."""
        return (src != self.cfg.pad_id)[:, None, None, :]

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """src (B, S) token ids -> memory (B, S, d_model): the encoder stack (3.1)."""
        x = self.embed_dropout(self.src_pos(self.src_embed(src)))         # (B, S, d_model)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor,
               src_mask: torch.Tensor) -> torch.Tensor:
        """tgt_in (B, T) -> decoder output (B, T, d_model): the decoder stack (3.1)."""
        y = self.embed_dropout(self.tgt_pos(self.tgt_embed(tgt_in)))      # (B, T, d_model)
        no_peeking = causal_mask(tgt_in.size(1), device=tgt_in.device)    # (T, T)
        for layer in self.decoder_layers:
            y = layer(y, memory, no_peeking, src_mask)
        return self.decoder_norm(y)

    def project(self, states: torch.Tensor) -> torch.Tensor:
        """Pre-softmax linear map (3.4): (..., d_model) -> logits (..., tgt_vocab)."""
        return states @ self.output_weight.t()

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt_in (B, T), both right-padded with cfg.pad_id -> logits (B, T, V)."""
        check_tokens(self.cfg, src, tgt_in)
        src_mask = self.source_mask(src)
        return self.project(self.decode(tgt_in, self.encode(src, src_mask), src_mask))

    def num_parameters(self) -> int:
        """Trainable parameters, each shared matrix counted once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
