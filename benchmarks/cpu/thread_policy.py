"""CPU training beside other work: tokens/s by thread count and OpenMP wait policy.

    python -m benchmarks.cpu.thread_policy --record book/results/thread_policy.json

A reader's laptop builds the book with a browser open beside it. This trains the recipe
``tiny`` (``python -m transformer train --recipe tiny``, as a user runs it) for
``--updates`` updates in each setting of the grid

* torch threads: 1 and 2 (``--threads``);
* OpenMP's wait policy: the runtime's default (a thread that finishes its share spins,
  waiting for the others), passive (``OMP_WAIT_POLICY=PASSIVE``: it sleeps at once) and
  a short spin before sleeping (``GOMP_SPINCOUNT`` 1,000 or 20,000, libgomp's setting);
  these with ``--no-adapt-threads``, a fixed count; and ``adaptive``, the trainer's
  default (transformer/training/threads.py: up to ``--threads``, fewer while other
  processes keep cores busy), with the runtime's default wait;
* the machine: idle, or beside one busy process (a Python loop that never sleeps, as a
  busy browser tab is);

and reports the median tokens/s of the trainer's log lines (the first one, which holds
the warm-up of the allocator, left out). Each run also has a wall-clock limit
(``--limit-s``), since a spinning thread that waits for a descheduled partner can make a
run many times slower.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.record import add_option, save
from transformer.measuring.provenance import write_record
from transformer.measuring.timing import Stopwatch

POLICIES = {"default": {}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
            "spin-1k": {"GOMP_SPINCOUNT": "1000"}, "spin-20k": {"GOMP_SPINCOUNT": "20000"},
            "adaptive": {}}
BUSY = "while True: pass"


def one_run(threads: int, policy: str, busy: bool, updates: int, limit_s: float) -> dict:
    """Train ``tiny`` once in a scratch folder; its tokens/s and what it logged."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    env.update(POLICIES[policy])
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "transformer", "train", "--recipe", "tiny",
               "--out", out, "--threads", str(threads), "--max-updates", str(updates),
               "--time-limit-min", f"{limit_s / 60:.3f}", "--log-every", "10",
               "--eval-every", str(10 * updates), "--save-every", str(10 * updates),
               "--no-progress"] + ([] if policy == "adaptive" else ["--no-adapt-threads"])
        neighbour = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
        try:
            with Stopwatch() as watch:
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = watch.seconds
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
        lines = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    rates = [r["tokens_per_s"] for r in lines if "tokens_per_s" in r]
    steps = [r["step"] for r in lines if "tokens_per_s" in r]
    return {"threads": threads, "wait_policy": policy, "busy_neighbour": busy,
            "tokens_per_s": round(statistics.median(rates[1:] or rates)),
            "updates": steps[-1] if steps else 0, "wall_s": round(wall, 1)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--updates", type=int, default=100)
    p.add_argument("--limit-s", type=float, default=150.0,
                   help="each run's wall-clock limit for training (seconds)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    p.add_argument("--loads", nargs="+", default=["idle", "busy"], choices=["idle", "busy"])
    p.add_argument("--append", action="store_true",
                   help="add these runs to the --record file as a further set")
    add_option(p, "thread_policy")
    args = p.parse_args(argv)
    runs = []
    for busy in [load == "busy" for load in args.loads]:
        for policy in args.policies:
            for threads in args.threads:
                run = one_run(threads, policy, busy, args.updates, args.limit_s)
                print(json.dumps(run), flush=True)
                runs.append(run)
    what = ("tokens/s of `train --recipe tiny` by torch threads and OpenMP wait policy, on an "
            "idle machine and beside one busy process (median of the log lines after the first)")
    settings = {"recipe": "tiny", "updates": args.updates, "limit_s": args.limit_s,
                "busy_neighbour": f"python -c '{BUSY}'"}
    record = save(None, what, {"runs": runs}, settings=settings)
    if args.record:
        earlier = json.loads(Path(args.record).read_text())["sets"] if args.append else []
        write_record(args.record, {"what": what, "sets": earlier + [record]})
        print(f"record written: {args.record}")


if __name__ == "__main__":
    main()
