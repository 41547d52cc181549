"""Section 5.3's optimizer, and the one switch of the 30-minute recipe (Muon).

"We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 10^-9." Those
constants live here once (:data:`ADAM_BETAS`, :data:`ADAM_EPS`): :func:`paper_adam` is
the paper's Adam, and :class:`~transformer.training.muon.MuonWithAdam` uses it for the
parameters Muon does not take. The learning rate is set by the trainer at every update
(equation (3), :mod:`transformer.schedule`), so both start at 0.
"""
from __future__ import annotations

import torch

ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9
OPTIMIZERS = ("adam", "muon")


def paper_adam(params) -> torch.optim.Adam:
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) over ``params``, lr 0 (set every update).

    ``fused=True`` updates all parameters in one kernel (about 10x faster than the
    per-tensor loop on a CPU; same maths)."""
    return torch.optim.Adam(params, lr=0.0, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)


def make_optimizer(model: torch.nn.Module, name: str = "adam"):
    """The optimizer ``name`` (``TrainConfig.optimizer``) for ``model``: ``"adam"``, the
    paper's (:func:`paper_adam`); ``"muon"``, Muon for the layers' matrices and Adam for the
    rest (:mod:`transformer.training.muon`; not the paper's)."""
    if name == "muon":
        from .muon import MuonWithAdam
        return MuonWithAdam(model)
    if name != "adam":
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    return paper_adam(model.parameters())
