"""The trainer of the recipe ``tiny`` (``make train-tiny``) at a vocabulary size and an
update size, built as ``python -m transformer train`` builds it: the CPU benchmarks that
time whole updates (``vocab_speed``, ``attention_kernel_speed``, ``compile_speed``)
share it."""
from __future__ import annotations

from pathlib import Path

from transformer.training.loop import Trainer
from transformer.training.recipes import recipe


def recipe_trainer(vocab_size: int, scratch: Path, threads: int,
                   data_root: str | None, max_tokens: int = 4096,
                   optimizer: str = "adam") -> Trainer:
    """The trainer of the 4,096-token recipe (``make train-tiny`` of 2026-12-01) at
    ``vocab_size`` pieces, set up as ``python -m transformer train`` does
    (:meth:`Trainer.from_config`: the BPE vocabulary trained on Multi30k's train split, the
    batches, the model, Adam) in a run folder under ``scratch``. ``max_tokens=2048`` gives
    the updates of the current recipe (the warm-up does not change an update's time)."""
    cfg = recipe("tiny", out_dir=str(scratch / f"vocab{vocab_size}"), vocab_size=vocab_size,
                 warmup=1000, max_tokens=max_tokens, update_tokens=max_tokens,
                 threads=threads, data_root=data_root, progress=False, optimizer=optimizer)
    return Trainer.from_config(cfg)
