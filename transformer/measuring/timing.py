"""The timing harness of the chapters and the benchmarks: a stopwatch for a block of code,
the median or the best of timed calls, and one training step of the trainer's form of the
model (forward, label-smoothed loss, backward, Adam) in a precision.

Every timer waits for a GPU's queued work (``sync``), so that a GPU's time counts where a
CPU's would. This module belongs to the book, not to the ``transformer`` library, which
never imports it; the benchmarks (``benchmarks/``) import it.
"""
from __future__ import annotations

import statistics
import time

import torch


def sync(device) -> None:
    """Wait for a GPU's queued work, so that a timer sees it; nothing on a CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


class Stopwatch:
    """The wall and CPU seconds of a block, the GPU's work in it included::

        with Stopwatch(device) as watch:
            step()
        watch.seconds, watch.cpu_seconds

    On a GPU the queued work is waited for as the block starts (an earlier block's
    kernels do not count) and as it ends (its own do). ``cpu_seconds`` is this
    process's CPU time (all its threads), not a child process's."""

    def __init__(self, device="cpu"):
        self.cuda = torch.device(device).type == "cuda"
        self.seconds = self.cpu_seconds = None

    def __enter__(self) -> "Stopwatch":
        if self.cuda:
            torch.cuda.synchronize()
        self._cpu = time.process_time()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self._wall
        self.cpu_seconds = time.process_time() - self._cpu


def call_seconds(fn, repeats: int, device="cpu") -> list[float]:
    """The wall time of each of ``repeats`` calls of ``fn``, in order."""
    times = []
    for _ in range(repeats):
        with Stopwatch(device) as watch:
            fn()
        times.append(watch.seconds)
    return times


def median_seconds(fn, repeats: int, device="cpu", warmup: int = 2) -> float:
    """The median wall time of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    return statistics.median(call_seconds(fn, repeats, device))


def best_seconds(fn, repeats: int, device="cpu") -> float:
    """The shortest wall time of ``repeats`` calls of ``fn``, no warm-up call (the first
    call is timed too, so a slow first call only matters when every call is slow)."""
    return min(call_seconds(fn, repeats, device))


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
