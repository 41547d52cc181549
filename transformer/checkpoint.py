"""Checkpoints that survive crashes, load safely, and average (section 6.1).

* :func:`save_checkpoint` writes through :mod:`transformer.output` (a temporary file in
  the same folder, flushed to disk and renamed into place): a crash leaves the old files
  and at worst a stray ``.*.tmp``, which the next save removes, never a half-written
  checkpoint under a real name.
* :func:`load_checkpoint` uses ``torch.load(..., weights_only=True)``: tensors and
  plain containers only, no code runs. A damaged file raises :class:`CheckpointError`
  naming it.
* A checkpoint records the fingerprint of the vocabulary it was trained with
  (:func:`~transformer.tokenizer.vocabulary_fingerprint`, ``state["vocabulary"]``): loading
  it with any other tokenizer is refused (:func:`check_vocabulary`), even one of the same
  size.
* :func:`average_checkpoints`: "For the base models, we used a single model obtained by
  averaging the last 5 checkpoints, which were written at 10-minute intervals."
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from .errors import InputError, UserError
from .output import Output, remove_leftovers, write_output
from .tokenizer import same_vocabulary, vocabulary_fingerprint


class CheckpointError(UserError, RuntimeError):
    """A checkpoint file is missing, damaged, or not one this package can use (the
    message names the file)."""


STEP_FILE = re.compile(r"^step_(\d+)\.pt$")


def step_file(step: int) -> str:
    """The file name of the checkpoint of update ``step``: ``step_0000200.pt`` (read back
    by :data:`STEP_FILE`)."""
    return f"step_{step:07d}.pt"


def save_checkpoint(state: dict, path) -> Path:
    """Write ``state`` to ``path`` with :func:`transformer.output.write_output`
    (``torch.save`` format), streamed into the file: an in-memory copy of a checkpoint
    stays resident after the save (book/results/host_memory.json).
    ``path`` may be an :class:`~transformer.output.Output` opened earlier (the command
    line opens its outputs before the work)."""
    if isinstance(path, Output):
        path.write_with(lambda f: torch.save(state, f))
        return path.path
    return write_output(path, lambda f: torch.save(state, f))


def checkpoint_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path when it names a file; else :class:`CheckpointError` says so (a
    folder: which checkpoint inside it to give)."""
    path = Path(path)
    if path.is_dir():
        inside = ([p.name for p in (path / "average.pt",) if p.is_file()]
                  + [f"checkpoints/{p.name}" for p in step_checkpoints(path / "checkpoints")[-1:]]
                  + [p.name for p in step_checkpoints(path)[-1:]])
        hint = f"; e.g. {path / inside[0]}" if inside else ""
        raise CheckpointError(f"{path} is a folder: give a checkpoint file{hint}")
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    return path


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """The state saved in ``path``, loaded with ``weights_only=True`` (no code runs).

    Raises :class:`CheckpointError` naming the file when it is missing, a folder, damaged,
    or not a checkpoint of this package.
    """
    path = checkpoint_file(path)
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, garbage bytes, disallowed pickle globals
        reason = (str(exc).strip().splitlines() or ["empty file"])[0][:200]
        raise CheckpointError(f"checkpoint {path} is corrupt or truncated, or holds objects "
                              f"that weights_only loading refuses; it cannot be loaded "
                              f"({type(exc).__name__}: {reason})") from None
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a transformer checkpoint (no 'model' entry)")
    return state


def recorded_vocabulary(path, state: dict) -> str | None:
    """The fingerprint of the vocabulary checkpoint ``path`` (its ``state``) was trained
    with: its ``vocabulary`` entry, else that of the tokenizer inside it; None when it
    holds neither (written by an older version). :class:`CheckpointError` for an entry
    that is not a fingerprint."""
    recorded = state.get("vocabulary")
    if recorded is None:
        return vocabulary_fingerprint(state["tokenizer"]) if "tokenizer" in state else None
    try:
        return vocabulary_fingerprint(recorded if isinstance(recorded, str) else "")
    except ValueError:
        raise CheckpointError(f"{path}: its 'vocabulary' entry is not a fingerprint "
                              f"({type(recorded).__name__})") from None


