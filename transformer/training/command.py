"""A run's settings as the ``train`` command that reproduces them, and back.

:func:`train_command` writes the ``python -m transformer train`` arguments of a
:class:`~transformer.training.config.TrainConfig` (chapter 7 prints one; a run's
``summary.json`` records it when the run was started from Python);
:func:`train_config` reads the arguments the command line parsed (its options are
generated from the same fields, :mod:`transformer.tools.options`) into a TrainConfig.
"""
from __future__ import annotations

import dataclasses
import json

from . import recipes
from .config import TrainConfig, flag


def train_config(args) -> TrainConfig:
    """The TrainConfig of a parsed ``train`` command: ``--recipe``'s (or the defaults) with
    the options given."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
             if hasattr(args, f.name)}
    return recipes.recipe(args.recipe, **given) if args.recipe else TrainConfig(**given)


def train_command(cfg: TrainConfig, out: str | None = None,
                  recipe: str | None = None) -> list[str]:
    """The ``python -m transformer train`` arguments that reproduce TrainConfig ``cfg``
    (``--out`` is ``out`` when given): ``--recipe recipe`` and the fields that differ from
    it, or without ``recipe`` the fields that differ from the defaults."""
    base = recipes.RECIPES[recipe] if recipe else TrainConfig()
    args = ["python", "-m", "transformer", "train"] + (["--recipe", recipe] if recipe else [])
    args += ["--out", str(out or cfg.out_dir)]
    for f in dataclasses.fields(TrainConfig):
        value, theirs = getattr(cfg, f.name), getattr(base, f.name)
        if f.name == "out_dir" or value == theirs:
            continue
        name = flag(f)
        if isinstance(value, bool):
            args.append(name if value else "--no-" + name[2:])
        elif isinstance(value, dict):
            args += [a for k, v in value.items() if theirs.get(k, object()) != v
                     for a in (name, f"{k}={json.dumps(v)}")]
        elif value is not None:
            args += [name, str(value)]
    return args
