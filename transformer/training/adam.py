"""Section 5.3's optimizer: "We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and
epsilon = 10^-9."

Those constants live here once (:data:`ADAM_BETAS`, :data:`ADAM_EPS`). The learning rate
is set by the trainer at every update (equation (3), :mod:`transformer.schedule`), so the
optimizer starts at 0.
"""
from __future__ import annotations

import torch

ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9


def paper_adam(params) -> torch.optim.Adam:
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) over ``params``, lr 0 (set every update).

    ``fused=True`` updates all parameters in one kernel (much faster than the per-tensor
    loop on a CPU; the same maths)."""
    return torch.optim.Adam(params, lr=0.0, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)
