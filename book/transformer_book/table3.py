"""Chapter 11's reading of Table 3: each row of the committed study
(``book/results/table3.json``, written by ``python -m transformer ablate``) against its base,
next to the paper's change for the same row, and a verdict.

A verdict compares signs only where both sides show an effect:

* **did not train**: the row's dev perplexity is more than :data:`DID_NOT_TRAIN` times the
  base's. Such a model is far behind the base at the end of the shared budget, so its BLEU
  change says how far behind, not what the setting does; it is never compared with the paper.
* **no clear effect in the paper**: the paper's BLEU change is :data:`PAPER_MIN_BLEU` or
  less. The paper reports one run per row, without error bars, and calls a difference of 0.1
  "nearly identical"; its conclusions rest on differences of 0.4 and more. The threshold is
  exclusive because Table 3 prints BLEU to one decimal: a printed difference of 0.4 may be
  0.3 and a bit (each figure rounded by up to 0.05), the size already read as no effect,
  while a printed 0.5 or more is above 0.4 whatever the rounding.
* **inconclusive**: this book's change is no larger than its error bar (see
  :func:`changes`), or there is no error bar (no row ran with two seeds): seed noise alone
  could have made it, so its sign says nothing.
* otherwise **agrees** or **disagrees**: whether the two changes have the same sign.

This module belongs to the book, not to the ``transformer`` library.
"""
from __future__ import annotations

import math

DID_NOT_TRAIN = 2.0          # dev perplexity above this many times the base's: did not train
PAPER_MIN_BLEU = 0.4         # a paper BLEU change of this (in points) or less is no clear effect

NOT_IN_PAPER = "not in the paper"
NOT_TRAINED = "did not train"
NO_PAPER_EFFECT = "no clear effect in the paper"
INCONCLUSIVE = "inconclusive"
AGREES, DISAGREES = "agrees", "disagrees"
VERDICTS = (NOT_TRAINED, NOT_IN_PAPER, NO_PAPER_EFFECT, INCONCLUSIVE, AGREES, DISAGREES)


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


def values(runs: list[dict], key: str) -> list[float]:
    """A row's BLEU (or log perplexity) for each seed that did not diverge."""
    return [r[key] if key == "dev_bleu" else math.log(r[key]) for r in runs if not r.get("diverged")]


def spread(runs: list[dict], key: str) -> float | None:
    """Half the range over seeds of a row's BLEU (or log perplexity), None with one seed:
    how far the row's mean lies from either of its seeds."""
    v = values(runs, key)
    return (max(v) - min(v)) / 2 if len(v) > 1 else None


def widest_gap(runs: dict[str, list[dict]], key: str) -> float | None:
    """The largest difference between two seeds of one row, over every row that ran with
    more than one (twice the largest :func:`spread`); None when no row did."""
    spreads = [s for s in (spread(rs, key) for rs in runs.values()) if s is not None]
    return 2 * max(spreads) if spreads else None


def error(runs: list[dict], key: str, gap: float | None) -> float | None:
    """The error bar of a row's mean BLEU (or log perplexity), given the study's
    :func:`widest_gap` ``gap``.

    With several seeds: half the row's range (its :func:`spread`, how far the mean lies from
    either seed), but no less than half of ``gap``. Two seeds that happen to land close
    together show luck as much as a quiet setting (the base's two seeds are 0.24 BLEU apart,
    those of A-h8, the same model with other head counts, 1.29), so the noise any row showed
    is the least assumed for every row.

    With one seed: the whole of ``gap``, not half of it. Half the range is the distance from
    the mean of two seeds to either seed; a one-seed row has no mean, and its seed may be the
    high or the low one of a pair as far apart as the widest seen (a one-seed A-h8 would have
    scored 8.11 or 9.40 depending on the seed), so its value is known only to within the
    whole gap.
    """
    own = spread(runs, key)
    if gap is None:
        return own
    return gap if own is None else max(own, gap / 2)


def changes(results: dict, rows) -> dict[str, dict]:
    """Each row of ``rows`` (``ablation.ROWS``) that has a score, against the base: BLEU change
    ``bleu`` with its error bar ``bleu_err``, perplexity ratio ``ppl`` with the error bar of
    its logarithm ``lppl_err``, and the paper's changes ``paper_bleu`` and ``paper_ppl`` (None
    where the paper has no such row).

    The error bar of a change is the row's :func:`error` plus the base's: the change is
    outside it exactly when the row's range (mean ± its error) and the base's do not overlap.
    The bars are the extremes of one or two seeds, not standard deviations of many, so they
    are added as intervals rather than in quadrature (which would assume independent normal
    errors of known width that two seeds cannot show). None where no row ran with two seeds.
    """
    runs = by_row(results)
    base = next(row for row in rows if row.name == "base")
    base_runs = runs.get("base")
    if not base_runs:        # records.load refuses such a record, naming its file
        raise ValueError("the Table 3 results hold no run of the base row: every row is "
                         "measured against it")
    base_bleu, base_ppl = ours(base_runs, "dev_bleu"), ours(base_runs, "dev_ppl")
    gap = {key: widest_gap(runs, key) for key in ("dev_bleu", "dev_ppl")}
    base_err = {key: error(base_runs, key, gap[key]) for key in gap}

    def change_error(name, key):
        own = error(runs[name], key, gap[key])
        return None if own is None or base_err[key] is None else own + base_err[key]

    out = {}
    for row in rows:
        if row.name == "base" or ours(runs.get(row.name, []), "dev_bleu") is None:
            continue
        out[row.name] = {
            "bleu": ours(runs[row.name], "dev_bleu") - base_bleu,
            "ppl": ours(runs[row.name], "dev_ppl") / base_ppl,
            "bleu_err": change_error(row.name, "dev_bleu"),
            "lppl_err": change_error(row.name, "dev_ppl"),
            "paper_bleu": row.paper and round(row.paper["bleu"] - base.paper["bleu"], 2),
            "paper_ppl": row.paper and row.paper["ppl"] / base.paper["ppl"]}
    return out


def verdict(change: dict) -> str:
    """The verdict on one row's ``change`` (an entry of :func:`changes`)."""
    if change["ppl"] > DID_NOT_TRAIN:
        return NOT_TRAINED
    if change["paper_bleu"] is None:
        return NOT_IN_PAPER
    if abs(change["paper_bleu"]) <= PAPER_MIN_BLEU:
        return NO_PAPER_EFFECT
    if change["bleu_err"] is None or abs(change["bleu"]) <= change["bleu_err"]:
        return INCONCLUSIVE
    return AGREES if (change["bleu"] > 0) == (change["paper_bleu"] > 0) else DISAGREES
