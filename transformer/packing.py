"""Padding-free position-wise layers.

Most of a Transformer's work is position-wise: the attention projections W^Q, W^K, W^V,
W^O (3.2.2), the feed-forward network (3.3), layer norm, residual dropout (5.4). Each
treats every position alike, so the padding of a batch is pure waste there. Only
attention (equation 1) mixes positions, and it needs the (batch, length) layout.

So the model keeps its activations *packed*, (n_real, d_model) with the real tokens
in row-major order, and each attention layer unpacks its queries, keys and values into
(batch, length, ...) (zeros at padding, which the masks hide), attends, and packs its
output again. With 20% padding in a batch, the encoder does 20% fewer multiply-adds;
the two copies per tensor cost far less than that.

    keep (B, L) bool ──► Packing.index (n_real,)
    pack:   (B, L, d) ─► (n_real, d)          unpack: (n_real, d) ─► (B, L, d)
"""
from __future__ import annotations

import torch


class Packing:
    """Where the real tokens of a padded (batch, length) layout are."""

    def __init__(self, keep: torch.Tensor):
        if keep.dim() != 2 or keep.dtype != torch.bool:
            raise ValueError(f"keep must be a (batch, length) bool tensor, got "
                             f"{tuple(keep.shape)} {keep.dtype}")
        self.keep, (self.batch, self.length) = keep, keep.shape
        self.index = keep.flatten().nonzero().squeeze(1)               # (n_real,)

    @classmethod
    def of(cls, tokens: torch.Tensor, pad_id: int) -> Packing | None:
        """The packing of a batch of token ids; None when nothing is padding."""
        keep = tokens != pad_id
        return None if bool(keep.all()) else cls(keep)

    def __len__(self) -> int:
        return self.index.numel()

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, ...) -> (n_real, ...)."""
        return x.flatten(0, 1).index_select(0, self.index)

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """(n_real, ...) -> (B, L, ...), zeros at padding."""
        out = x.new_zeros(self.batch * self.length, *x.shape[1:])
        return out.index_copy_(0, self.index, x).unflatten(0, (self.batch, self.length))
