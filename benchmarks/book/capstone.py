"""The capstone page's reference run ("Your Transformer"): the book's own parts assembled
by :mod:`transformer.your_turn`, trained on reversal with the page's settings
(``transformer.your_turn.capstone_run.SETTINGS``), on the CPU: the seconds the training takes and the
share of 512 sequences it never saw that greedy decoding reverses exactly, for a few seeds
and at the thread counts a laptop offers. The machine's load average is kept beside the
figures: time it on a quiet machine.

    python -m benchmarks.book.capstone --record book/results/capstone.json
"""
from __future__ import annotations

import argparse
import os
import statistics

import torch

from benchmarks.record import add_option, save
from transformer.your_turn.capstone_run import SETTINGS, greedy_accuracy, held_out, train_capstone


def run(seeds: int, threads: list[int]) -> dict:
    rows = []
    for n in threads:
        torch.set_num_threads(n)
        for seed in range(seeds):
            model, losses, seconds, seen = train_capstone(seed=seed)
            accuracy = greedy_accuracy(model, *held_out(512, seen))
            rows.append({"threads": n, "seed": seed, "train_s": round(seconds, 1),
                         "last_loss": round(losses[-1], 4), "accuracy": round(accuracy, 4)})
            print(rows[-1], flush=True)
    slowest = max(r["train_s"] for r in rows)
    return {"settings": SETTINGS, "rows": rows, "slowest_train_s": slowest,
            "median_train_s": statistics.median(r["train_s"] for r in rows),
            "lowest_accuracy": min(r["accuracy"] for r in rows)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    add_option(parser, "capstone")
    args = parser.parse_args(argv)
    figures = run(args.seeds, args.threads)
    return save(args.record, "the capstone's reference run: training seconds and greedy "
                "sequence accuracy on 512 held-out reversals", figures,
                load_average=[round(x, 2) for x in os.getloadavg()])


if __name__ == "__main__":
    main()
