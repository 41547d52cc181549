"""A cheaper dropout mask on CPU, for the residual dropout of section 5.4.

:class:`CheapDropout` is ``nn.Dropout`` (what the plain model uses) with a cheaper mask on
CPU. ``nn.Dropout`` draws one
random float per element (``bernoulli_``), and on CPU that draw is most of its cost. Here
one 64-bit random word serves four elements: each 16-bit slice of it, uniform on
[-2^15, 2^15), is compared against a threshold. The drop probability is thus rounded to
a multiple of 2^-16 (0.1 becomes 0.100006) and the kept values are scaled by
1 / (1 - p_rounded), so the expected output still equals the input. Dropped values are
set to exactly 0 (``nn.Dropout`` multiplies, so a dropped NaN stays NaN there). On a GPU
(where ``F.dropout`` is one fused kernel) it is ``F.dropout``. Under ``torch.compile`` on a
CPU the mask's draw is one opaque operator: the compiler's own per-element random draw
is slow there, and made the compiled step slower than eager (benchmarks/cpu/compile_speed.py).

:func:`drop_mask` is that mask in its readable, boolean form. The layer itself applies the
same mask through :func:`keep_bits`, integers of the input's width that are all ones where
a value is kept: one bitwise AND then zeroes the dropped values. Ops on bool tensors are
slow on a CPU: the AND is much faster than the bool mask with ``masked_fill``, and both
than ``nn.Dropout`` (benchmarks/cpu/dropout_speed.py; its record is
book/results/dropout_speed.json).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

LEVELS = 1 << 16                     # the mask compares 16-bit random numbers


def uniform_int16(shape: torch.Size, device=None) -> torch.Tensor:
    """int16 tensor of ``shape``, uniform on [-2^15, 2^15): four per 64-bit random word."""
    n = math.prod(shape)
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device)
    words.random_(-2 ** 63, None)                               # all 64 bits uniform
    return words.view(torch.int16)[:n].view(shape)


def _threshold(p: float) -> int:
    return round(p * LEVELS) - LEVELS // 2                      # P(slice < t) = (t + 2^15) / 2^16


def drop_mask(shape: torch.Size, p: float, device=None) -> torch.Tensor:
    """Bool tensor of ``shape``, True with probability round(p * 2^16) / 2^16."""
    return uniform_int16(shape, device) < _threshold(p)


def keep_bits(shape: torch.Size, p: float, device=None) -> torch.Tensor:
    """:func:`drop_mask` as int16 without a bool tensor: 0 where it is True, -1 (all bits
    set) where it is False; the same draw from the same random state."""
    t = _threshold(p)                                           # > -2^15 as 0 < p * 2^16
    return uniform_int16(shape, device).clamp_(t - 1, t).sub_(t).bitwise_not_()  # u<t: -1 -> 0


_SAME_WIDTH_INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(x: torch.Tensor) -> torch.Tensor:
    """x's bits as signed integers of its width (a view, no copy when x is contiguous)."""
    return x.contiguous().view(_SAME_WIDTH_INT[x.element_size()])


@torch.library.custom_op("transformer::keep_bits", mutates_args=())
def _keep_bits_like(x: torch.Tensor, p: float) -> torch.Tensor:
    """:func:`keep_bits` for ``x``'s shape, widened to ``x``'s width; one opaque operator,
    so that ``torch.compile`` calls it instead of tracing its random draw."""
    return keep_bits(x.shape, p, x.device).to(_SAME_WIDTH_INT[x.element_size()])


@_keep_bits_like.register_fake
def _(x, p):
    return x.new_empty(x.shape, dtype=_SAME_WIDTH_INT[x.element_size()])


class _MaskedScale(torch.autograd.Function):
    """x * keep / (1 - p): x's bits AND :func:`keep_bits` (widened to x's width by sign
    extension, -1 staying all ones), saving only that mask for the backward."""

    @staticmethod
    def forward(ctx, x, p: float):
        keep = _keep_bits_like(x, p)
        ctx.scale = LEVELS / (LEVELS - round(p * LEVELS))
        ctx.save_for_backward(keep)
        return (_bits(x) & keep).view(x.dtype).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad):               # autograd hands a grad of the output's dtype
        (keep,) = ctx.saved_tensors
        return (_bits(grad) & keep).view(grad.dtype).mul_(ctx.scale), None


class CheapDropout(nn.Dropout):
    """``nn.Dropout(p)`` with the 16-bit mask of :func:`drop_mask` on CPU (faster there:
    record ``dropout_speed.json``), compiled or not; ``F.dropout`` on other devices."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if (x.device.type != "cpu"
                or not x.is_floating_point() or x.element_size() not in _SAME_WIDTH_INT
                or not 0 < round(self.p * LEVELS) < LEVELS):
            return F.dropout(x, self.p, True, self.inplace)
        return _MaskedScale.apply(x, self.p)


def use_cheap_dropout(model: nn.Module) -> nn.Module:
    """Replace every ``nn.Dropout`` in ``model`` by a :class:`CheapDropout` of the same rate
    (dropout has no parameters: checkpoints are unaffected). Returns ``model``."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.Dropout:
                setattr(parent, name, CheapDropout(child.p, child.inplace))
    return model
