"""The result record a benchmark writes with ``--record PATH``: its figures, what they
measure, and their provenance (``transformer.measuring.provenance``: commit and whether
the tree was dirty, the exact command, the CPU and its bf16 flags, torch, date) with the device and
the script's wall time. The records the project quotes are committed in
``book/results/`` (benchmarks/README.md lists where each script's record lands)."""
from __future__ import annotations

import time

from transformer.measuring.provenance import provenance, write_record

STARTED = time.monotonic()          # imported at the script's start: its wall time


def add_option(parser, name: str) -> None:
    """``--record PATH``; the committed record of this script is book/results/NAME.json."""
    parser.add_argument("--record", metavar="PATH", default=None,
                        help=f"write the result record (JSON with provenance) here; the "
                             f"committed one is book/results/{name}.json")


def save(path, what: str, figures: dict, device="cpu", **context) -> dict:
    """The record of this run; written to ``path`` when one is given."""
    prov = provenance(device=device)
    prov.update(device=str(device), wall_s=round(time.monotonic() - STARTED, 1), **context)
    record = {"provenance": prov, "what": what, **figures}
    if path:
        write_record(path, record)
        print(f"record written: {path}")
    return record
