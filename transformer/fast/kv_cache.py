"""The KV cache: incremental decoding computes one new position per step.

Greedy and beam search (section 6.1) extend the output one token at a time. Without a
cache each step runs the decoder over the whole prefix again; with one, each decoder
layer keeps the keys and values it has already computed: self-attention appends the new
position's, cross-attention computes the memory's once. The new query attends to all of
them, which is exactly what row t of the full causal forward pass computes
(tests/test_fast.py; ``benchmarks/cpu/decode_speed.py`` measures the saving).
"""
from __future__ import annotations

import torch


class AttentionCache:
    """Keys and values (B, h, t, d) of one attention sub-layer across decoding steps.

    ``static``: cross-attention, whose keys and values (the memory's) never change.
    """

    def __init__(self, static: bool):
        self.static = static
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def keys_values(self, compute):
        """The keys and values to attend to; ``compute()`` gives the new positions' ones."""
        if self.static and self.k is not None:
            return self.k, self.v
        k, v = compute()
        if self.k is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v


class KVCache:
    """Every decoder layer's :class:`AttentionCache` and the number of decoded positions.

    ``reorder(index)`` keeps rows ``index`` (finished sentences leave; beam search
    re-ranks hypotheses).
    """

    def __init__(self):
        self.layers: dict[tuple[int, str], AttentionCache] = {}
        self.length = 0

    def layer(self, index: int, kind: str) -> AttentionCache:
        """The cache of decoder layer ``index``'s ``"self"`` or ``"cross"`` attention."""
        if (index, kind) not in self.layers:
            self.layers[index, kind] = AttentionCache(static=kind == "cross")
        return self.layers[index, kind]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the batch rows ``index`` of every layer's keys and values, in that order."""
        for entry in self.layers.values():
            if entry.k is not None:
                entry.k, entry.v = entry.k.index_select(0, index), entry.v.index_select(0, index)
