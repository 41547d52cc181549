"""Host memory of a CPU training run: resident size and tokens/s over the updates.

    python benchmarks/host_memory.py --updates 1000                 # as the trainer runs
    python benchmarks/host_memory.py --updates 1000 --trim-every 0  # no malloc_trim

Trains the CPU preset on Multi30k with the ``make train-small`` settings (bf16, 2 threads,
4,096-token updates) for ``--updates`` updates and logs the resident set size (VmRSS) next
to the trainer's tokens/s every 10 updates. ``--trim-every N`` sets how often the trainer
hands free heap pages back to the OS (``transformer.host_memory``; 0: never). Prints the
peak resident size (VmHWM) and the median tokens/s after the first 100 updates.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from transformer import host_memory, trainer as trainer_module
from transformer.train_config import TrainConfig
from transformer.trainer import Trainer


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--updates", type=int, default=1000)
    p.add_argument("--trim-every", type=int, default=None,
                   help="updates between malloc_trim calls (default: the trainer's)")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    if args.trim_every is not None:
        trainer_module.TRIM_EVERY = args.trim_every
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(out_dir=tmp, corpus="multi30k-en-de", preset="small",
                          vocab_size=8000, max_tokens=4096, update_tokens=4096, warmup=400,
                          lr_factor=0.5, precision=args.precision, threads=args.threads,
                          max_updates=args.updates, save_every=10**9, eval_bleu_sentences=0,
                          log_every=10, progress=False)
        trainer = Trainer.from_config(cfg)
        log = trainer.log

        def log_with_memory(record):
            record["rss_mb"] = host_memory.resident_mb()[0]
            log(record)

        trainer.log = log_with_memory
        trainer.fit()
        records = [json.loads(line) for line in Path(tmp, "metrics.jsonl").read_text().splitlines()]
    updates = [r for r in records if "tokens_per_s" in r]
    rss = [(r["step"], r["rss_mb"]) for r in updates]
    rates = [r["tokens_per_s"] for r in updates if r["step"] > 100]
    print(f"{args.updates} updates, trim every {trainer_module.TRIM_EVERY}, {args.precision}, "
          f"{args.threads} threads")
    for step, mb in rss[::max(1, len(rss) // 10)] + rss[-1:]:
        print(f"  update {step:5d}: resident {mb:7.0f} MiB")
    print(f"peak resident (VmHWM) {host_memory.resident_mb()[1]:.0f} MiB; median "
          f"{statistics.median(rates):,.0f} target tokens/s after update 100")


if __name__ == "__main__":
    main()
