"""Section 3.2: attention.

* :func:`scaled_dot_product_attention` is equation (1), written out so that it can
  return the attention weights the book draws.
* :class:`MultiHeadAttention` is section 3.2.2. Its normal path calls PyTorch's fused
  ``F.scaled_dot_product_attention`` (same maths, no weights materialised); it switches
  to the explicit path only while an :class:`AttentionRecorder` is attached.
* :class:`KVCache` keeps each decoder layer's keys and values so that incremental
  decoding computes one new position per step.

Masks follow ``F.scaled_dot_product_attention``: a boolean ``mask`` broadcastable to
(batch, heads, q_len, k_len) where ``True`` means *may attend*.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

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
    """(q_len, k_len) bool mask: query i sees keys 0..i + (k_len - q_len).

    With a cache of ``k_len - q_len`` earlier positions, the new queries sit at the end.
    """
    k_len = q_len if k_len is None else k_len
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(k_len - q_len)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)   -- section 3.2.2.

    The h projections of each kind are stored as one (d_model, h*d_k) linear map, which
    is the same as h separate maps side by side and costs one matrix multiply.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.d_k, self.d_v = cfg.n_heads, cfg.d_k, cfg.d_v
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_k)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_k)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_v)
        self.out_proj = nn.Linear(cfg.n_heads * cfg.d_v, cfg.d_model)
        self.dropout_p = cfg.attention_dropout
        self.recorder: AttentionRecorder | None = None   # set by record_attention()
        self.record_name = ""                            # e.g. "encoder.0.self"

    def _split_heads(self, x, d_head):                  # (B, L, h*d) -> (B, h, L, d)
        return x.unflatten(-1, (self.n_heads, d_head)).transpose(1, 2)

    def forward(self, query, key, value, mask=None, causal=False, cache=None, static_kv=False,
                packing=None, kv_packing=None):
        """query: (B, q_len, d_model); key/value: (B, k_len, d_model).

        mask: bool (B, 1|h, 1|q_len, k_len), True = attend. ``causal=True`` adds the
        decoder's "no peeking ahead" mask (3.2.3). ``cache``: a dict this layer owns
        in a :class:`KVCache`; self-attention appends the new keys/values to it,
        cross-attention (``static_kv=True``) computes them once from the memory.
        ``packing`` / ``kv_packing``: the query / key-value inputs come packed,
        (n_real, d_model) (see :mod:`transformer.packing`); so does the output.
        """
        q = self.q_proj(query)
        if packing is not None:
            q = packing.unpack(q)                                    # (n, .) -> (B, q_len, .)
        q = self._split_heads(q, self.d_k)                           # (B, h, q_len, d_k)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self.k_proj(key), self.v_proj(value)
            if kv_packing is not None:
                k, v = kv_packing.unpack(k), kv_packing.unpack(v)    # (B, k_len, .)
            k = self._split_heads(k, self.d_k)                       # (B, h, k_len, d_k)
            v = self._split_heads(v, self.d_v)                       # (B, h, k_len, d_v)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        q_len, k_len = q.size(2), k.size(2)
        if causal and (q_len != k_len or mask is not None or self.recorder is not None):
            # With cached keys the queries are the last q_len positions; one query
            # sees every cached key, so no mask is needed.
            cm = causal_mask(q_len, k_len, q.device) if q_len > 1 else None
            mask = cm if mask is None else (mask & cm if cm is not None else mask)
            causal = False
        dropout_p = self.dropout_p if self.training else 0.0
        if self.recorder is not None:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
            self.recorder.add(self.record_name, weights)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                 dropout_p=dropout_p, is_causal=causal)
        out = out.transpose(1, 2).flatten(2)                        # (B, q_len, h*d_v)
        if packing is not None:
            out = packing.pack(out)                                 # (n, h*d_v)
        return self.out_proj(out)                                   # (B, q_len | n, d_model)


class KVCache:
    """Per-layer keys and values for incremental decoding.

    ``layer(i, "self")`` / ``layer(i, "cross")`` return the dict a
    :class:`MultiHeadAttention` reads and fills; ``reorder(index)`` follows beam search
    when hypotheses are re-ranked; ``length`` counts the decoded positions.
    """

    def __init__(self):
        self.layers: dict[tuple[int, str], dict] = {}
        self.length = 0

    def layer(self, index: int, kind: str) -> dict:
        return self.layers.setdefault((index, kind), {})

    def reorder(self, index: torch.Tensor) -> None:
        for entry in self.layers.values():
            for name in list(entry):
                entry[name] = entry[name].index_select(0, index)


class AttentionRecorder:
    """Collects attention weights by module name during a forward pass.

    ``weights["encoder.0.self"]`` is a (batch, heads, q_len, k_len) tensor; names are
    ``encoder.{i}.self``, ``decoder.{i}.self`` and ``decoder.{i}.cross``. Repeated calls
    (incremental decoding) are concatenated along the query axis. Rows of padded query
    positions are not meaningful (the model skips padding, so their queries are zero).
    """

    def __init__(self):
        self.weights: dict[str, torch.Tensor] = {}

    def add(self, name: str, weights: torch.Tensor) -> None:
        weights = weights.detach()
        if name in self.weights:
            prev = self.weights[name]
            if prev.size(-1) < weights.size(-1):   # keys grew by one step: pad old rows
                prev = F.pad(prev, (0, weights.size(-1) - prev.size(-1)))
            weights = torch.cat([prev, weights], dim=-2)
        self.weights[name] = weights

    def stacked(self, part: str) -> torch.Tensor:
        """(layers, batch, heads, q_len, k_len) for part in {"encoder.self",
        "decoder.self", "decoder.cross"}."""
        stack, kind = part.split(".")
        names = sorted((n for n in self.weights if n.startswith(stack + ".")
                        and n.endswith("." + kind)), key=lambda n: int(n.split(".")[1]))
        return torch.stack([self.weights[n] for n in names])


@contextmanager
def record_attention(model: nn.Module):
    """``with record_attention(model) as rec: model(src, tgt_in)`` fills ``rec.weights``.

    Attaches a recorder to every :class:`MultiHeadAttention`; the modules then take
    the explicit path (same output) and the normal path is untouched afterwards.
    """
    recorder = AttentionRecorder()
    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for m in modules:
        m.recorder = recorder
    try:
        yield recorder
    finally:
        for m in modules:
            m.recorder = None
