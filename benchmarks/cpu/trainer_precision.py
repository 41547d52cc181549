"""Training tokens/s of the real trainer at the CPU preset, fp32 against bf16 autocast.

    python -m benchmarks.cpu.trainer_precision                  # Multi30k, 60 updates each
    python -m benchmarks.cpu.trainer_precision --updates 100 --threads 1

Runs ``transformer.training.loop.Trainer`` itself (token-bucketed Multi30k batches, label-smoothed
loss, fused Adam, the schedule) for ``--updates`` updates in each precision, in fresh
folders that share one BPE vocabulary, and reports the median of the target tokens/s the
trainer logs every 10 updates, skipping the first ``--skip`` logged values (warm-up).
Both precisions see the same batches in the same order (same seed). The corpus is read
from ``$TRANSFORMER_DATA`` (or ``--data-root``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import torch

from benchmarks.record import add_option, save
from transformer.tokenizer import Tokenizer
from transformer.training.loop import Trainer
from transformer.training.recipes import recipe
from transformer.measuring.timing import Stopwatch


def run(precision: str, out: Path, args, tokenizer=None) -> dict:
    cfg = recipe("small", out_dir=str(out), corpus=args.corpus, data_root=args.data_root,
                 precision=precision, threads=args.threads, max_updates=args.updates,
                 time_limit_min=0, save_every=10**9, eval_bleu_sentences=0, progress=False)
    with Stopwatch() as watch:
        Trainer.from_config(cfg, tokenizer=tokenizer).fit()
    wall = watch.seconds
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rates = [r["tokens_per_s"] for r in logged if "tokens_per_s" in r][args.skip:]
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "wall": wall}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="multi30k-en-de")
    p.add_argument("--data-root", default=None)
    p.add_argument("--updates", type=int, default=60)
    p.add_argument("--skip", type=int, default=1, help="logged values to skip (warm-up)")
    p.add_argument("--threads", type=int, default=2)
    add_option(p, "trainer_precision")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = {}
        for precision in ("fp32", "bf16"):
            # the second run is handed the first run's BPE model
            tokenizer = Tokenizer.load(tmp / "fp32" / "spm.model") if results else None
            results[precision] = run(precision, tmp / precision, args, tokenizer)
    print(f"trainer, small preset, {args.corpus}, {args.updates} updates of ~4096 target "
          f"tokens, {args.threads} thread(s), torch {torch.__version__}")
    for precision, r in results.items():
        print(f"  {precision}: median {r['median']:,.0f} target tokens/s "
              f"(range {r['min']:,.0f}-{r['max']:,.0f}; {r['wall']:.0f} s wall incl. set-up)")
    ratio = results['bf16']['median'] / results['fp32']['median']
    print(f"  bf16 / fp32: {ratio:.2f}x")
    save(args.record, f"the real Trainer, small preset, {args.corpus}, {args.updates} updates "
         "of about 4,096 target tokens in each precision: median target tokens/s",
         {"fp32_tokens_per_s": round(results["fp32"]["median"]),
          "bf16_tokens_per_s": round(results["bf16"]["median"]),
          "bf16_over_fp32": round(ratio, 3)}, threads=args.threads)


if __name__ == "__main__":
    main()
