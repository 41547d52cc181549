"""Chapter 11's reading of Table 3: each row of the committed study
(``book/results/table3.json``, written by ``python -m transformer ablate``) against its base,
next to the paper's change for the same row, and a verdict.

A verdict compares signs only where both sides show an effect:

* **did not train**: the row's dev perplexity is more than :data:`DID_NOT_TRAIN` times the
  base's. Such a model is far behind the base at the end of the shared budget, so its BLEU
  change says how far behind, not what the setting does; it is never compared with the paper.
* **no clear effect in the paper**: the paper's BLEU change is smaller than
  :data:`PAPER_MIN_BLEU`. The paper reports one run per row, without error bars, and calls a
  difference of 0.1 "nearly identical"; its conclusions rest on differences of 0.4 and more.
* **within the seed spread**: this book's change is no larger than its seed-to-seed spread.
* otherwise **agrees** or **disagrees**: whether the two changes have the same sign.

This module belongs to the book, not to the ``transformer`` library.
"""
from __future__ import annotations

import math

DID_NOT_TRAIN = 2.0          # dev perplexity above this many times the base's: did not train
PAPER_MIN_BLEU = 0.4         # a paper BLEU change below this (in points) is no clear effect

NOT_IN_PAPER = "not in the paper"
NOT_TRAINED = "did not train"
NO_PAPER_EFFECT = "no clear effect in the paper"
NOISE = "within the seed spread"
AGREES, DISAGREES = "agrees", "disagrees"
VERDICTS = (NOT_TRAINED, NOT_IN_PAPER, NO_PAPER_EFFECT, NOISE, AGREES, DISAGREES)


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def by_row(results: dict) -> dict[str, list[dict]]:
    """The results file's runs grouped by row name (a row may have run with several seeds)."""
    rows: dict[str, list[dict]] = {}
    for run in results["rows"]:
        rows.setdefault(run["row"], []).append(run)
    return rows


def ours(runs: list[dict], key: str) -> float | None:
    """Mean over seeds of a row's figure (None when every run of it diverged)."""
    values = [r[key] for r in runs if not r.get("diverged")]
    return mean(values) if values else None


def spread(runs: list[dict], key: str) -> float | None:
    """Half the range over seeds of a row's BLEU (or log perplexity), None with one seed."""
    values = [r[key] if key == "dev_bleu" else math.log(r[key]) for r in runs if not r.get("diverged")]
    return (max(values) - min(values)) / 2 if len(values) > 1 else None


def changes(results: dict, rows) -> dict[str, dict]:
    """Each row of ``rows`` (``ablation.ROWS``) that has a score, against the base: BLEU change
    ``bleu`` with its error ``bleu_err`` (the row's seed spread, or the base's, combined with
    the base's), perplexity ratio ``ppl`` with the error of its logarithm ``lppl_err``, and the
    paper's changes ``paper_bleu`` and ``paper_ppl`` (None where the paper has no such row)."""
    runs = by_row(results)
    base = next(row for row in rows if row.name == "base")
    base_runs = runs.get("base")
    if not base_runs:        # records.load refuses such a record, naming its file
        raise ValueError("the Table 3 results hold no run of the base row: every row is "
                         "measured against it")
    base_bleu, base_ppl = ours(base_runs, "dev_bleu"), ours(base_runs, "dev_ppl")
    base_err = {key: spread(base_runs, key) for key in ("dev_bleu", "dev_ppl")}

    def error(name, key):
        own = spread(runs[name], key)
        own = base_err[key] if own is None else own
        return None if own is None or base_err[key] is None else math.hypot(own, base_err[key])

    out = {}
    for row in rows:
        if row.name == "base" or ours(runs.get(row.name, []), "dev_bleu") is None:
            continue
        out[row.name] = {
            "bleu": ours(runs[row.name], "dev_bleu") - base_bleu,
            "ppl": ours(runs[row.name], "dev_ppl") / base_ppl,
            "bleu_err": error(row.name, "dev_bleu"), "lppl_err": error(row.name, "dev_ppl"),
            "paper_bleu": row.paper and round(row.paper["bleu"] - base.paper["bleu"], 2),
            "paper_ppl": row.paper and row.paper["ppl"] / base.paper["ppl"]}
    return out


def verdict(change: dict) -> str:
    """The verdict on one row's ``change`` (an entry of :func:`changes`)."""
    if change["ppl"] > DID_NOT_TRAIN:
        return NOT_TRAINED
    if change["paper_bleu"] is None:
        return NOT_IN_PAPER
    if abs(change["paper_bleu"]) < PAPER_MIN_BLEU:
        return NO_PAPER_EFFECT
    if change["bleu_err"] is not None and abs(change["bleu"]) <= change["bleu_err"]:
        return NOISE
    return AGREES if (change["bleu"] > 0) == (change["paper_bleu"] > 0) else DISAGREES
