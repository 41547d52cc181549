"""The optimizer a run trains with: the paper's Adam (section 5.3, :mod:`.adam`) or Muon
for the layers' matrices with that Adam for the rest (:mod:`.muon`, the one switch of the
CPU recipes; not the paper's)."""
from __future__ import annotations

import torch

from .adam import paper_adam
from .muon import MuonWithAdam
from ..errors import InputError

OPTIMIZERS = ("adam", "muon")


def make_optimizer(model: torch.nn.Module, name: str = "adam", precision: str = "fp32"):
    """The optimizer ``name`` (``TrainConfig.optimizer``) for ``model``: ``"adam"``, the
    paper's (:func:`~transformer.training.adam.paper_adam`); ``"muon"``, Muon for the
    layers' matrices and Adam for the rest (not the paper's), its Newton-Schulz in bf16
    when the run's ``precision`` (resolved, not ``"auto"``) is bf16, else in fp32."""
    if name == "muon":
        return MuonWithAdam(model, ns_dtype=torch.bfloat16 if precision == "bf16"
                            else torch.float32)
    if name != "adam":
        raise InputError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    return paper_adam(model.parameters())
