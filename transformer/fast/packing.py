"""Padding-free rows: the position-wise layers skip padding.

Embeddings, layer norms, the feed-forward network, residual additions, dropout and
every attention projection act on each position alone, so inside each stack the
activations can be the real tokens only, packed into (n_real, d_model). Only the
attention kernel needs the (batch, heads, length, d) layout; the fast attention unpacks
its projected queries, keys and values (zeros at padding), attends, and packs its output
again (:class:`transformer.fast.attention.FastMultiHeadAttention`).

That is exact, not an approximation, when no real token attends to padding: the source
is packed by its key-padding mask (:meth:`Packing.of_mask`), and the target, under the
causal mask, only when every row is right-padded (:meth:`Packing.of_right_padded`). The
fast model falls back to the padded layout otherwise. tests/test_fast.py checks the loss
and every gradient against the plain model; chapter 6 measures the work saved.

    is_real (B, L) bool ──► Packing.index (n_real,)
    pack:   (B, L, d) ─► (n_real, d)          unpack: (n_real, d) ─► (B, L, d)
"""
from __future__ import annotations

import torch


class Packing:
    """Where the real tokens of a padded (batch, length) layout are."""

    def __init__(self, is_real: torch.Tensor):
        if is_real.dim() != 2 or is_real.dtype != torch.bool:
            raise ValueError(f"is_real must be a (batch, length) bool tensor, got "
                             f"{tuple(is_real.shape)} {is_real.dtype}")
        self.is_real = is_real
        self.index = is_real.flatten().nonzero().squeeze(1)               # (n_real,)

    @classmethod
    def of_mask(cls, mask: torch.Tensor | None) -> Packing | None:
        """The positions a key-padding mask (B, 1, 1, L), True = may attend, lets anyone
        see; None for no mask, a mask of another shape (e.g. per query), or no padding."""
        if mask is None or mask.dtype != torch.bool or mask.dim() != 4 or mask.shape[1:3] != (1, 1):
            return None
        return cls(mask[:, 0, 0, :]).or_none()

    @classmethod
    def of_right_padded(cls, tokens: torch.Tensor, pad_id: int) -> Packing | None:
        """The packing of causally attended token ids (B, T); None when nothing is padding,
        or when a pad comes before a real token (the causal mask would let that token see it)."""
        is_real = tokens != pad_id
        if not bool((is_real[:, 1:] <= is_real[:, :-1]).all()):
            return None
        return cls(is_real).or_none()

    @property
    def batch(self) -> int:          # read from the tensor, so that torch.compile keeps
        return self.is_real.size(0)  # the sizes symbolic instead of recompiling for each

    @property
    def length(self) -> int:
        return self.is_real.size(1)

    def or_none(self) -> Packing | None:
        """``self``, or None when every position is real (packing would only copy)."""
        return None if len(self) == self.batch * self.length else self

    def __len__(self) -> int:
        return self.index.numel()

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, ...) -> (n_real, ...)."""
        return x.flatten(0, 1).index_select(0, self.index)

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """(n_real, ...) -> (B, L, ...), zeros at padding."""
        out = x.new_zeros(self.batch * self.length, *x.shape[1:])
        return out.index_copy_(0, self.index, x).unflatten(0, (self.batch, self.length))


def pack(x: torch.Tensor, packing: Packing | None) -> torch.Tensor:
    """``packing.pack(x)``, or ``x`` itself when there is no packing (padded layout)."""
    return x if packing is None else packing.pack(x)


def unpack(x: torch.Tensor, packing: Packing | None) -> torch.Tensor:
    """``packing.unpack(x)``, or ``x`` itself when there is no packing (padded layout)."""
    return x if packing is None else packing.unpack(x)
