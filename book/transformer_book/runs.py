"""The book's training run: which recipe chapters 7-10 train and explore
(:func:`book_run_config`), and what a run folder's ``metrics.jsonl`` holds for chapter 7's
curves (:func:`read_metrics`, :func:`validation_trace`).

The run itself is trained once and cached by the package
(:func:`transformer.training.cache.cached_run`, keyed by the recipe's settings, the code
that trains and the corpus).
"""
from __future__ import annotations

from pathlib import Path

from transformer.training.config import TrainConfig
from transformer.training.recipes import recipe


def book_run_config(quick: bool = False) -> TrainConfig:
    """The run chapters 7-9 train and explore: the recipe ``book``, or under
    ``BOOK_QUICK=1`` (for tests) the toy recipe ``quick`` (both in
    ``transformer/training/recipes.py``, where their settings are written)."""
    return recipe("quick" if quick else "book")


def read_metrics(run: Path) -> tuple[list[dict], list[dict]]:
    """A run's ``metrics.jsonl``: the records of logged updates (those with ``loss``) and
    of validations (those with ``valid_loss``), each in the order the run wrote them. Read
    by the package's one reader (:meth:`transformer.training.run_folder.RunFolder.records`):
    a last line torn by a killed run is left out, any other unreadable line raises
    :class:`~transformer.training.config.TrainingError` naming the file and line."""
    from transformer.training.run_folder import RunFolder
    folder = RunFolder(run)
    if not folder.metrics_file.is_file():
        raise FileNotFoundError(f"{folder.metrics_file}: no such metrics file")
    records = folder.records()           # the package's rule: a torn last line left out
    return ([r for r in records if "loss" in r], [r for r in records if "valid_loss" in r])


def validation_trace(run: Path) -> dict[str, list]:
    """Per validation of a run (its ``metrics.jsonl``): the update (``step``), the
    label-smoothed loss the run trains (``valid_loss``), the unsmoothed negative
    log-likelihood of the references (``valid_nll``) and its exponential, the perplexity of
    the paper's Table 3 (``valid_ppl``), each per target token. A record without them
    raises :class:`~transformer.errors.InputError` naming the file."""
    from transformer.errors import InputError
    _, evals = read_metrics(run)
    keys = ("step", "valid_loss", "valid_nll", "valid_ppl")
    for r in evals:
        missing = [k for k in keys if k not in r]
        if missing:
            raise InputError(f"{Path(run) / 'metrics.jsonl'}: a validation at update "
                             f"{r.get('step')} lacks {', '.join(missing)}")
    return {k: [r[k] for r in evals] for k in keys}
