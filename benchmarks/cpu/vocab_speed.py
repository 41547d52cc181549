"""Does a smaller BPE vocabulary make the 30-minute recipe's update faster?

The pre-softmax projection and the loss cost about V * d_model per target token, so a
smaller vocabulary V looks like a cheaper step. But a smaller vocabulary also cuts each
sentence into more pieces, and an update holds at most 4,096 padded slots on each side
(``--max-tokens``), so it holds fewer sentences. What the recipe gains is sentences per
second.

For each size this trains the shared BPE vocabulary on Multi30k's train split (as
``python -m transformer train`` does), builds the trainer of the 30-minute recipe as it was
measured (``make train-tiny`` of 2026-12-01: tiny preset, dropout 0.2, bf16, 4,096-token
updates; README; here ``--precision auto``, bf16 on CPUs with bf16 instructions) and then
times real updates in rounds, ``--updates`` per size per round, the sizes taking turns (in
a rotated order each round), so a change in the machine's speed during the run hits every
size alike. Reported:
seconds per update, target pieces per German sentence (with the end token), sentences per
update, sentences per second and that as a ratio to the first size; and, for each size,
the wall and CPU seconds of training the BPE vocabulary itself (``Tokenizer.train`` on
both sides of the train split: the time tests/test_tokenizer.py no longer bounds).

    python -m benchmarks.cpu.vocab_speed                     # 8000 5000 4000, 5 rounds
    python -m benchmarks.cpu.vocab_speed --vocab 8000 4000 --rounds 2
    python -m benchmarks.cpu.vocab_speed --max-tokens 2048   # the current recipe's updates
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.cpu.trainer import recipe_trainer
from benchmarks.record import add_option, save
from transformer.measuring.timing import Stopwatch


def vocabulary_seconds(sizes, scratch: Path, data_root) -> dict:
    """For each size, the Stopwatch of training that BPE vocabulary on both sides of
    Multi30k's train split (as the trainer does, transformer/training/vocabulary.py)."""
    from transformer.data import load_corpus
    from transformer.tokenizer import Tokenizer
    train = load_corpus("multi30k-en-de", "train", root=data_root)
    texts = list(train.src) + list(train.tgt)
    watches = {}
    for v in sizes:
        with Stopwatch() as watch:
            Tokenizer.train(texts, scratch / f"bpe{v}.model", vocab_size=v, seed=0)
        watches[v] = watch
    return watches


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=int, nargs="+", default=[8000, 5000, 4000])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--updates", type=int, default=20, help="updates per size per round")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=4096,
                   help="tokens per update (4096: the recipe of 2026-12-01; 2048: the current one)")
    p.add_argument("--data-root", default=None,
                   help="the data dir (default: as the trainer: $TRANSFORMER_DATA, else "
                        "../shared/data beside this checkout)")
    add_option(p, "vocab_speed")
    args = p.parse_args()

    runs = {}
    with tempfile.TemporaryDirectory() as scratch:    # run folders, needed only at set-up
        bpe = vocabulary_seconds(args.vocab, Path(scratch), args.data_root)
        for v in args.vocab:
            trainer = recipe_trainer(v, Path(scratch), args.threads, args.data_root,
                                     args.max_tokens)
            lengths = trainer.train_iter.tgt_lengths            # target pieces + end token
            batches = iter(trainer.train_iter)
            trainer.train_update(*trainer.next_micro_batches(batches))  # untimed warm-up
            runs[v] = {"trainer": trainer, "batches": batches,
                       "pieces": sum(lengths) / len(lengths),
                       "seconds": 0.0, "sentences": 0, "updates": 0}
    for r in range(args.rounds):
        for v in args.vocab[r % len(args.vocab):] + args.vocab[:r % len(args.vocab)]:
            run = runs[v]
            with Stopwatch() as watch:
                for _ in range(args.updates):
                    micro_batches, n_tokens = run["trainer"].next_micro_batches(run["batches"])
                    if not micro_batches:                  # end of an epoch: the next one
                        run["batches"] = iter(run["trainer"].train_iter)
                        micro_batches, n_tokens = run["trainer"].next_micro_batches(
                            run["batches"])
                    run["sentences"] += sum(len(b) for b in micro_batches)
                    run["trainer"].train_update(micro_batches, n_tokens)
            run["seconds"] += watch.seconds
            run["updates"] += args.updates
        print(f"round {r + 1}/{args.rounds} done", flush=True)

    first = runs[args.vocab[0]]
    base_rate = first["sentences"] / first["seconds"]
    print(f"{'vocabulary':>10} {'s/update':>9} {'pieces/sentence':>16} "
          f"{'sentences/update':>17} {'sentences/s':>12} ratio")
    rows = []
    for v in args.vocab:
        run = runs[v]
        rate = run["sentences"] / run["seconds"]
        print(f"{v:>10} {run['seconds'] / run['updates']:>9.3f} {run['pieces']:>16.2f} "
              f"{run['sentences'] / run['updates']:>17.1f} {rate:>12.0f} {rate / base_rate:.3f}")
        rows.append({"vocab": v, "s_per_update": round(run["seconds"] / run["updates"], 3),
                     "pieces_per_sentence": round(run["pieces"], 2),
                     "sentences_per_s": round(rate), "ratio": round(rate / base_rate, 3),
                     "bpe_train_s": round(bpe[v].seconds, 2),
                     "bpe_train_cpu_s": round(bpe[v].cpu_seconds, 2)})
    print("BPE vocabulary training on the train split: " + ", ".join(
        f"{v:,} pieces {bpe[v].seconds:.1f} s ({bpe[v].cpu_seconds:.1f} s CPU)" for v in args.vocab))
    save(args.record, f"make train-tiny's {args.max_tokens}-token updates at "
         f"{len(args.vocab)} BPE vocabulary sizes: sentences per second, "
         f"{args.rounds} rounds of {args.updates} updates", {"rows": rows},
         precision=first["trainer"].precision, threads=args.threads)


if __name__ == "__main__":
    main()
