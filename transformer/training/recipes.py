"""The named training runs: ``python -m transformer train --recipe NAME [--field value ...]``.

Each recipe is one :class:`~transformer.training.config.TrainConfig`, written here and
nowhere else: the Makefile's ``train-*`` targets, the README's commands, the book's
``runs.py``, the demo, the benchmarks and the tests name a recipe
(and override a field or two) instead of copying its flags. A recipe's ``out_dir`` is
``runs/<name>``; ``--out`` puts the run elsewhere. How a recipe's model is scored (beam,
length penalty) belongs to ``evaluate``'s command (the Makefile's targets), not here.

What each recipe is for (its settings are its entry in :data:`RECIPES`, and ``python -m
transformer train --help`` lists them, :func:`describe`):

* ``tiny``: the best model two CPU cores train in a fixed time (``make train-tiny``).
* ``small``: the CPU preset in the same time (``make train-small``), for comparison.
* ``book``: the run chapters 7-9 train and explore and chapter 9 puts in the page, on
  Multi30k's captions and Tatoeba's everyday sentences together. Its length is a number
  of updates, not a time, so the published model does not depend on how busy the
  machine was.
* ``quick``: a toy trained in seconds (the book under ``BOOK_QUICK=1``, ``python -m
  transformer demo`` and the tests).
* ``base-wmt14``: the paper's base model on WMT 2014 English-German, for GPUs (sections
  5.1-5.4, 6.1); its updates reach the paper's 25,000 target tokens on 8, 4, 2 or 1 GPUs
  under ``torchrun`` by gradient accumulation.

:data:`DEPARTURES` names, for each recipe, the paper's settings it changes and why
(:data:`DEFAULT_DEPARTURES`: those of ``train`` without ``--recipe``).
"""
from __future__ import annotations

import copy
import dataclasses

from .config import TrainConfig
from ..errors import InputError

# The toy model of `quick`: two layers each side, width 64 (ModelConfig overrides).
TOY_MODEL = dict(d_model=64, d_ff=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2)

RECIPES: dict[str, TrainConfig] = {
    "tiny": TrainConfig(
        out_dir="runs/tiny", preset="tiny", corpus="multi30k-en-de", optimizer="muon",
        model_overrides={"dropout": 0.2}, max_tokens=2048, update_tokens=2048,
        warmup=2000, lr_factor=1.789, time_limit_min=30, precision="auto", threads=2,
        save_every=50, keep_last=7, eval_every=2000),
    "small": TrainConfig(
        out_dir="runs/small", preset="small", corpus="multi30k-en-de", max_tokens=4096,
        update_tokens=4096, warmup=400, lr_factor=0.5, time_limit_min=30, precision="auto",
        threads=2, save_every=50, keep_last=5),
    "book": TrainConfig(
        out_dir="runs/book", preset="tiny", corpus="multi30k-en-de*2+tatoeba-en-de",
        optimizer="muon", model_overrides={"dropout": 0.0}, max_tokens=2048,
        update_tokens=2048, max_updates=3400, warmup=1000, lr_factor=1.789, cooldown=800,
        cooldown_end=3400, precision="auto", threads=2, save_every=50, keep_last=5,
        log_every=10, eval_every=500, eval_bleu_sentences=100, progress=False),
    "quick": TrainConfig(
        out_dir="runs/quick", corpus="multi30k-en-de", vocab_size=1000,
        model_overrides=TOY_MODEL, max_tokens=1024, update_tokens=1024, max_updates=40,
        warmup=20, save_every=10, keep_last=3, log_every=2, eval_bleu_sentences=0,
        progress=False),
    "base-wmt14": TrainConfig(
        out_dir="runs/base-wmt14", preset="base", corpus="wmt14", vocab_size=37000,
        max_tokens=3125, update_tokens=25000, warmup=4000, max_updates=100_000,
        precision="auto", save_every=1000, keep_last=5, log_every=100, eval_every=5000),
}

