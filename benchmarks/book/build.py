"""The wall time of ``make book`` from an empty run cache, with the share that trains the
book's model (chapter 7), written as a result record.

    python -m benchmarks.book.build --record book/results/book_build.json

Runs ``make book`` with ``TRANSFORMER_CACHE`` pointed at a new empty folder (so the book's
model is trained from scratch, as on a fresh machine; your own cache is left alone) and
reads the trained run's ``metrics.jsonl`` for its training seconds and updates. Run it on a
quiet machine: the time is the figure. The record names the CPU and whether it trained in
bf16 or fp32. ``--keep`` then moves the trained run into your own cache, so that the other
benchmarks of the book's model (``model``, ``weight_forms``, ``browser_speed`` here)
score the model this build trained instead of training it again.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks import REPO
from benchmarks.book.model import run_summary      # the run's settings and length
from benchmarks.record import add_option
from transformer.measuring.timing import Stopwatch


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_option(p, "book_build")
    p.add_argument("--make", default="make", help="the make program")
    p.add_argument("--keep", action="store_true",
                   help="move the trained run into $TRANSFORMER_CACHE (default "
                        "~/.cache/transformer/runs) afterwards")
    args = p.parse_args(argv)
    from transformer.measuring.provenance import provenance, write_record
    measured = provenance()                     # the code as the build starts
    with tempfile.TemporaryDirectory(prefix="book-cache-") as cache:
        env = {**os.environ, "TRANSFORMER_CACHE": cache}
        load_before = os.getloadavg()[0]
        with Stopwatch() as watch:
            done = subprocess.run([args.make, "-C", str(REPO), "book"], env=env)
        load_after = os.getloadavg()[0]
        wall = watch.seconds
        if done.returncode:
            raise SystemExit(f"make book failed (exit {done.returncode}) after {wall:.0f} s")
        runs = [p.parent for p in Path(cache).glob("*/average.pt")]
        if len(runs) != 1:
            raise SystemExit(f"expected one trained run in {cache}, found {len(runs)}")
        summary = run_summary(runs[0])
        if "updates" not in summary:
            raise SystemExit(f"{runs[0]}: the trained run has no final metrics record")
        if args.keep:
            from transformer.training.cache import cache_root
            kept = cache_root() / runs[0].name
            if kept.exists():
                raise SystemExit(f"--keep: {kept} exists; remove it or run without --keep")
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(runs[0]), kept)
            print(f"the trained run is now {kept}")
    record = {
        "provenance": measured,
        "what": "make book from an empty run cache: every chapter executed on the CPU, the "
                "book's model trained in chapter 7",
        "wall_s": round(wall, 1),
        "train_s": summary["train_s"], "updates": summary["updates"],
        "precision": summary["precision"],
        # the corpus as the recipe names it (without the data root it was read from)
        "corpus": re.sub(r"[^*+]*/", "", summary["settings"]["corpus"]),
        "preset": summary["settings"]["preset"],
        "load_1min": {"before": round(load_before, 2), "after": round(load_after, 2)},
    }
    if args.record:
        write_record(args.record, record)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
