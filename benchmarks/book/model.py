"""How well the book's model translates: BLEU and chrF on the test split of every corpus
it was trained for, written as a result record.

    python -m benchmarks.book.model --record book/results/book_model.json
    python -m benchmarks.book.model --checkpoint OLD/average.pt --corpora multi30k-en-de \\
        tatoeba-en-de --record book/results/book_model_before.json

Without ``--checkpoint`` it scores the book's model (the recipe ``book``, chapter 7's
cached run; trained first if the cache lacks it) on the test split of each corpus of the
recipe (each part of a mixture: Multi30k's test2016 and Tatoeba's test), with beam 4 and
the paper's length penalty 0.6, and with greedy search as the page's default. The record
holds the run's settings and length (updates, training seconds) beside the scores.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.record import add_option, save
from transformer.measuring.timing import Stopwatch


def run_summary(folder: Path) -> dict:
    """The run's recipe settings and length (updates, training seconds, precision), from its
    run.json and the final record of its metrics.jsonl."""
    summary = {"settings": json.loads((folder / "run.json").read_text())["train"]}
    records = []
    metrics = folder / "metrics.jsonl"
    for line in (metrics.read_text().splitlines() if metrics.exists() else []):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:          # a torn line of a crash: the run resumed
            continue
    final = [r for r in records if r.get("final")]
    if final:
        trained = [r["elapsed_s"] for r in records if "elapsed_s" in r]
        seconds = final[-1].get("train_seconds", trained[-1] if trained else None)
        summary.update(updates=final[-1]["step"],
                       train_s=None if seconds is None else round(seconds, 1),
                       precision=final[-1].get("precision") or _precision(folder))
    return summary


def _precision(folder: Path) -> str | None:
    """What the run's newest checkpoint says it trained in (runs whose final metrics
    record does not say)."""
    import torch
    saved = sorted((folder / "checkpoints").glob("step_*.pt"))
    return torch.load(saved[-1], map_location="cpu", weights_only=True).get("precision") \
        if saved else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", help="default: the book's model (recipe book)")
    p.add_argument("--corpora", nargs="+", help="default: the parts of the run's corpus")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="the first N sentences only (0: all)")
    p.add_argument("--trained-at", help="the commit whose package trained --checkpoint, when "
                                        "not this one (kept in the record)")
    add_option(p, "book_model")
    args = p.parse_args(argv)
    import torch
    from transformer.data import load_corpus, part_names
    from transformer.translation import translate
    from transformer.evaluate import score
    from transformer.inference import load_model
    torch.set_num_threads(args.threads)
    if args.checkpoint:
        checkpoint = Path(args.checkpoint)
    else:
        from transformer.training.cache import cached_run
        from transformer.training.recipes import recipe
        checkpoint = cached_run(recipe("book")) / "average.pt"     # the book's run
    summary = run_summary(checkpoint.parent)
    corpora = args.corpora or part_names(summary["settings"]["corpus"])
    model, tokenizer = load_model(checkpoint)
    scores = {}
    for corpus in corpora:
        test = load_corpus(corpus, "test", summary["settings"].get("direction", "en-de"))
        src, ref = test.src[:args.limit or None], test.tgt[:args.limit or None]
        scores[Path(corpus).name] = row = {"sentences": len(src)}
        for name, beam, alpha in (("beam4", 4, 0.6), ("greedy", 1, 0.6)):
            with Stopwatch() as watch:
                hyps = translate(model, tokenizer, src, beam_size=beam, alpha=alpha)
                result = score(hyps, ref)
            row[name] = {"bleu": round(result["bleu"], 1), "chrf": round(result["chrf"], 1),
                         "seconds": round(watch.seconds, 1)}
            row["signature"] = result["bleu_signature"]
            print(f"{corpus} test, {name}: BLEU {row[name]['bleu']} chrF2 {row[name]['chrf']}")
    save(args.record, "the book's model on each corpus's test split (sacreBLEU), beam 4 "
                      "with alpha 0.6 and greedy",
         {"checkpoint": str(checkpoint), "parameters": model.num_parameters(),
          "run": summary, "test": scores}, threads=args.threads,
         **({"trained_at": args.trained_at} if args.trained_at else {}))


if __name__ == "__main__":
    main()
