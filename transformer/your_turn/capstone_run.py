"""The capstone page's run: a Transformer of the learner's parts (:mod:`.capstone`) trained
on chapter 4's reversal task (:mod:`.toy`) with the paper's recipe, and its accuracy on
sequences it never saw, each output found by greedy decoding (no teacher forcing).

``SETTINGS`` is the one home of the run's settings: the page and the benchmark that records
the run (``benchmarks/book/capstone.py``) both read it.
"""
from __future__ import annotations

import time

import torch

from ..decoding import greedy_decode
from .capstone import Parts, assemble, train_model
from .toy import toy_batch, toy_config

SETTINGS = dict(task="reverse", letters=10, length=8, batch=64, steps=600, warmup=100,
                factor=1.0, smoothing=0.1, d_model=64, n_heads=4, d_ff=128, layers=2)
"""Chapter 4's task and model size (2 + 2 layers, d_model = 64, 4 heads); the paper's
Adam, schedule (equation 3, a warm-up of 100 updates) and label smoothing."""


def capstone_config(**changes):
    s = {**SETTINGS, **changes}
    return toy_config(s["letters"], d_model=s["d_model"], n_heads=s["n_heads"], d_ff=s["d_ff"],
                      n_encoder_layers=s["layers"], n_decoder_layers=s["layers"])


def train_capstone(parts: Parts | None = None, seed: int = 0, **changes):
    """Assemble ``parts`` and train them: ``(model, losses, seconds, seen)``, ``seen`` the
    set of every training sequence (so that the test can leave them out)."""
    s = {**SETTINGS, **changes}
    torch.manual_seed(seed)
    model = assemble(capstone_config(**changes), parts or Parts())
    seen: set[tuple[int, ...]] = set()

    def batches(generator):
        src, tgt_in, tgt_out = toy_batch(s["task"], s["batch"], s["letters"], s["length"],
                                         generator)
        seen.update(map(tuple, src.tolist()))
        return src, tgt_in, tgt_out

    started = time.perf_counter()
    losses = train_model(model, batches, s["steps"], s["warmup"], s["smoothing"], s["factor"],
                         seed)
    return model, losses, time.perf_counter() - started, seen


def held_out(n: int, seen: set, seed: int = 12345, **changes):
    """``n`` new sequences and their answers, none of them among ``seen``."""
    s = {**SETTINGS, **changes}
    generator = torch.Generator().manual_seed(seed)
    rows, answers = [], []
    while len(rows) < n:
        src, _, tgt_out = toy_batch(s["task"], n, s["letters"], s["length"], generator)
        for x, y in zip(src.tolist(), tgt_out[:, :-1].tolist()):
            if tuple(x) not in seen and len(rows) < n:
                rows.append(x)
                answers.append(y)
    return torch.tensor(rows), answers


def greedy_accuracy(model, src: torch.Tensor, answers: list[list[int]]) -> float:
    """The share of sequences whose greedy output is exactly the answer."""
    outputs = greedy_decode(model, src, max_extra=2)
    return sum(o == a for o, a in zip(outputs, answers)) / len(answers)
