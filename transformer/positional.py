"""Section 3.5: positional encoding.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Sine on even dimensions, cosine on odd ones, interleaved exactly as written. The learned
alternative ("we also experimented with using learned positional embeddings [9] instead,
and found that the two versions produced nearly identical results", Table 3 row E) is
:class:`LearnedPositionalEncoding`.
"""
from __future__ import annotations

import torch
from torch import nn


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The (max_len, d_model) table of section 3.5, in float32."""
    if max_len <= 0 or d_model <= 0 or d_model % 2:
        raise ValueError(f"sinusoidal_encoding needs max_len > 0 and an even d_model > 0, "
                         f"got max_len={max_len}, d_model={d_model}")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]           # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)            # (d_model/2,)
    angle = pos / 10000.0 ** (two_i / d_model)                          # (max_len, d/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed table; nothing to learn. ``start`` offsets positions (KV cache)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:   # x: (B, L, d)
        return x + self.table[start:start + x.size(1)].to(x.dtype)


class LearnedPositionalEncoding(nn.Module):
    """One learned d_model vector per position (Table 3, row E)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.table = nn.Parameter(torch.empty(max_len, d_model).normal_(0.0, d_model ** -0.5))

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        return x + self.table[start:start + x.size(1)].to(x.dtype)
