"""Eager against ``--compile`` (:func:`transformer.fast.compile_layers`) on this machine:
updates of ``make train-tiny`` on Multi30k's real batches, every batch shape different.

    python -m benchmarks.cpu.compile_speed --record book/results/compile_cpu.json

Two trainers with the same seed and batches; the compiled one first runs ``--warmup``
updates (the compilations: the number of graphs is recorded and must stop growing),
then rounds of ``--updates`` updates alternate between the two. Reports the median
seconds of an update for each, their ratio, the compilation time and the graphs
compiled, with the provenance of the run (CPU named).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.cpu.trainer import recipe_trainer
from benchmarks.record import add_option, save
from transformer.fast import compile_layers
from transformer.measuring.provenance import write_record
from transformer.measuring.timing import Stopwatch


def graphs_compiled() -> int:
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def timed_updates(trainer, batches, n: int) -> list[float]:
    times = []
    for _ in range(n):
        micro, n_tokens = trainer.next_micro_batches(batches)
        with Stopwatch() as watch:
            trainer.train_update(micro, n_tokens)
        times.append(watch.seconds)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--warmup", type=int, default=20, help="compiled updates before timing")
    p.add_argument("--updates", type=int, default=20, help="updates per trainer per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data-root", default=None)
    add_option(p, "compile_cpu")
    p.add_argument("--json", dest="record", help=argparse.SUPPRESS)     # the old name
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        eager = recipe_trainer(8000, Path(scratch) / "eager", args.threads, args.data_root, 2048,
                               "muon")
        compiled = recipe_trainer(8000, Path(scratch) / "compiled", args.threads,
                                  args.data_root, 2048, "muon")
    compile_layers(compiled.model)
    streams = {"eager": iter(eager.train_iter), "compiled": iter(compiled.train_iter)}
    with Stopwatch() as warming:
        warm = timed_updates(compiled, streams["compiled"], args.warmup)
    compile_s, graphs = warming.seconds, graphs_compiled()
    timed_updates(eager, streams["eager"], args.warmup)            # same batches as compiled
    times = {"eager": [], "compiled": []}
    for _ in range(args.rounds):
        for name, trainer in (("eager", eager), ("compiled", compiled)):
            times[name] += timed_updates(trainer, streams[name], args.updates)
    med = {name: statistics.median(t) for name, t in times.items()}
    figures = {
        "eager_s": med["eager"], "compiled_s": med["compiled"],
        "compiled_over_eager": med["compiled"] / med["eager"],
        "warmup_updates": args.warmup, "warmup_s": compile_s, "first_update_s": warm[0],
        "graphs_compiled": graphs, "graphs_compiled_after_timing": graphs_compiled(),
        "timed_updates": len(times["eager"]),
    }
    record = save(None, "seconds per update of make train-tiny (tiny preset, 2,048-token "
                  "updates, Muon), eager vs transformer.fast.compile_layers, interleaved rounds",
                  figures, precision=eager.precision, threads=args.threads)
    print(f"eager {med['eager']:.3f} s/update, compiled {med['compiled']:.3f} "
          f"({record['compiled_over_eager']:.2f}x the time); {graphs} graphs compiled in "
          f"{compile_s:.0f} s, {record['graphs_compiled_after_timing']} after "
          f"{2 * len(times['compiled'])} more updates")
    if args.record:
        write_record(args.record, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
