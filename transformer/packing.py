"""Padding-free position-wise layers.

Most of a Transformer's work is position-wise: the attention projections W^Q, W^K, W^V,
W^O (3.2.2), the feed-forward network (3.3), layer norm, residual dropout (5.4). Each
treats every position alike, so the padding of a batch is pure waste there. Only
attention (equation 1) mixes positions, and it needs the (batch, length) layout.

So the model keeps its activations *packed*, (n_real, d_model) with the real tokens
in row-major order, and each attention layer unpacks its queries, keys and values into
(batch, length, ...) (zeros at padding, which the masks hide), attends, and packs its
output again. With 20% padding in a batch, the encoder's position-wise layers do 20% fewer
multiply-adds (attention's own products still see the padded layout); the two copies per
tensor cost far less than that.

The outputs at real positions are those of the padded layout as long as no real position
could see a padded one there: padding the source masks away (:meth:`Packing.of_mask`)
and padding the causal decoder sees only after its real tokens
(:meth:`Packing.of_right_padded`). The model falls back to the padded layout otherwise.

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

    @classmethod
    def of_mask(cls, mask: torch.Tensor | None, batch: int, length: int) -> Packing | None:
        """The positions a key-padding mask (batch, 1, 1, length), True = may attend, lets
        anyone see; None for no mask or a mask of another shape (e.g. per query)."""
        if mask is None or mask.dtype != torch.bool or mask.shape != (batch, 1, 1, length):
            return None
        return cls(mask[:, 0, 0, :])

    @classmethod
    def of_right_padded(cls, tokens: torch.Tensor, pad_id: int) -> Packing | None:
        """The packing of causally attended token ids; None when nothing is padding, or when
        a pad comes before a real token (the causal mask would let that token see it)."""
        packing = cls.of(tokens, pad_id)
        if packing is None or not bool((packing.keep[:, 1:] <= packing.keep[:, :-1]).all()):
            return None
        return packing

    def __len__(self) -> int:
        return self.index.numel()

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, ...) -> (n_real, ...)."""
        return x.flatten(0, 1).index_select(0, self.index)

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """(n_real, ...) -> (B, L, ...), zeros at padding."""
        out = x.new_zeros(self.batch * self.length, *x.shape[1:])
        return out.index_copy_(0, self.index, x).unflatten(0, (self.batch, self.length))
