"""Cached training runs: train once, reuse across chapters, builds and benchmarks.

A run is stored under ``<cache>/<key>/`` where the key hashes everything that produced
it: the settings that change a run's result (the ``TrainConfig`` fields whose metadata
marks them ``run`` or ``result``), the code that training runs (:func:`training_modules`:
the modules the trainer imports, each as its syntax tree without docstrings, so an edit
of a docstring, a comment or a command-line tool keeps the cached model), and the
corpus files. Change any of them and the key changes, so a build never shows a stale
model. The cache lives in ``$TRANSFORMER_CACHE`` (default
``~/.cache/transformer/runs``); delete that folder (``make clean-cache``) to retrain.

The book's run is ``cached_run(recipe("book"))`` (the recipe in :mod:`.recipes`; the
book's chapters pick the toy recipe ``quick`` instead under ``BOOK_QUICK=1``).
"""
from __future__ import annotations

import ast
import dataclasses
import fcntl
import hashlib
import json
import os
from pathlib import Path

from ..measuring import imports
from .config import TrainConfig, result_settings


def cache_root() -> Path:
    """``$TRANSFORMER_CACHE``, else ``~/.cache/transformer/runs``."""
    return Path(os.environ.get("TRANSFORMER_CACHE", Path.home() / ".cache/transformer/runs"))


TRAINER = "transformer.training.loop"      # the module whose imports are the training code


def training_modules() -> list[Path]:
    """The files of every module a training run imports: :data:`TRAINER` and all it
    imports in the package, transitively, sorted."""
    seen, todo = set(), [TRAINER]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imports.module_imports(name, imports.module_file(name)) - seen)
    return sorted((imports.module_file(m) for m in seen),
                  key=lambda p: p.relative_to(imports.PACKAGE).as_posix())


def code_fingerprint(path: Path) -> bytes:
    """The syntax tree of a module without its docstrings: comments, docstrings and
    layout do not change it; any change to what the code does does."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False).encode()


def run_key(cfg: TrainConfig) -> str:
    """The cache key of ``cfg``: its result-defining settings, the precision it trains in
    here, the code that training runs, the corpus files (16 hex digits of a SHA-256)."""
    from ..inference import resolve_device
    from .precision import resolve_precision
    h = hashlib.sha256()
    h.update(json.dumps(result_settings(cfg), sort_keys=True).encode())
    h.update(resolve_precision(cfg.precision, resolve_device(cfg.device)).encode())  # auto's pick
    for path in training_modules():
        h.update(path.relative_to(imports.PACKAGE).as_posix().encode() + b"\0" + code_fingerprint(path))
    for folder in cfg.corpus_spec.folders():            # none for a corpus of the hub
        for path in sorted(folder.glob("*")):
            if path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cached_run(cfg: TrainConfig) -> Path:
    """The folder of a finished run of ``cfg`` (trained now if not cached yet)."""
    from .loop import Trainer
    out = cache_root() / run_key(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # a second process waits, then reuses it
        if not (out / "average.pt").exists():
            cfg = dataclasses.replace(cfg, out_dir=str(out))
            Trainer.from_config(cfg).fit()   # resumes if an earlier build was interrupted
    return out
