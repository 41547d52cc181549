"""The run's BPE vocabulary (section 5.1: "a shared source-target vocabulary"), trained on
both sides of the training split, with the trainer's messages for a vocabulary its text
cannot fill."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ..data import ParallelCorpus
from ..tokenizer import Tokenizer
from .config import TrainConfig, TrainingError


def train_tokenizer(train: ParallelCorpus, cfg: TrainConfig) -> Tokenizer:
    """The run's BPE vocabulary of ``cfg.vocab_size`` pieces on both sides of ``train``,
    trained in memory (nothing is written to the run yet)."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            tok = Tokenizer.train(list(train.src) + list(train.tgt), Path(scratch) / "spm.model",
                                  vocab_size=cfg.vocab_size, seed=cfg.seed)
        except RuntimeError as exc:
            raise TrainingError(_refusal(str(exc), cfg)) from None
        return Tokenizer.from_serialized(tok.serialized())


def _refusal(message: str, cfg: TrainConfig) -> str:
    """One line for SentencePiece's refusal ``message`` of ``cfg.vocab_size``: too large
    for the text (its limit), too small for its characters (the least it needs), else
    SentencePiece's own first line."""
    where = f"--vocab-size {cfg.vocab_size} is too %s for the training split of {cfg.corpus}"
    high = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)",
                     message)
    if high:
        return f"{where % 'large'}: its text allows at most {high.group(2)} pieces"
    low = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", message)
    if low:
        return (f"{where % 'small'}: its characters and the 4 special pieces need at least "
                f"{low.group(2)} pieces")
    return (f"training the BPE vocabulary on {cfg.corpus} failed: "
            f"{message.splitlines()[0][:300]}")
