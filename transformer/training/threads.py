"""CPU threads that give way to the reader's other work.

Training on a CPU with two threads is faster than with one on an idle two-core machine,
but when another process keeps one core busy (a browser tab, a test
run), the two threads' OpenMP runtime spins waiting for the partner that is not
running, and the run falls to a fraction of one thread's speed. No fixed setting is good
for both (record ``thread_policy.json``, the Results page, "Training beside other work":
one thread loses much of the idle speed, a passive or short spin-wait still falls below
one thread beside a busy process).

:class:`ThreadGovernor` adapts instead: every few seconds it reads how much CPU time the
machine spent outside this process (``/proc/stat`` less this process's own time; work
running under ``nice`` left out, since it yields) and sets torch's threads to the cores
left free, between 1 and the run's ``--threads``.
``--no-adapt-threads`` keeps the count fixed (a thread count can change the last bits of
a reduction, so a bit-for-bit comparison of runs wants it fixed).
"""
from __future__ import annotations

import os
import time

import torch


def _machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot at normal or higher
    priority (``/proc/stat``: user, system, irq, softirq, steal), or None where it cannot
    be read. Processes running under ``nice`` (its own column) are left out: they give
    their cores up to this one."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    ticks += [0] * (8 - len(ticks))
    user, _nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system


class ThreadGovernor:
    """Sets torch's CPU threads to the cores the rest of the machine leaves free, at most
    ``most``; :meth:`tick` is called once an update and looks every ``every_s`` seconds."""

    def __init__(self, most: int, every_s: float = 3.0, cores: int | None = None):
        self.most, self.every_s = most, every_s
        self.cores = cores or os.cpu_count() or 1
        self.threads = most
        self._last = None
        torch.set_num_threads(most)

    def free_cores(self, others_s: float, wall_s: float) -> int:
        """The cores free when other processes used ``others_s`` CPU seconds in ``wall_s``."""
        return self.cores - round(max(0.0, others_s) / wall_s)

    def tick(self) -> int | None:
        """Look again if it is time; returns the new thread count when it changed."""
        now = time.monotonic()
        if self._last is not None and now - self._last[0] < self.every_s:
            return None
        busy = _machine_busy_seconds()
        if busy is None:
            return None
        own = _own_seconds()
        last, self._last = self._last, (now, busy, own)
        if last is None:
            return None
        others = (busy - last[1]) - (own - last[2])
        threads = max(1, min(self.most, self.free_cores(others, now - last[0])))
        if threads == self.threads:
            return None
        self.threads = threads
        torch.set_num_threads(threads)
        return threads
