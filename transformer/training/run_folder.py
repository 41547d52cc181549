"""A run's folder on disk: what defines the run, its metrics, its checkpoints.

::

    run/spm.model          shared BPE vocabulary (trained on the training split, 5.1)
    run/run.json           the settings that define the run (TrainConfig fields marked "run")
    run/checkpoints/       step_<update>.pt, the last ``keep_last`` kept
    run/metrics.jsonl      one JSON object per logged update / evaluation
    run/average.pt         mean of the last checkpoints (section 6.1, written at the end)
    run/summary.json       the finished run's figures, settings and provenance (written by
                           :meth:`~transformer.training.loop.Trainer.fit`, from the command
                           line and from Python alike)
    run/train.lock         held by the ``train`` that writes the run (:meth:`RunFolder.lock`)

``run.json`` is written last, once every check has passed: a folder without it holds no
run yet, so a failed first start does not block the corrected command. The settings are
stored with the corpus as a resolved path and without the folder's own path, so a run
resumes whether the command spells its paths ``r``, ``./r/`` or ``/abs/r``, and after
the folder is moved.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shlex
import warnings
from pathlib import Path
from typing import Iterator

from ..checkpoint import (CheckpointError, average_checkpoints, load_checkpoint,
                          prune_checkpoints, save_checkpoint, step_checkpoints, step_file)
from ..corpora import CorpusSpec
from ..output import write_output
from ..measuring.provenance import provenance, write_record
from ..tokenizer import Tokenizer
from .command import train_command
from .config import TrainConfig, TrainingError, run_settings


def run_identity(cfg: TrainConfig) -> dict:
    """What ``run.json`` stores for ``cfg``: its run-defining settings, with the corpus
    resolved to an absolute folder (``data_root`` folded into it)."""
    return _normalised(run_settings(cfg), cfg.data_root)


def _normalised(settings: dict, data_root: str | None = None) -> dict:
    settings = dict(settings)
    settings.pop("out_dir", None)                   # a run.json may hold where it was
    root = settings.pop("data_root", data_root)
    corpus = settings.get("corpus")
    if isinstance(corpus, str):
        settings["corpus"] = CorpusSpec.parse(corpus, root).resolved()
    return settings


class RunFolder:
    """The files of one run under ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.run_file = self.path / "run.json"
        self.tokenizer_file = self.path / "spm.model"
        self.checkpoint_dir = self.path / "checkpoints"
        self.metrics_file = self.path / "metrics.jsonl"
        self.average_file = self.path / "average.pt"
        self.summary_file = self.path / "summary.json"
        self.lock_file = self.path / "train.lock"

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # ------------------------------------------------------------------ writer
    def lock(self):
        """Make this process the run's one writer: an advisory lock (``flock``) on
        ``train.lock``, held until the returned file is closed, and dropped by the system
        when the process ends, a crash included. Two ``train`` commands on one folder would
        delete each other's half-written checkpoints and interleave ``metrics.jsonl``; the
        second is refused with :class:`TrainingError` naming the first's pid. ``average``
        and ``export`` take no lock: they write files of their own."""
        if self.path.exists() and not self.path.is_dir():
            raise TrainingError(f"--out {self.path} is a file, not a run folder")
        self.path.mkdir(parents=True, exist_ok=True)
        f = open(self.lock_file, "a+", encoding="utf-8")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            f.close()
            raise TrainingError(f"{self.path} is in use: another train (pid {holder}) is "
                                f"writing this run; wait for it to end or use another "
                                f"--out folder") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        return f

    # ------------------------------------------------------------ definition
    def exists(self) -> bool:
        """Whether the folder holds a run (its ``run.json``)."""
        return self.run_file.is_file()

    def settings(self) -> dict:
        """The stored run-defining settings (normalised as :func:`run_identity`)."""
        try:
            stored = json.loads(self.run_file.read_text(encoding="utf-8"))["train"]
            if not isinstance(stored, dict):
                raise TypeError
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
            raise TrainingError(f"{self.run_file} is not a run file of this package: delete "
                                f"it or use another --out folder") from None
        return _normalised(stored)

    def check(self, identity: dict) -> None:
        """Raise :class:`TrainingError` unless the stored run has the settings ``identity``."""
        defaults = run_settings(TrainConfig())      # for settings an older file lacks
        stored = self.settings()
        differ = []
        for key, value in identity.items():
            theirs = stored.get(key, defaults.get(key))
            if json.dumps(theirs, sort_keys=True) != json.dumps(value, sort_keys=True):
                differ.append(f"{key} {json.dumps(theirs)} there, {json.dumps(value)} now")
        if differ:
            raise TrainingError(f"{self.path} holds a run with different settings "
                                f"({'; '.join(differ)}): use another --out folder, or the "
                                f"run's own settings to resume it")

    def create(self, identity: dict, tokenizer: Tokenizer) -> None:
        """Start a run: write the tokenizer, then ``run.json`` (last: it marks a run)."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_output(self.tokenizer_file, tokenizer.serialized())
        write_output(self.run_file, json.dumps({"train": identity}, indent=1).encode())

    def tokenizer(self) -> Tokenizer:
        """The run's BPE vocabulary (``spm.model``). A damaged ``spm.model`` is rebuilt,
        with a warning, from the newest checkpoint (each one carries the tokenizer)."""
        try:
            return Tokenizer.load(self.tokenizer_file)
        except ValueError as exc:
            damage = exc
        for path, state in self.complete_checkpoints():
            if "tokenizer" in state:
                tokenizer = Tokenizer.from_serialized(bytes(state["tokenizer"]))
                write_output(self.tokenizer_file, tokenizer.serialized())
                warnings.warn(f"{self.tokenizer_file} was damaged; rebuilt it from the "
                              f"tokenizer inside {path}")
                return tokenizer
        raise TrainingError(f"{damage}; no checkpoint of the run carries a tokenizer to "
                            f"rebuild it from: use another --out folder") from None

    # --------------------------------------------------------------- metrics
    def write_summary(self, cfg: TrainConfig, result: dict, *, model: dict, params: int,
                      device=None, command: str | None = None,
                      recipe: str | None = None) -> Path:
        """``summary.json`` of the finished run: ``result`` (the final figures), the
        settings ``cfg`` (and the ``recipe`` they came from), the ``model`` configuration
        and its ``params``, and the provenance, whose command is ``command`` (as typed) or
        else the ``train`` command that reproduces ``cfg``."""
        command = command or shlex.join(train_command(cfg, recipe=recipe))
        return write_record(self.summary_file, {
            "provenance": provenance(command, device), "recipe": recipe,
            "train": dataclasses.asdict(cfg), "model": model, "params": params, **result})

    def log(self, record: dict) -> None:
        """Append one record to ``metrics.jsonl``."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.metrics_file, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def records(self) -> list[dict]:
        """The records of ``metrics.jsonl`` in file order. A torn last line (a kill in the
        middle of a write) is left out; any other unreadable line raises
        :class:`TrainingError` naming the file and line."""
        if not self.metrics_file.exists():
            return []
        lines = self.metrics_file.read_text(encoding="utf-8", errors="replace").split("\n")
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict) or not isinstance(record.get("step"), int):
                    raise ValueError("no integer 'step'")
            except ValueError as exc:
                if number == len(lines):          # no newline after it: a torn write
                    break
                raise TrainingError(f"{self.metrics_file}: line {number} is not a metrics "
                                    f"record ({exc}); remove that line to resume") from None
            records.append(record)
        return records

    def keep_metrics(self, step: int | None) -> None:
        """Keep exactly the records an uninterrupted run had written when it saved the
        checkpoint of update ``step`` (those of updates <= ``step``, not the end-of-run
        record); ``None`` (a fresh start) keeps none."""
        if step is None:
            self.metrics_file.unlink(missing_ok=True)
            return
        kept = [r for r in self.records() if r["step"] <= step and not r.get("final")]
        if self.metrics_file.exists():
            write_output(self.metrics_file,
                         "".join(json.dumps(r) + "\n" for r in kept).encode())

    # ------------------------------------------------------------ checkpoints
    def checkpoints(self) -> list[Path]:
        """``checkpoints/step_*.pt``, oldest first."""
        return step_checkpoints(self.checkpoint_dir)

    def save(self, state: dict, step: int, keep_last: int) -> Path:
        """Write the checkpoint of update ``step``; keep the newest ``keep_last``."""
        path = save_checkpoint(state, self.checkpoint_dir / step_file(step))
        prune_checkpoints(self.checkpoint_dir, keep_last)
        return path

    def complete_checkpoints(self, map_location="cpu") -> Iterator[tuple[Path, dict]]:
        """(path, state) of each loadable checkpoint, newest first; damaged ones are
        skipped with a warning (a crash can leave at most a stray temporary file, but a
        disk can still fail)."""
        for path in reversed(self.checkpoints()):
            try:
                state = load_checkpoint(path, map_location=map_location)
            except CheckpointError as exc:
                warnings.warn(f"skipping {exc}")
                continue
            yield path, state

    def average(self, keep_last: int) -> Path | None:
        """Average the newest ``keep_last`` checkpoints into ``average.pt`` (section 6.1)."""
        paths = self.checkpoints()[-keep_last:]
        if not paths:
            return None
        return save_checkpoint(average_checkpoints(paths), self.average_file)
