"""Cached training runs for the book: train once, reuse across chapters and builds.

A run is stored under ``<cache>/<key>/`` where the key hashes everything that produced
it: the settings that change a run's result (the ``TrainConfig`` fields whose metadata
marks them ``run`` or ``result``), the code that training runs (:func:`training_modules`:
the modules the trainer imports, each as its syntax tree without docstrings, so an edit
of a docstring, a comment or a command-line tool keeps the cached model), and the
corpus files. Change any of them and the key changes, so a build never shows a stale
model. The cache lives in ``$TRANSFORMER_CACHE`` (default
``~/.cache/transformer/runs``); delete that folder (``make clean-cache``) to retrain.
"""
from __future__ import annotations

import ast
import dataclasses
import fcntl
import hashlib
import json
import os
from pathlib import Path

import transformer
from transformer.training.config import TrainConfig, result_settings
from transformer.training.recipes import recipe

PACKAGE = Path(transformer.__file__).resolve().parent


def cache_root() -> Path:
    """``$TRANSFORMER_CACHE``, else ``~/.cache/transformer/runs``."""
    return Path(os.environ.get("TRANSFORMER_CACHE", Path.home() / ".cache/transformer/runs"))


TRAINER = "transformer.training.loop"      # the module whose imports are the training code


def module_file(name: str) -> Path | None:
    """The file of module ``transformer.x.y`` under :data:`PACKAGE`, or None."""
    parts = name.split(".")[1:]
    for path in (PACKAGE.joinpath(*parts).with_suffix(".py"),
                 PACKAGE.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def module_imports(name: str, path: Path) -> set[str]:
    """The ``transformer`` modules that module ``name`` imports, at any depth of its code
    (imports inside functions too), with each package's ``__init__`` on the way."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] == "transformer":
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in found if module_file(m) is not None}


def training_modules() -> list[Path]:
    """The files of every module a training run imports: :data:`TRAINER` and all it
    imports in the package, transitively, sorted."""
    seen, todo = set(), [TRAINER]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(module_imports(name, module_file(name)) - seen)
    return sorted((module_file(m) for m in seen),
                  key=lambda p: p.relative_to(PACKAGE).as_posix())


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
    from transformer.inference import resolve_device
    from transformer.training.precision import resolve_precision
    h = hashlib.sha256()
    h.update(json.dumps(result_settings(cfg), sort_keys=True).encode())
    h.update(resolve_precision(cfg.precision, resolve_device(cfg.device)).encode())  # auto's pick
    for path in training_modules():
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + code_fingerprint(path))
    for folder in cfg.corpus_spec.folders():            # none for a corpus of the hub
        for path in sorted(folder.glob("*")):
            if path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cached_run(cfg: TrainConfig) -> Path:
    """The folder of a finished run of ``cfg`` (trained now if not cached yet)."""
    from transformer.training.loop import Trainer
    out = cache_root() / run_key(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # a second process waits, then reuses it
        if not (out / "average.pt").exists():
            cfg = dataclasses.replace(cfg, out_dir=str(out))
            Trainer.from_config(cfg).fit()   # resumes if an earlier build was interrupted
    return out


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


def book_run_config(quick: bool = False) -> TrainConfig:
    """The run chapters 7-9 train and explore: the recipe ``book``, or under
    ``BOOK_QUICK=1`` (for tests) the toy recipe ``quick`` (both in
    ``transformer/training/recipes.py``, where their settings are written)."""
    return recipe("quick" if quick else "book")
