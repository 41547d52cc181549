"""Preparing a WMT14-sized corpus once, then reading it from several training processes.

    python -m benchmarks.cpu.prepare_speed --record book/results/prepare_wmt14_scale.json

WMT14 English-German has about 4.5M sentence pairs and is not on this machine, so the
script builds a stand-in of the same size from Tatoeba's train split: each synthetic pair
joins ``--join`` Tatoeba pairs (4: some 26 English words, where a Tatoeba sentence has 6.5;
news sentences are long), drawn in a fresh random order on each pass over Tatoeba, until
``--pairs`` pairs. Then, each in a fresh process:

1. ``python -m transformer prepare`` with the base-wmt14 recipe's vocabulary (37,000) and
   seed, the default BPE sample and ``--workers`` encoding processes: its wall time and
   peak resident size (the largest of it and its workers, from wait4);
2. ``--ranks`` processes at once, as many DDP ranks on one machine: each maps the prepared
   folder, builds the epoch's batch plan with the recipe's batching (3,125 tokens, max_len
   128, seed 1) and collates every batch of the epoch (as every rank does: the trainer
   keeps each rank's share of each group of batches), reporting its tokens/s (source and
   target tokens, padding excluded), its peak resident size (VmHWM, which counts the mapped
   file's pages in full in every process though the page cache holds them once) and its
   peak private memory (RssAnon, sampled every 0.1 s).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from benchmarks.record import add_option, save
from transformer.measuring.timing import Stopwatch

# one reading process (a DDP rank), run with `python -c RANK FOLDER LIMIT_S`
RANK = textwrap.dedent('''
    import json, sys, threading, time
    def status():
        with open("/proc/self/status") as f:
            return {l.split(":")[0]: int(l.split()[1]) / 1024 for l in f
                    if l.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile"))}
    peak = {"RssAnon": 0.0}
    done = threading.Event()
    def sample():
        while not done.wait(0.1):
            peak["RssAnon"] = max(peak["RssAnon"], status()["RssAnon"])
    threading.Thread(target=sample, daemon=True).start()
    import torch
    from transformer.training.corpus_files import PreparedCorpus
    from transformer.training.recipes import recipe
    from transformer.measuring.timing import Stopwatch
    torch.set_num_threads(1)
    cfg = recipe("base-wmt14")
    with Stopwatch() as planning:
        it = PreparedCorpus(sys.argv[1]).batch_iterator(
            "train", cfg.direction, cfg.max_tokens, seed=cfg.seed, max_len=cfg.max_len)
        n_batches = len(it)
    plan_s = planning.seconds
    after_plan = status()
    limit = float(sys.argv[2])
    tokens = target = batches = 0
    with Stopwatch() as reading:
        deadline = time.monotonic() + limit
        for batch in it:
            tokens += batch.n_src_tokens + batch.n_tgt_tokens
            target += batch.n_tgt_tokens
            batches += 1
            if limit and time.monotonic() > deadline:
                break
    seconds = reading.seconds
    done.set()
    end = status()
    peak["RssAnon"] = max(peak["RssAnon"], end["RssAnon"])
    print(json.dumps({
        "plan_s": round(plan_s, 2), "batches_in_epoch": n_batches, "batches": batches,
        "skipped_pairs": it.n_skipped, "tokens": tokens, "seconds": round(seconds, 1),
        "tokens_per_s": round(tokens / seconds), "target_tokens_per_s": round(target / seconds),
        "peak_rss_mb": round(end["VmHWM"]), "peak_private_mb": round(peak["RssAnon"]),
        "private_mb_after_plan": round(after_plan["RssAnon"]),
        "file_pages_mb_at_end": round(end["RssFile"])}))
''')


def synthetic_corpus(folder: Path, pairs: int, join: int, seed: int = 0) -> dict:
    """Tatoeba's train pairs joined ``join`` at a time, to ``pairs`` pairs; valid as is."""
    from transformer.corpora import data_dir
    from transformer.data import load_corpus
    train = load_corpus("tatoeba-en-de", "train")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    words = written = 0
    with open(folder / "train.src", "w", encoding="utf-8") as en, \
            open(folder / "train.tgt", "w", encoding="utf-8") as de:
        while written < pairs:
            order = rng.permutation(len(train))
            groups = order[:len(order) // join * join].reshape(-1, join)[:pairs - written]
            en_lines = [" ".join(train.src[i] for i in g) for g in groups.tolist()]
            words += sum(line.count(" ") + 1 for line in en_lines)
            en.write("\n".join(en_lines) + "\n")
            de.write("\n".join(" ".join(train.tgt[i] for i in g) for g in groups.tolist()) + "\n")
            written += len(groups)
    for side in ("src", "tgt"):
        with gzip.open(data_dir() / "tatoeba-en-de" / f"valid.{side}.gz", "rb") as f:
            (folder / f"valid.{side}").write_bytes(f.read())
    return {"pairs": written, "join": join, "english_words_per_pair": round(words / written, 1),
            "text_mb": round(sum((folder / f"train.{s}").stat().st_size
                                 for s in ("src", "tgt")) / 2**20)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=4_500_000)
    p.add_argument("--join", type=int, default=4, help="Tatoeba pairs per synthetic pair")
    p.add_argument("--workers", type=int, default=0, help="prepare's --workers")
    p.add_argument("--ranks", type=int, default=2, help="reading processes run at once")
    p.add_argument("--iterate-s", type=float, default=0,
                   help="stop each reader after this many seconds (0: a whole epoch)")
    p.add_argument("--scratch", default="/tmp/prepare_speed",
                   help="where the synthetic corpus and the prepared folder go (removed and "
                        "rewritten)")
    add_option(p, "prepare_wmt14_scale")
    args = p.parse_args(argv)
    import shutil
    from transformer.training.recipes import recipe
    scratch = Path(args.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    with Stopwatch() as building:
        corpus = synthetic_corpus(scratch / "corpus", args.pairs, args.join)
    corpus["build_s"] = round(building.seconds, 1)
    print(f"synthetic corpus: {corpus}", flush=True)

    cfg = recipe("base-wmt14")
    out = scratch / "prepared"
    command = [sys.executable, "-m", "transformer", "prepare", "--corpus",
               str(scratch / "corpus"), "--out", str(out), "--vocab-size", str(cfg.vocab_size),
               "--seed", str(cfg.seed), "--workers", str(args.workers)]
    with Stopwatch() as preparing:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n").replace(str(scratch), "SCRATCH"))
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = preparing.seconds
    if status != 0:
        raise SystemExit(f"prepare failed (status {status})")
    manifest = json.loads((out / "prepared.json").read_text())
    prepare = {"command": " ".join(command[1:]).replace(str(scratch), "SCRATCH"),
               "seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
               "log": lines, "bpe_pairs": manifest["bpe_pairs"],
               "train_tokens": manifest["splits"]["train"]["tokens"],
               "folder_mb": round(sum(f.stat().st_size for f in out.iterdir()) / 2**20)}

    readers = [subprocess.Popen([sys.executable, "-c", RANK, str(out), str(args.iterate_s)],
                                stdout=subprocess.PIPE, text=True)
               for _ in range(args.ranks)]
    ranks = []
    for r in readers:
        out_text, _ = r.communicate()
        if r.returncode:
            raise SystemExit(f"a reader failed (status {r.returncode})")
        ranks.append(json.loads(out_text.strip().splitlines()[-1]))
    for i, rank in enumerate(ranks):
        print(f"reader {i}: {rank}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    save(args.record,
         f"{args.pairs:,} synthetic pairs the size of WMT14 (Tatoeba's train, {args.join} "
         f"pairs joined per pair) prepared with python -m transformer prepare (base-wmt14's "
         f"37,000 pieces, the default BPE sample), then read by {args.ranks} processes at "
         f"once, each collating every batch of an epoch with base-wmt14's batching",
         {"corpus": corpus, "prepare": prepare,
          "batching": {"max_tokens": cfg.max_tokens, "max_len": cfg.max_len, "seed": cfg.seed},
          "readers": ranks},
         note="peak_rss_mb is VmHWM: it counts the mapped token files' pages in every "
              "process, though the page cache holds them once; peak_private_mb (RssAnon) is "
              "what each further process adds")


if __name__ == "__main__":
    main()
