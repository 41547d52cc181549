"""Section 3.2: attention, in the paper's plain form.

* :func:`scaled_dot_product_attention` is equation (1), written out.
* :class:`ScaledDotProductAttention` is that function as a module (it owns the
  attention-dropout rate), the one place a multi-head layer computes equation (1).
* :class:`MultiHeadAttention` is section 3.2.2: project, split into heads, attend,
  concatenate, project.
* :func:`causal_mask` is the decoder's "no peeking ahead" mask (3.2.3).

Masks are boolean, broadcastable to (batch, heads, q_len, k_len), ``True`` = *may
attend* (the convention of ``F.scaled_dot_product_attention``).

The fast form (fused kernel, padding-free rows, KV cache) lives in :mod:`transformer.fast`;
it uses these modules' parameters and is tested equal to them. :mod:`transformer.recording`
records every layer's weights for the book's figures.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p: float = 0.0):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V   -- equation (1).

    q: (..., q_len, d_k), k: (..., k_len, d_k), v: (..., k_len, d_v);
    mask: bool, broadcastable to (..., q_len, k_len), True = keep.
    Returns ``(output (..., q_len, d_v), weights (..., q_len, k_len))``.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)          # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:  # a query with no visible key gets zeros, not NaN
        weights = weights.nan_to_num(0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights                                 # (..., q_len, d_v)


def causal_mask(q_len: int, k_len: int | None = None, device=None) -> torch.Tensor:
    """(q_len, k_len) bool mask: query i sees keys 0..i + (k_len - q_len) (section 3.2.3).

    With ``k_len - q_len`` earlier positions already decoded, the queries are the last ones.
    """
    k_len = q_len if k_len is None else k_len
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(k_len - q_len)


class ScaledDotProductAttention(nn.Module):
    """Equation (1) for every head at once; ``dropout`` on the weights in training."""

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v, mask=None):          # (B, h, L, d) each
        return scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)   -- section 3.2.2.

    The h projections of each kind are stored as one (d_model, h*d_k) linear map, which
    is the same as h separate maps side by side and costs one matrix multiply.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.d_k, self.d_v = cfg.n_heads, cfg.d_k, cfg.d_v
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_k)   # W^Q of every head
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_k)   # W^K
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_v)   # W^V
        self.out_proj = nn.Linear(cfg.n_heads * cfg.d_v, cfg.d_model)  # W^O
        self.attention = ScaledDotProductAttention(cfg.attention_dropout)

    def split_heads(self, x, d_head):
        """(B, L, h*d_head) -> (B, h, L, d_head): head i owns columns i*d_head onwards."""
        return x.unflatten(-1, (self.n_heads, d_head)).transpose(1, 2)

    def merge_heads(self, x):
        """(B, h, L, d) -> (B, L, h*d): Concat(head_1, ..., head_h)."""
        return x.transpose(1, 2).flatten(2)

    def forward(self, query, key, value, visibility=None):
        """query (B, q_len, d_model), key/value (B, k_len, d_model) -> (B, q_len, d_model).

        ``visibility``: which keys each query may attend to, a bool mask broadcastable to
        (B, h, q_len, k_len), True = visible (None: all). The fast form's attention takes a
        :class:`~transformer.fast.attention.Layout` here instead."""
        q = self.split_heads(self.q_proj(query), self.d_k)     # (B, h, q_len, d_k)
        k = self.split_heads(self.k_proj(key), self.d_k)       # (B, h, k_len, d_k)
        v = self.split_heads(self.v_proj(value), self.d_v)     # (B, h, k_len, d_v)
        heads, _ = self.attention(q, k, v, visibility)         # (B, h, q_len, d_v)
        return self.out_proj(self.merge_heads(heads))          # Concat(heads) W^O
