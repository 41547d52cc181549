"""Cached training runs for the book: train once, reuse across chapters and builds.

A run is stored under ``<cache>/<key>/`` where the key hashes everything that produced
it: the settings that change a run's result (the ``TrainConfig`` fields whose metadata
marks them ``run`` or ``result``), the source of every module of the ``transformer``
package, and the corpus files. Change any of them and the key changes, so a build never
shows a stale model. The cache lives in ``$TRANSFORMER_CACHE`` (default
``~/.cache/transformer/runs``); delete that folder (``make clean-cache``) to retrain.
"""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
from pathlib import Path

import transformer
from transformer.data import corpus_folder
from transformer.train_config import TrainConfig, result_settings

PACKAGE = Path(transformer.__file__).resolve().parent


def cache_root() -> Path:
    """``$TRANSFORMER_CACHE``, else ``~/.cache/transformer/runs``."""
    return Path(os.environ.get("TRANSFORMER_CACHE", Path.home() / ".cache/transformer/runs"))


def package_modules() -> list[Path]:
    """Every ``.py`` file of the ``transformer`` package, subpackages included, sorted."""
    return sorted(PACKAGE.rglob("*.py"), key=lambda p: p.relative_to(PACKAGE).as_posix())


def run_key(cfg: TrainConfig) -> str:
    """The cache key of ``cfg``: its result-defining settings, the precision it trains in
    here, the package's source, the corpus files (16 hex digits of a SHA-256)."""
    from transformer.inference import resolve_device
    from transformer.trainer import resolve_precision
    h = hashlib.sha256()
    h.update(json.dumps(result_settings(cfg), sort_keys=True).encode())
    h.update(resolve_precision(cfg.precision, resolve_device(cfg.device)).encode())  # auto's pick
    for path in package_modules():
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    if cfg.corpus != "wmt14":
        for path in sorted(corpus_folder(cfg.corpus, cfg.data_root).glob("*")):
            if path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cached_run(cfg: TrainConfig) -> Path:
    """The folder of a finished run of ``cfg`` (trained now if not cached yet)."""
    from transformer.trainer import Trainer
    out = cache_root() / run_key(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # a second process waits, then reuses it
        if not (out / "average.pt").exists():
            cfg = dataclasses.replace(cfg, out_dir=str(out))
            Trainer.from_config(cfg).fit()   # resumes if an earlier build was interrupted
    return out


def book_run_config(quick: bool = False) -> TrainConfig:
    """The run chapters 7-9 train and explore: the CPU preset on Multi30k, en->de.

    Full: 800 updates of about 4,000 target tokens (6 epochs, 7-12 minutes on two quiet
    cores with bf16 instructions; ``precision="auto"`` trains in fp32 on a CPU without
    them): the first 800 updates of the 30-minute run of this preset (``make
    train-small``), with the same settings. A fixed number of updates, not a time limit,
    so the published model does not depend on how busy the machine was.
    Quick (``BOOK_QUICK=1``, for tests): a tiny model for 40 updates.
    """
    if quick:
        return TrainConfig(corpus="multi30k-en-de", vocab_size=1000, max_tokens=1024,
                           update_tokens=1024, max_updates=40, warmup=20, save_every=10,
                           keep_last=3, log_every=2, eval_bleu_sentences=0, progress=False,
                           model_overrides=dict(d_model=64, d_ff=128, n_heads=4,
                                                n_encoder_layers=2, n_decoder_layers=2))
    return TrainConfig(corpus="multi30k-en-de", vocab_size=8000, max_tokens=4096,
                       update_tokens=4096, max_updates=800, warmup=400, lr_factor=0.5,
                       precision="auto", threads=2, save_every=50, keep_last=5, log_every=10,
                       eval_every=100, eval_bleu_sentences=100, progress=False)
