"""Section 5.4: residual dropout.

"We apply dropout to the output of each sub-layer, before it is added to the sub-layer
input and normalized. In addition, we apply dropout to the sums of the embeddings and the
positional encodings in both the encoder and decoder stacks. For the base model, we use
a rate of P_drop = 0.1."

:class:`Dropout` is ``nn.Dropout`` with a cheaper mask on CPU. ``nn.Dropout`` draws one
random float per element (``bernoulli_``), and on CPU that draw is most of its cost. Here
one 64-bit random word serves four elements: each 16-bit slice of it, uniform on
[-2^15, 2^15), is compared against a threshold. The drop probability is thus rounded to
a multiple of 2^-16 (0.1 becomes 0.100006) and the kept values are scaled by
1 / (1 - p_rounded), so the expected output still equals the input. Dropped values are
set to exactly 0 (``nn.Dropout`` multiplies, so a dropped NaN stays NaN there). On a GPU
(where ``F.dropout`` is one fused kernel) and under ``torch.compile`` it is ``F.dropout``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

LEVELS = 1 << 16                     # the mask compares 16-bit random numbers


def drop_mask(shape: torch.Size, p: float, device=None) -> torch.Tensor:
    """Bool tensor of ``shape``, True with probability round(p * 2^16) / 2^16."""
    n = math.prod(shape)
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device)
    words.random_(-2 ** 63, None)                               # all 64 bits uniform
    threshold = round(p * LEVELS) - LEVELS // 2                 # P(slice < t) = (t + 2^15) / 2^16
    return words.view(torch.int16)[:n].view(shape) < threshold


class _MaskedScale(torch.autograd.Function):
    """x * keep / (1 - p), saving only the one-byte mask for the backward."""

    @staticmethod
    def forward(ctx, x, p: float):
        dropped = drop_mask(x.shape, p, x.device)
        ctx.scale = LEVELS / (LEVELS - round(p * LEVELS))
        ctx.save_for_backward(dropped)
        return x.masked_fill(dropped, 0).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad):
        (dropped,) = ctx.saved_tensors
        return grad.masked_fill(dropped, 0).mul_(ctx.scale), None


class Dropout(nn.Dropout):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if (x.device.type != "cpu" or torch.compiler.is_compiling()
                or not 0 < round(self.p * LEVELS) < LEVELS):
            return F.dropout(x, self.p, True, self.inplace)
        return _MaskedScale.apply(x, self.p)
