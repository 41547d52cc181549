"""Host memory of a CPU training run: resident size and tokens/s over the updates.

    python -m benchmarks.cpu.host_memory --updates 1000              # glibc's malloc
    python -m benchmarks.cpu.host_memory --updates 1000 --jemalloc   # as `python -m transformer`

Trains the CPU preset on Multi30k with the ``make train-small`` settings (``--precision
auto``: bf16 on a CPU with bf16 instructions, else fp32; 2 threads, 4,096-token updates)
for ``--updates`` updates and logs the resident set size next to the trainer's tokens/s
every 10 updates (the largest size seen since the last line, sampled
every 0.2 s). ``--jemalloc`` restarts the script under jemalloc with the settings the
command line uses (``transformer.tools.host_memory``). Prints the peak resident size (VmHWM)
and the median tokens/s after the first 100 updates.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from benchmarks.record import add_option, save
from transformer.tools import host_memory
from transformer.training.loop import Trainer
from transformer.training.recipes import recipe


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--updates", type=int, default=1000)
    p.add_argument("--jemalloc", action="store_true", help="run under jemalloc")
    p.add_argument("--precision", default="auto")
    p.add_argument("--threads", type=int, default=2)
    add_option(p, "host_memory")
    args = p.parse_args(argv)
    preload = os.environ.get("LD_PRELOAD", "")
    if args.jemalloc and "jemalloc" not in preload:
        host_memory.exec_with_jemalloc(sys.argv[1:], program=["-m", __spec__.name])
        raise SystemExit("no jemalloc to run under (apt-get install libjemalloc2; "
                         "TRANSFORMER_MALLOC unset)")
    allocator = (f"jemalloc ({os.environ.get('MALLOC_CONF', '')})" if "jemalloc" in preload
                 else "glibc malloc")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = recipe("small", out_dir=tmp, precision=args.precision, threads=args.threads,
                     max_updates=args.updates, time_limit_min=0, save_every=10**9,
                     eval_bleu_sentences=0, progress=False)
        trainer = Trainer.from_config(cfg)
        log, window = trainer.log, {"max": 0.0}
        done = threading.Event()

        def sample():                 # the largest resident size between two log lines
            while not done.wait(0.2):
                window["max"] = max(window["max"], host_memory.resident_mb()[0])

        def log_with_memory(record):
            record["rss_mb"] = max(window["max"], host_memory.resident_mb()[0])
            window["max"] = 0.0
            log(record)

        trainer.log = log_with_memory
        before = host_memory.resident_mb()[1]         # the set-up: corpus, BPE, model
        threading.Thread(target=sample, daemon=True).start()
        trainer.fit()
        done.set()
        closing = window["max"]          # after the last logged update: validation, saving
        records = [json.loads(line) for line in Path(tmp, "metrics.jsonl").read_text().splitlines()]
    updates = [r for r in records if "tokens_per_s" in r]
    rss = [(r["step"], r["rss_mb"]) for r in updates]
    rates = [r["tokens_per_s"] for r in updates if r["step"] > 100]
    print(f"{args.updates} updates, {allocator}, {args.precision}, {args.threads} threads")
    for step, mb in rss[::max(1, len(rss) // 10)] + rss[-1:]:
        print(f"  updates up to {step:5d}: resident at most {mb:7.0f} MiB")
    print(f"peak resident (VmHWM) {host_memory.resident_mb()[1]:.0f} MiB (set-up {before:.0f}, "
          f"closing validation and checkpoint {closing:.0f}); median "
          f"{statistics.median(rates):,.0f} target tokens/s after update 100")
    # One row per allocator: a record already at --record keeps the other allocators' rows
    # (run the script once under each, one after the other), each row with its command.
    row = {"allocator": allocator, "peak_gb": round(host_memory.resident_mb()[1] / 1024, 2),
           "tokens_per_s": round(statistics.median(rates)), "updates": args.updates,
           "command": " ".join(["python", "-m", __spec__.name, *sys.argv[1:]])}
    old = json.loads(Path(args.record).read_text()) if args.record and Path(args.record).exists() else {}
    rows = [r for r in old.get("rows", []) if r["allocator"] != allocator] + [row]
    save(args.record, f"{args.updates} updates of the small preset with make train-small's "
         "settings, one allocator after the other: peak resident size (VmHWM) and median "
         "target tokens/s after update 100", {"rows": rows}, precision=trainer.precision,
         threads=args.threads)


if __name__ == "__main__":
    main()
