"""Muon for the layers' weight matrices, Adam for the rest: a switch of the 30-minute
recipe (``--optimizer muon``), not the paper's optimizer (section 5.3 uses Adam alone).

Muon (Jordan et al., 2024, "Muon: an optimizer for hidden layers") takes each matrix's
Nesterov momentum and replaces it by the nearest semi-orthogonal matrix, found by five
Newton-Schulz iterations: every direction of the update gets the same step. The step is
scaled by ``MUON_SCALE * sqrt(max(rows, cols))``: a semi-orthogonal matrix's entries have
an RMS of 1 / sqrt(max(rows, cols)), so the update's RMS is about ``MUON_SCALE`` times the
learning rate, whatever the shape. Liu et al. (2025, "Muon is scalable for LLM training")
take 0.2, about the RMS of a typical AdamW update, so that Muon's update matches AdamW's;
this package has no weight decay and takes 0.4, which scored higher on Multi30k's valid
split than 0.2. The trainer's learning rate of equation (3) drives both optimizers
unchanged. The shared embedding / output matrix, the biases
and the LayerNorm gains keep the paper's Adam
(:func:`~transformer.training.adam.paper_adam`).
"""
from __future__ import annotations

from collections import defaultdict

import torch

from .adam import paper_adam
from ..errors import InputError

MUON_SCALE = 0.4


def newton_schulz(G: torch.Tensor, steps: int = 5) -> torch.Tensor:
    """A matrix near the semi-orthogonal factor of each G (batch, rows, cols): all its
    singular values land in about [0.7, 1.2] (the quintic of Jordan et al.)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = G.size(-2) > G.size(-1)
    X = G.mT if tall else G                                # (batch, short, long)
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)    # singular values <= 1
    for _ in range(steps):                                 # X <- aX + (bA + cA^2) X
        A = torch.bmm(X, X.mT)                             # (batch, short, short)
        X = torch.baddbmm(X, torch.baddbmm(A, A, A, beta=b, alpha=c), X, beta=a)
    return X.mT if tall else X


def orthogonalise(matrices: list[torch.Tensor], steps: int = 5,
                  dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """:func:`newton_schulz` of each matrix, batched: every matrix of the same sizes in one
    call, a tall (m, n) one transposed to join the wide (n, m) ones (the iteration works on
    the short side either way, so the result is the same), in ``dtype``; returned in the
    matrices' own order and dtype. A layer's matrices are small, so fewer, larger batches
    run nearer the CPU's peak, and bf16 (the trainer's choice where the run trains in bf16,
    as Jordan et al. run it) is faster again on a CPU with bf16 instructions: the step
    profile (``book/results/step_profile.json``) measures Muon's share of an update.
    tests/test_muon.py holds it equal to one newton_schulz per matrix in fp32, and within
    bf16's rounding in bf16."""
    tall = [m.size(0) > m.size(1) for m in matrices]
    groups = defaultdict(list)                         # (short, long) -> indices
    for i, m in enumerate(matrices):
        groups[min(m.shape), max(m.shape)].append(i)
    out: list[torch.Tensor] = [None] * len(matrices)   # type: ignore[list-item]
    for indices in groups.values():
        wide = [matrices[i].mT if tall[i] else matrices[i] for i in indices]
        done = newton_schulz(torch.stack(wide).to(dtype), steps)
        for i, x in zip(indices, done):
            out[i] = (x.mT if tall[i] else x).to(matrices[i].dtype)
    return out


class Muon(torch.optim.Optimizer):
    """Nesterov momentum, orthogonalised by :func:`orthogonalise` (Newton-Schulz batched
    over the matrices of the same sizes, in ``ns_dtype``)."""

    def __init__(self, params, lr: float = 0.0, momentum: float = 0.95, ns_steps: int = 5,
                 scale: float = MUON_SCALE, ns_dtype: torch.dtype = torch.float32):
        super().__init__(params, dict(lr=lr, momentum=momentum, ns_steps=ns_steps,
                                      scale=scale))
        self.ns_dtype = ns_dtype
        for group in self.param_groups:
            if any(p.ndim != 2 for p in group["params"]):
                raise ValueError("Muon updates matrices only; give the other parameters "
                                 "to Adam")

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            mu, params, updates = group["momentum"], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p].setdefault("momentum_buffer", torch.zeros_like(p))
                buf.mul_(mu).add_(p.grad)
                params.append(p)
                updates.append(p.grad.add(buf, alpha=mu))                 # Nesterov
            for p, u in zip(params, orthogonalise(updates, group["ns_steps"], self.ns_dtype)):
                p.add_(u, alpha=-group["lr"] * group["scale"] * max(p.shape) ** 0.5)


def is_muon_parameter(name: str, p: torch.Tensor) -> bool:
    """A weight matrix inside an encoder or decoder layer (not the embedding)."""
    return p.ndim == 2 and ("encoder_layers." in name or "decoder_layers." in name)


class MuonWithAdam:
    """Muon for the layers' matrices (its Newton-Schulz in ``ns_dtype``) and Adam for the
    other parameters, behind the face the trainer uses: ``param_groups`` (it sets each
    group's ``lr``), ``step``, ``zero_grad``, ``state_dict`` and ``load_state_dict`` (a
    checkpoint holds both)."""

    def __init__(self, model: torch.nn.Module, scale: float = MUON_SCALE,
                 ns_dtype: torch.dtype = torch.float32):
        muon, adam = [], []
        for name, p in model.named_parameters():
            (muon if is_muon_parameter(name, p) else adam).append(p)
        if not muon:
            raise InputError("--optimizer muon found no encoder or decoder layer matrices")
        self.adam = paper_adam(adam)
        self.muon = Muon(muon, scale=scale, ns_dtype=ns_dtype)

    @property
    def param_groups(self) -> list[dict]:
        # read anew each time: load_state_dict replaces both optimizers' group dicts
        return self.adam.param_groups + self.muon.param_groups

    def step(self) -> None:
        self.adam.step()
        self.muon.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.adam.zero_grad(set_to_none)
        self.muon.zero_grad(set_to_none)

    def state_dict(self) -> dict:
        return {"adam": self.adam.state_dict(), "muon": self.muon.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if set(state) != {"adam", "muon"}:
            raise InputError("this optimizer state is not --optimizer muon's")
        self.adam.load_state_dict(state["adam"])
        self.muon.load_state_dict(state["muon"])
