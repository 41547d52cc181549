"""Where a measured figure comes from: the provenance every result record carries.

A record written by a command that measured something (a benchmark, the GPU check, a
table) holds :func:`provenance`: the commit (``+changes`` when the tree was not clean),
the exact command, the CPU (model, family and model numbers, bf16 instructions), the GPU
if one was used, torch and CUDA versions, and the date. :func:`write_record` writes a
record as JSON, whole or not at all.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from ..output import write_output
from ..cpu import BF16_INSTRUCTIONS

__all__ = ["cpu_name", "git_commit", "provenance", "record_text", "this_command", "write_record"]


def cpu_name() -> str:
    """The CPU model with its family/model numbers, as ``lscpu`` gives them."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        info = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        info = {k.strip(): v.strip() for k, v in info.items()}
        flags = info.get("Flags", "").split()
        extras = [f for f in BF16_INSTRUCTIONS if f in flags]
        return (f"{info.get('Model name', platform.processor())}, family "
                f"{info.get('CPU family', '?')} model {info.get('Model', '?')}, "
                f"{os.cpu_count()} CPUs" + (f", {' '.join(extras)}" if extras else ""))
    except (OSError, subprocess.SubprocessError, ValueError):
        return platform.processor() or platform.machine()


def git_commit() -> str:
    """The checkout's commit, with ``+changes`` when a tracked file outside the result
    records (``book/results``) differs from it: the package, the benchmarks, the book.

    ``$TRANSFORMER_COMMIT`` stands in where there is no repository (a copy of the working
    tree sent to another machine)."""
    if os.environ.get("TRANSFORMER_COMMIT"):
        return os.environ["TRANSFORMER_COMMIT"]
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                              capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ":(top)", ":(top,exclude)book/results"], cwd=here,
                               capture_output=True, text=True, timeout=10)
        if head.returncode:
            return "unknown (not a git checkout)"
        return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"


def this_command() -> str:
    """This process's command line as it was typed: ``python -m benchmarks.cpu.X ...`` for a
    module run with ``-m`` (whose ``sys.argv[0]`` is the module's file), else ``python
    SCRIPT ...``."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = (["-m", spec.name.removesuffix(".__main__")] if spec is not None and spec.name
               else sys.argv[:1])
    return " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *program,
                                             *sys.argv[1:]])


def provenance(command: str | None = None, device=None) -> dict:
    """Commit, command (default: this process's), CPU, GPU, torch, CUDA and UTC date."""
    import torch
    record = {
        "commit": git_commit(),
        "command": command or this_command(),
        "cpu": cpu_name(),
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if device is not None and torch.device(device).type == "cuda":
        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
        record["cuda"] = torch.version.cuda
    return record


def record_text(record: dict) -> str:
    """``record`` as a record file holds it: indented JSON and a newline."""
    return json.dumps(record, indent=1) + "\n"


def write_record(path, record: dict) -> Path:
    """Write ``record`` as indented JSON at ``path`` (whole or not at all, by
    :mod:`transformer.output`); returns the path."""
    return write_output(path, record_text(record))