def check_vocabulary(path, state: dict, tokenizer, source: str) -> None:
    """Raise :class:`CheckpointError` naming both unless ``tokenizer`` (found at
    ``source``) is the vocabulary checkpoint ``path`` (its ``state``) was trained with
    (:func:`~transformer.tokenizer.same_vocabulary`). A checkpoint that records no
    vocabulary passes: the reader vouched for ``tokenizer``
    (:func:`transformer.inference.load_model`)."""
    recorded = recorded_vocabulary(path, state)
    if recorded is not None and not same_vocabulary(tokenizer, recorded):
        found = vocabulary_fingerprint(tokenizer)
        raise CheckpointError(f"{source} is not the vocabulary {path} was trained with "
                              f"({found[:19]}... there, {recorded[:19]}... recorded in the "
                              f"checkpoint): use that run's spm.model")


def step_checkpoints(folder: str | os.PathLike) -> list[Path]:
    """``step_*.pt`` files in ``folder``, oldest step first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := STEP_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def prune_checkpoints(folder: str | os.PathLike, keep_last: int) -> None:
    """Delete all but the newest ``keep_last`` step checkpoints, and temporary files that
    an interrupted save of a process that has ended left behind."""
    for path in step_checkpoints(folder)[:-keep_last]:
        path.unlink(missing_ok=True)
    remove_leftovers(folder)                     # left by a crash during a save


def average_checkpoints(paths: list[str | os.PathLike]) -> dict:
    """Element-wise mean of the model weights of ``paths``; other entries from the last.

    Section 6.1. The checkpoints must hold the same model (configuration, parameter names
    and shapes) and the same tokenizer; else :class:`CheckpointError` names the two files.
    One checkpoint is loaded at a time and added to a float64 sum (as fairseq's
    ``average_checkpoints.py`` does): a training checkpoint also holds the optimizer's
    state, twice the weights for Adam, so loading them all at once took k times that.
    """
    paths = list(paths)
    if not paths:
        raise InputError("average_checkpoints needs at least one checkpoint")
    last = paths[-1]
    ref = {k: v for k, v in load_checkpoint(last).items()            # no optimizer state
           if k in ("model", "model_config", "train_config", "tokenizer", "vocabulary",
                    "step")}
    sums = {k: v.to(torch.float64, copy=True) for k, v in ref["model"].items()
            if v.is_floating_point()}
    for p in paths[:-1]:
        state = load_checkpoint(p)
        _check_same_run(p, state, last, ref)
        for key, total in sums.items():
            total += state["model"][key].double()
        del state                      # before the next one is loaded
    model = {k: (sums[k] / len(paths)).to(v.dtype) if k in sums else v
             for k, v in ref["model"].items()}
    return {**{k: v for k, v in ref.items() if k != "model"}, "model": model,
            "averaged_from": [str(p) for p in paths]}


def _check_same_run(path, state: dict, last, ref: dict) -> None:
    """Raise :class:`CheckpointError` unless ``state`` (of ``path``) holds the model and
    vocabulary of ``ref`` (of ``last``)."""
    if state["model"].keys() != ref["model"].keys():
        raise CheckpointError(f"{path} holds different parameters from {last}: "
                              f"they are not checkpoints of the same model")
    differ = [k for k, v in state["model"].items() if v.shape != ref["model"][k].shape]
    if differ:
        raise CheckpointError(f"{path} and {last} hold parameters of different shapes "
                              f"({differ[0]}: {tuple(state['model'][differ[0]].shape)} vs "
                              f"{tuple(ref['model'][differ[0]].shape)}): they are not "
                              f"checkpoints of the same model (a different vocabulary or size)")
    theirs, ours = recorded_vocabulary(path, state), recorded_vocabulary(last, ref)
    if state.get("model_config", {}).get("vocab_size") != ref.get("model_config", {}).get(
            "vocab_size") or (theirs and ours and not same_vocabulary(theirs, ours)):
        raise CheckpointError(f"{path} and {last} have different vocabularies: they are "
                              f"not checkpoints of the same run")
