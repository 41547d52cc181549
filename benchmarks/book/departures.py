"""The book recipe against the paper, one departure at a time, two seeds each: valid BLEU
written as a result record.

    python -m benchmarks.book.departures --work DIR --record book/results/book_departures.json

Trains the recipe ``book`` (chapter 7's model: Muon, pre-norm, no dropout) and, for each
departure a switch sets back to the paper's (:data:`VARIANTS`: the paper's Adam for every
weight, post-norm, dropout 0.1), the same recipe with that one setting changed, each with
seeds 1 and 2: eight runs of the recipe's length, two at a time on one thread each (two
one-thread runs get more updates out of two cores than one two-thread run; the record keeps
each run's training seconds). A run whose folder under ``--work`` holds a finished ``average.pt``
of the same settings is not trained again, so an interrupted measurement resumes. Each
run's ``average.pt`` (its last 5 checkpoints averaged, as the recipe keeps them) is scored
with beam 4 and the paper's length penalty 0.6 on each corpus's valid split (the test
splits stay unseen: this record chooses settings). The record keeps each run's valid BLEU
and chrF2, the trainer's NLL on both valid splits at the end, and the commit that trained it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks import REPO
from benchmarks.book.model import run_summary
from benchmarks.record import add_option, save

SEEDS = (1, 2)
# name -> (the departure of transformer.training.recipes.DEPARTURES["book"] it sets back to
# the paper's, or None for the recipe itself; the `train` options that do it; what the run is)
VARIANTS = {
    "book": (None, [], "the recipe book: Muon + Adam, pre-norm, no dropout"),
    "adam": ("optimizer", ["--optimizer", "adam"], "the paper's Adam for every weight"),
    "post": ("norm_position", ["--model", "dropout=0.0", "--model", "norm_position=post"],
             "post-norm, the paper's"),
    "drop01": ("dropout", ["--model", "dropout=0.1"], "dropout 0.1, the paper's"),
}
BEAM, ALPHA = 4, 0.6


def command(folder: Path, seed: int, options: list[str]) -> list[str]:
    """The `train` command of one run: the recipe on one thread, ``options`` changed."""
    return [sys.executable, "-m", "transformer", "train", "--recipe", "book", "--threads", "1",
            "--seed", str(seed), "--out", str(folder), *options]


def expected_settings(seed: int, options: list[str]) -> dict:
    """The settings a finished run of these options must have in its run.json (the ones a
    variant changes, and the seed), so that a folder of another run is never reused."""
    from transformer.training.recipes import recipe
    cfg = recipe("book")
    overrides = dict(cfg.model_overrides)
    optimizer = cfg.optimizer
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--optimizer":
            optimizer = value
        elif flag == "--model":
            field, raw = value.split("=", 1)
            overrides[field] = float(raw) if field == "dropout" else raw
    return {"seed": seed, "optimizer": optimizer, "model_overrides": overrides}


def check_run(folder: Path, seed: int, options: list[str]) -> None:
    """Refuse a finished run whose settings are not this variant's."""
    settings = json.loads((folder / "run.json").read_text())["train"]
    want = expected_settings(seed, options)
    got = {k: settings.get(k) for k in want}
    if got != want:
        raise SystemExit(f"{folder}/run.json: settings {got}, expected {want}; remove the "
                         f"folder or choose another --work")


def train_all(work: Path) -> None:
    """Train every run not finished yet, two at a time."""
    todo = [(work / f"{name}_s{seed}", seed, options)
            for name, (_, options, _) in VARIANTS.items() for seed in SEEDS
            if not (work / f"{name}_s{seed}" / "average.pt").exists()]
    for pair in (todo[i:i + 2] for i in range(0, len(todo), 2)):
        running = []
        for folder, seed, options in pair:
            log = open(folder.with_suffix(".train.log"), "w")
            running.append((folder, log, subprocess.Popen(command(folder, seed, options),
                                                          cwd=REPO, stdout=log, stderr=log)))
        for folder, log, process in running:
            if process.wait():
                raise SystemExit(f"training {folder} failed; its log: {log.name}")
            log.close()


def valid_scores(folder: Path) -> dict:
    """Beam search on each corpus's valid split: {corpus: {"bleu", "chrf"}}."""
    from transformer.data import load_corpus, part_names
    from transformer.evaluate import score
    from transformer.inference import load_model
    from transformer.translation import translate
    settings = json.loads((folder / "run.json").read_text())["train"]
    model, tokenizer = load_model(folder / "average.pt")
    scores = {}
    for corpus in part_names(settings["corpus"]):
        valid = load_corpus(corpus, "valid", settings.get("direction", "en-de"))
        result = score(translate(model, tokenizer, valid.src, beam_size=BEAM, alpha=ALPHA),
                       valid.tgt)
        scores[Path(corpus).name] = {"bleu": round(result["bleu"], 1),
                                     "chrf": round(result["chrf"], 1)}
    return scores


def final_nll(folder: Path) -> float | None:
    """The trainer's NLL on the valid splits at the run's last evaluation."""
    final = None
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("final"):
            final = row
    return round(final["valid_nll"], 3) if final and "valid_nll" in final else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True, help="folder of the runs (kept; reused when run again)")
    p.add_argument("--threads", type=int, default=2, help="threads for the scoring")
    add_option(p, "book_departures")
    args = p.parse_args(argv)
    import torch
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    train_all(work)
    torch.set_num_threads(args.threads)
    variants = []
    for name, (departure, options, what) in VARIANTS.items():
        runs = []
        for seed in SEEDS:
            folder = work / f"{name}_s{seed}"
            check_run(folder, seed, options)
            summary = run_summary(folder)
            trained = json.loads((folder / "summary.json").read_text())["provenance"]
            runs.append({"seed": seed, "valid_beam4": valid_scores(folder),
                         "valid_nll_at_end": final_nll(folder), "updates": summary["updates"],
                         "train_s": summary["train_s"], "precision": summary["precision"],
                         "trained_at": trained["commit"]})
            print(name, seed, runs[-1]["valid_beam4"], flush=True)
        variants.append({"name": name, "departure": departure, "what": what,
                         "train_options": options, "runs": runs})
    save(args.record, "the recipe book and, one at a time, each of its departures set back to "
                      "the paper's (Adam, post-norm, dropout 0.1), seeds 1 and 2: BLEU / chrF2 "
                      f"with beam {BEAM} (alpha {ALPHA}) on each corpus's valid split, the last "
                      "5 checkpoints averaged",
         {"recipe": "book", "seeds": list(SEEDS), "variants": variants}, threads=args.threads)


if __name__ == "__main__":
    main()
