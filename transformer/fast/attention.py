"""Fast multi-head attention: the plain layer's parameters, run faster.

:class:`FastMultiHeadAttention` is :class:`transformer.attention.MultiHeadAttention` (same
projections, same heads) with three additions, each tested equal to the plain layer
(tests/test_fast.py):

* the fused kernel, :class:`FusedAttention`: PyTorch's ``F.scaled_dot_product_attention``
  computes equation (1) without keeping the (q_len, k_len) weights, and the decoder's
  causal mask becomes a flag instead of a tensor;
* padding-free rows: queries or keys/values may come packed, (n_real, d_model)
  (:mod:`transformer.fast.packing`); the projections run on real tokens only;
* a KV cache for incremental decoding (:mod:`transformer.fast.kv_cache`).

What a call needs beyond the plain layer's mask travels in a :class:`Layout`, passed as
the ``visibility`` of the plain layers: the encoder and decoder layers are the plain ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..attention import MultiHeadAttention, causal_mask
from .kv_cache import AttentionCache
from .packing import Packing, pack, unpack


class FusedAttention(nn.Module):
    """Equation (1) through ``F.scaled_dot_product_attention``: the same maths in one
    kernel (flash or memory-efficient on a GPU), no weights returned."""

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v, mask=None, causal: bool = False):
        p = self.dropout if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                              is_causal=causal), None


@dataclass
class Layout:
    """How one :class:`FastMultiHeadAttention` call sees its inputs.

    ``mask``: the plain layer's bool mask (or None); ``causal``: add the causal mask;
    ``query_rows`` / ``key_rows``: the :class:`Packing` of packed query / key-value
    inputs (None: padded (B, L, d_model)); ``cache``: this sub-layer's KV cache.
    """

    mask: torch.Tensor | None = None
    causal: bool = False
    query_rows: Packing | None = None
    key_rows: Packing | None = None
    cache: AttentionCache | None = None


class FastMultiHeadAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` with the fused kernel, packed rows and a KV cache."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.attention = FusedAttention(cfg.attention_dropout)

    def forward(self, query, key, value, visibility=None):
        """As the plain layer; ``visibility`` is a :class:`Layout`, or a bool mask (a
        Layout of that mask alone)."""
        layout = visibility if isinstance(visibility, Layout) else Layout(visibility)
        q = self.split_heads(unpack(self.q_proj(query), layout.query_rows), self.d_k)

        def keys_values():                                         # (B, h, k_len, d_k|d_v)
            return (self.split_heads(unpack(self.k_proj(key), layout.key_rows), self.d_k),
                    self.split_heads(unpack(self.v_proj(value), layout.key_rows), self.d_v))

        k, v = layout.cache.keys_values(keys_values) if layout.cache else keys_values()
        mask, causal = layout.mask, layout.causal
        if causal and q.size(2) == 1:                                # one query sees all
            causal = False
        if causal and (mask is not None or q.size(2) != k.size(2)):
            # cached keys: the queries are the last q_len positions
            no_peeking = causal_mask(q.size(2), k.size(2), q.device)
            mask, causal = (no_peeking if mask is None else mask & no_peeking), False
        heads, _ = self.attention(q, k, v, mask, causal)                # (B, h, q_len, d_v)
        return self.out_proj(pack(self.merge_heads(heads), layout.query_rows))
