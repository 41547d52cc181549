"""The chapters' timing harness: the median or the best of timed calls, and one training
step of the trainer's form of the model (forward, label-smoothed loss, backward, Adam) in a
precision.

This module belongs to the book, not to the ``transformer`` library, which never imports it.
"""
from __future__ import annotations

import statistics
import time

import torch


def sync(device) -> None:
    """Wait for a GPU's queued work, so that a timer sees it; nothing on a CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def median_seconds(fn, repeats: int, device="cpu", warmup: int = 2) -> float:
    """The median wall time of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_seconds(fn, repeats: int, device="cpu") -> float:
    """The shortest wall time of ``repeats`` calls of ``fn``, no warm-up call (the first
    call is timed too, so a slow first call only matters when every call is slow)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return min(times)


def training_step_seconds(cfg, batch: int, length: int, precision: str, repeats: int,
                          device="cpu") -> float:
    """Median seconds of one training step of ``FastTransformer(cfg)`` (the form the
    trainer uses, with its ``SequenceLoss``) on random tokens, under the trainer's
    ``autocast`` in ``precision``."""
    from transformer.fast import FastLabelSmoothingLoss, FastTransformer
    from transformer.fast import SequenceLoss
    from transformer.training.optimizers import make_optimizer
    from transformer.training.precision import autocast
    torch.manual_seed(0)
    model = FastTransformer(cfg).to(device)
    loss_module = SequenceLoss(model, FastLabelSmoothingLoss(0.1, cfg.pad_id))
    optimizer = make_optimizer(model)
    for group in optimizer.param_groups:
        group["lr"] = 1e-4
    src = torch.randint(4, cfg.vocab_size, (batch, length), device=device)
    tgt = torch.randint(4, cfg.vocab_size, (batch, length + 1), device=device)

    def step():
        with autocast(device, precision):
            loss = loss_module(src, tgt[:, :-1], tgt[:, 1:]) / (batch * length)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return median_seconds(step, repeats, device)
