"""Attention recording: every layer's and head's weights, for the book's figures.

``with record_attention(model) as rec: model(src, tgt_in)`` swaps each attention
sub-layer's kernel (the plain :class:`~transformer.attention.ScaledDotProductAttention`
or the fast :class:`~transformer.fast.attention.FusedAttention`) for a
:class:`RecordingAttention`, which computes equation (1) written out and keeps its
weights; the kernels are put back afterwards. Outputs are unchanged (tests/test_fast.py).
The export's graphs return these weights too (:mod:`transformer.tools.export`), for the
page's heatmaps.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention


class AttentionRecorder:
    """Attention weights by sub-layer name, filled during forward passes.

    ``weights["encoder.0.self"]`` is a (batch, heads, q_len, k_len) tensor; names are
    ``encoder.{i}.self``, ``decoder.{i}.self`` and ``decoder.{i}.cross`` in a model (the
    module's path elsewhere; ``"attention"`` for a lone layer). Repeated calls
    (incremental decoding) are concatenated along the query axis. Rows of padded query
    positions are not meaningful.
    """

    def __init__(self):
        self.weights: dict[str, torch.Tensor] = {}

    def add(self, name: str, weights: torch.Tensor) -> None:
        """Store ``weights`` (B, h, q, k) under ``name``, after earlier steps' rows."""
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
        if not names:
            raise KeyError(f"no recorded attention for {part!r}; recorded: {sorted(self.weights)}")
        return torch.stack([self.weights[n] for n in names])


class RecordingAttention(nn.Module):
    """Equation (1) written out, its weights handed to a recorder under ``name``."""

    def __init__(self, recorder: AttentionRecorder, name: str, dropout: float):
        super().__init__()
        self.recorder, self.name, self.dropout = recorder, name, dropout

    def forward(self, q, k, v, mask=None, causal: bool = False):
        if causal:
            no_peeking = causal_mask(q.size(-2), k.size(-2), q.device)
            mask = no_peeking if mask is None else mask & no_peeking
        out, weights = scaled_dot_product_attention(q, k, v, mask,
                                                    self.dropout if self.training else 0.0)
        self.recorder.add(self.name, weights)
        return out, weights


def record_name(path: str) -> str:
    """``encoder_layers.0.self_attn`` -> ``encoder.0.self`` (and the decoder's likewise)."""
    parts = path.split(".")
    if len(parts) == 3 and parts[0] in ("encoder_layers", "decoder_layers"):
        return f"{parts[0].split('_')[0]}.{parts[1]}.{parts[2].removesuffix('_attn')}"
    return path or "attention"


@contextmanager
def record_attention(model: nn.Module):
    """Record every :class:`MultiHeadAttention` in ``model`` (or ``model`` itself) during
    the ``with`` block; yields the :class:`AttentionRecorder`."""
    recorder = AttentionRecorder()
    layers = [(path, m) for path, m in model.named_modules() if isinstance(m, MultiHeadAttention)]
    if not layers:
        raise TypeError(f"record_attention: {type(model).__name__} holds no MultiHeadAttention")
    kernels = [m.attention for _, m in layers]
    for (path, layer), kernel in zip(layers, kernels):
        recording = RecordingAttention(recorder, record_name(path), kernel.dropout)
        layer.attention = recording.train(kernel.training)
    try:
        yield recorder
    finally:
        for (_, layer), kernel in zip(layers, kernels):
            layer.attention = kernel
