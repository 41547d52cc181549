"""Host memory on CPU: hand the pages that freed tensors leave behind back to the OS.

Training batches change shape every step, so the tensors of one step rarely fit the holes
the last step's left in glibc's heap: without help, the resident memory of a CPU run grows
for thousands of updates (see benchmarks/README.md, "Host memory"). ``malloc_trim(0)``
returns every whole free page of every malloc arena to the OS (``madvise``), which keeps
the resident size near the working set; the trainer calls :func:`release_free_memory`
every few updates on CPU. Elsewhere than glibc (or without ``malloc_trim``) it does
nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """``malloc_trim(0)`` where glibc has it; True if memory was returned to the OS."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


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
