"""What does Muon (``--optimizer muon``, transformer/training/muon.py) cost per update?

Muon adds five Newton-Schulz iterations per layer matrix to each update (batched by
shape: 48 matrices of 128 x 128 and 16 of 128 x 256 in the ``tiny`` preset), about 2.3
billion multiply-adds against the update's 14 billion. This builds the trainer of ``make
train-tiny`` (tiny preset, dropout 0.2, 2,048-token updates, ``--precision auto``) as
``python -m transformer train`` does and times real updates on the same batches and
weights with Adam and with Muon + Adam in turn, ``--updates`` each per round, so a change
in the machine's speed hits both alike. Reported: seconds per update per round, and the
median over rounds of Muon's time over Adam's.

    python -m benchmarks.cpu.optimizer_speed                 # 3 rounds of 40 updates
    python -m benchmarks.cpu.optimizer_speed --rounds 5 --updates 20
"""
from __future__ import annotations

import argparse
import statistics
import tempfile

import torch

from benchmarks.record import add_option, save
from transformer.training.loop import Trainer
from transformer.training.optimizers import make_optimizer
from transformer.training.recipes import recipe
from transformer.measuring.timing import Stopwatch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--updates", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data-root", default=None, help="default: $TRANSFORMER_DATA")
    add_option(p, "optimizer_speed")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cfg = recipe("tiny", out_dir=scratch, data_root=args.data_root, optimizer="adam",
                     threads=args.threads, save_every=10**6, progress=False)
        trainer = Trainer.from_config(cfg)
        optimizers = {"adam": trainer.optimizer, "muon": make_optimizer(trainer.model, "muon")}
        batches = iter(trainer.train_iter)

        def seconds_per_update(n: int) -> float:
            nonlocal batches
            with Stopwatch() as watch:
                for _ in range(n):
                    micro, n_tokens = trainer.next_micro_batches(batches)
                    if not micro:                                  # the epoch ended
                        batches = iter(trainer.train_iter)
                        micro, n_tokens = trainer.next_micro_batches(batches)
                    trainer.train_update(micro, n_tokens)
            return watch.seconds / n

        seconds_per_update(10)                                 # warm-up, not timed
        ratios, rounds = [], []
        for r in range(args.rounds):
            times = {}
            for name, optimizer in optimizers.items():
                trainer.optimizer = optimizer
                times[name] = seconds_per_update(args.updates)
            ratios.append(times["muon"] / times["adam"])
            rounds.append({"adam_s": round(times["adam"], 4), "muon_s": round(times["muon"], 4)})
            print(f"round {r}: adam {times['adam']:.3f} s, muon {times['muon']:.3f} s an "
                  f"update, {ratios[-1]:.2f}x", flush=True)
        print(f"muon / adam, median of {args.rounds} rounds: {statistics.median(ratios):.2f}x "
              f"(torch {torch.__version__}, {args.threads} threads)")
        save(args.record, "make train-tiny's updates with Adam and with Muon + Adam in turn, "
             "same batches and weights: seconds per update per round",
             {"rounds": rounds, "muon_over_adam_median": round(statistics.median(ratios), 3)},
             precision=trainer.precision, threads=args.threads)


if __name__ == "__main__":
    main()
