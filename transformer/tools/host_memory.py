"""Host memory on CPU: run under jemalloc, so that a long training run grows far less.

Training batches change shape every step. glibc's malloc then keeps the freed blocks of
one step in holes the next step's tensors do not fit, and the resident memory of a CPU
run grows for thousands of updates, to several times the working set. jemalloc hands
unused pages back to the system after a few seconds; its ``background_thread:true`` does
that in a thread of its own instead of inside the training thread's allocations, so
memory stays flat at the working set at about glibc's speed (the measurement:
``book/results/host_memory.json``, written by ``benchmarks/cpu/host_memory.py``).
Switching the purging off (``dirty_decay_ms:-1``) looked faster over a few hundred
updates, but then the resident size grew without bound for some models: keep pages
flowing back.

:func:`exec_with_jemalloc` restarts ``python -m transformer`` under Debian's
``libjemalloc2`` (``LD_PRELOAD``) when it is installed; ``TRANSFORMER_MALLOC=system``
keeps the system allocator. :func:`resident_mb` reads the process's resident size.
"""
from __future__ import annotations

import ctypes.util
import os
import sys
from pathlib import Path

JEMALLOC_CONF = "background_thread:true"
_CANDIDATES = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
               "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2")


def jemalloc_library() -> str | None:
    """The path of an installed jemalloc shared library, or None."""
    for path in _CANDIDATES:
        if Path(path).is_file():
            return path
    name = ctypes.util.find_library("jemalloc")
    return name if name else None


def exec_with_jemalloc(argv: list[str] | None = None,
                       program: list[str] | None = None) -> None:
    """Replace this process by ``python -m transformer ARGV`` (or ``python PROGRAM ARGV``)
    under jemalloc, if jemalloc is installed and not loaded yet (and ``TRANSFORMER_MALLOC``
    is not ``system``). Returns only when nothing is to be done (the same process goes on)."""
    if (sys.platform != "linux" or os.environ.get("TRANSFORMER_MALLOC") == "system"
            or "jemalloc" in os.environ.get("LD_PRELOAD", "")):
        return
    library = jemalloc_library()
    if library is None:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(p for p in (library, env.get("LD_PRELOAD")) if p)
    env.setdefault("MALLOC_CONF", JEMALLOC_CONF)
    args = sys.argv[1:] if argv is None else argv
    program = ["-m", "transformer"] if program is None else program
    os.execve(sys.executable, [sys.executable, *program, *args], env)


def resident_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MiB, from /proc (Linux), or
    (nan, nan) where there is no /proc."""
    values = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, kb = line.split()[:2]
                    values[key] = int(kb) / 1024
    except OSError:
        return float("nan"), float("nan")
    return values.get("VmRSS:", float("nan")), values.get("VmHWM:", float("nan"))
