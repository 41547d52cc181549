"""Section 3.1: encoder and decoder layers.

"We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))"
and (5.4) "We apply dropout to the output of each sub-layer, before it is added to the
sub-layer input and normalized."  ``norm_position="pre"`` switches to the modern
x + Sublayer(LayerNorm(x)) for study.

Every operation here but attention works on each position alone, so the layers run
unchanged on (B, L, d_model) tensors or on packed rows (n, d_model) (:mod:`transformer.fast`).
``attention`` is the class of the attention sub-layers: :class:`MultiHeadAttention`, or
the fast form's subclass with the same parameters.
"""
from __future__ import annotations

from torch import nn

from .attention import MultiHeadAttention
from .config import ModelConfig
from .feedforward import PositionwiseFeedForward


class Residual(nn.Module):
    """Post-norm: LayerNorm(x + Dropout(f(x))).  Pre-norm: x + Dropout(f(LayerNorm(x)))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        self.pre_norm = cfg.norm_position == "pre"

    def forward(self, x, sublayer):
        if self.pre_norm:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each wrapped in :class:`Residual`.

    ``visibility`` hides the source padding: what the attention takes (see
    :meth:`MultiHeadAttention.forward <transformer.attention.MultiHeadAttention.forward>`).
    """

    def __init__(self, cfg: ModelConfig, attention=MultiHeadAttention):
        super().__init__()
        self.self_attn = attention(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg)
        self.attn_block, self.ff_block = Residual(cfg), Residual(cfg)

    def forward(self, x, visibility=None):                  # x: (B, S, d_model)
        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, visibility))
        return self.ff_block(x, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the encoder output, feed-forward (3.1).

    ``self_visibility`` is the causal mask: "masking ... ensures that the predictions for
    position i can depend only on the known outputs at positions less than i". Targets
    are right-padded, so it alone already hides padding from every real position.
    ``memory_visibility`` hides the source padding.
    """

    def __init__(self, cfg: ModelConfig, attention=MultiHeadAttention):
        super().__init__()
        self.self_attn = attention(cfg)
        self.cross_attn = attention(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg)
        self.self_block, self.cross_block, self.ff_block = (Residual(cfg), Residual(cfg),
                                                            Residual(cfg))

    def forward(self, y, memory, self_visibility=None, memory_visibility=None):
        # y: (B, T, d_model), memory: (B, S, d_model)
        y = self.self_block(y, lambda h: self.self_attn(h, h, h, self_visibility))
        y = self.cross_block(y, lambda h: self.cross_attn(h, memory, memory,
                                                           memory_visibility))
        return self.ff_block(y, self.feed_forward)