# What each recipe changes of the paper's settings, and why; every other setting of its
# run is the paper's. The names are those of tests/test_paper_constants.py's table:
# optimizer, adam_betas, adam_eps, warmup, schedule (equation (3) itself), label_smoothing,
# dropout (residual and embedding, 5.4), other_dropout, model (Table 3's base sizes),
# norm_position, shared_embeddings, embedding_scale, positional, vocab_size,
# update_tokens, training_length, checkpoints_averaged. That test builds each recipe's
# model, optimizer and trainer and fails on a departure not named here, and on one named
# here that the recipe no longer makes.
CPU = "sized for two CPU cores"
DEPARTURES: dict[str, dict[str, str]] = {
    "tiny": {
        "model": f"the tiny preset (Wu et al.'s Transformer-tiny for Multi30k), {CPU}",
        "norm_position": "pre-norm, which trains faster at a short budget (chapter 11)",
        "dropout": "0.2, chosen on the valid split",
        "optimizer": "Muon for the layers' matrices, the paper's Adam for the rest, "
                     "chosen on the valid split",
        "warmup": "2,000 updates, chosen on the valid split",
        "schedule": "equation (3) times 1.789 (--lr-factor), chosen on the valid split",
        "vocab_size": "8,000 pieces for Multi30k's 29,000 training pairs",
        "update_tokens": f"2,048 target tokens, {CPU}: more updates in 30 minutes",
        "training_length": "30 minutes on two CPU cores",
        "checkpoints_averaged": "the last 7 of a checkpoint every 50 updates, chosen on the "
                                "valid split",
    },
    "small": {
        "model": f"the small preset, {CPU}",
        "warmup": "400 updates: a 30-minute run has a few thousand",
        "schedule": "equation (3) times 0.5 (--lr-factor)",
        "vocab_size": "8,000 pieces for Multi30k's 29,000 training pairs",
        "update_tokens": f"4,096 target tokens, {CPU}",
        "training_length": "30 minutes on two CPU cores",
    },
    "book": {
        "model": f"the tiny preset (Wu et al.'s Transformer-tiny for Multi30k), {CPU}",
        "norm_position": "pre-norm, which trains faster at a short budget (chapter 11)",
        "dropout": "none: it scored best on both valid splits (Under the hood B)",
        "optimizer": "Muon for the layers' matrices, the paper's Adam for the rest",
        "warmup": "1,000 updates, chosen on both valid splits",
        "schedule": "equation (3) times 1.789, with a linear cool-down over the last 800 "
                    "updates (the run's length is known)",
        "vocab_size": "8,000 pieces for Multi30k's and Tatoeba's sentences",
        "update_tokens": f"2,048 target tokens, {CPU}",
        "training_length": "3,400 updates, what a book build affords on two cores",
    },
    "quick": {
        "model": "a toy: 2+2 layers of width 64, trained in seconds",
        "warmup": "20 updates of a 40-update toy run",
        "vocab_size": "1,000 pieces: a toy",
        "update_tokens": "1,024 target tokens: a toy",
        "training_length": "40 updates: a toy",
        "checkpoints_averaged": "the last 3 of a 40-update toy run",
    },
    "base-wmt14": {},
}
# and what `train` without --recipe (TrainConfig's defaults) changes
DEFAULT_DEPARTURES: dict[str, str] = {
    "model": f"the small preset, {CPU}",
    "vocab_size": "8,000 pieces for Multi30k's 29,000 training pairs",
    "update_tokens": f"4,096 target tokens, {CPU}",
    "training_length": "no limit: until stopped, or --max-updates or --time-limit-min",
}


def recipe(name: str, **overrides) -> TrainConfig:
    """The recipe ``name`` (a fresh copy), with ``overrides`` (TrainConfig fields) applied;
    ``model_overrides`` in ``overrides`` are added to the recipe's own. An unknown name
    raises :class:`~transformer.errors.InputError` listing the recipes."""
    if name not in RECIPES:
        raise InputError(f"--recipe: unknown recipe {name!r}; choose one of "
                         f"{', '.join(RECIPES)}")
    cfg = copy.deepcopy(RECIPES[name])
    if "model_overrides" in overrides:
        overrides["model_overrides"] = {**cfg.model_overrides, **overrides["model_overrides"]}
    return dataclasses.replace(cfg, **overrides)


def describe(name: str) -> str:
    """One line on the recipe ``name``, read from its settings: what ``--help`` lists."""
    cfg = RECIPES[name]
    length = (f"{cfg.time_limit_min:g} min" if cfg.time_limit_min else
              f"{cfg.max_updates:,} updates" if cfg.max_updates else "no limit")
    model = "a toy model" if cfg.model_overrides.get("d_model") else f"the {cfg.preset} preset"
    return (f"{name}: {model} on {cfg.corpus}, {length}, {cfg.update_tokens:,}-token "
            f"updates, {cfg.optimizer}")


__all__ = ["RECIPES", "DEPARTURES", "DEFAULT_DEPARTURES", "TOY_MODEL", "recipe", "describe"]
