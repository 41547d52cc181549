"""Section 3.1: encoder and decoder layers.

"We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))"
and (5.4) "We apply dropout to the output of each sub-layer, before it is added to the
sub-layer input and normalized."  ``norm_position="pre"`` switches to the modern
x + Sublayer(LayerNorm(x)) for study.
"""
from __future__ import annotations

from torch import nn

from .attention import MultiHeadAttention
from .config import ModelConfig
from .dropout import Dropout
from .feedforward import PositionwiseFeedForward


class Residual(nn.Module):
    """Post-norm: LayerNorm(x + Dropout(f(x))).  Pre-norm: x + Dropout(f(LayerNorm(x)))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.dropout)
        self.pre_norm = cfg.norm_position == "pre"

    def forward(self, x, sublayer):
        if self.pre_norm:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each wrapped in :class:`Residual`."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg)
        self.attn_block, self.ff_block = Residual(cfg), Residual(cfg)

    def forward(self, x, src_mask=None, packing=None):   # x: (B, S, d_model) or (n, d_model)
        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask=src_mask, packing=packing,
                                                        kv_packing=packing))
        return self.ff_block(x, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the encoder output, feed-forward (3.1).

    The self-attention is causal: "masking ... ensures that the predictions for
    position i can depend only on the known outputs at positions less than i". Targets
    are right-padded, so the causal mask alone already hides padding from every real
    position; no separate target padding mask is needed.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg)
        self.cross_attn = MultiHeadAttention(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg)
        self.self_block, self.cross_block, self.ff_block = (Residual(cfg), Residual(cfg),
                                                            Residual(cfg))

    def forward(self, y, memory, memory_mask=None, self_cache=None, cross_cache=None,
                packing=None, memory_packing=None):
        # y: (B, T, d_model) or packed (n_tgt, d); memory: (B, S, d_model) or (n_src, d)
        y = self.self_block(y, lambda h: self.self_attn(h, h, h, causal=True, cache=self_cache,
                                                        packing=packing, kv_packing=packing))
        y = self.cross_block(y, lambda h: self.cross_attn(h, memory, memory, mask=memory_mask,
                                                          cache=cross_cache, static_kv=True,
                                                          packing=packing,
                                                          kv_packing=memory_packing))
        return self.ff_block(y, self.feed_forward)
