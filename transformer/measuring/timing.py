"""The timing harness of the benchmarks and the chapters: a stopwatch for a block of code,
and the median or the best of timed calls.

Every timer waits for a GPU's queued work (``sync``), so that a GPU's time counts where a
CPU's would. The benchmarks (``benchmarks/``) and the book's chapters import it; what it
times is theirs to say.
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
