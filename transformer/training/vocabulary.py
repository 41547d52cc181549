"""The run's BPE vocabulary (section 5.1: "a shared source-target vocabulary"), trained on
both sides of the training split, with the trainer's messages for a vocabulary its text
cannot fill. Used by the in-memory path (:mod:`.prepare`), the prepared corpus
(:mod:`.prepared`) and the Table 3 study."""
from __future__ import annotations

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
            message = str(exc)
            if "Vocabulary size too high" in message or "vocab_size" in message.lower():
                limit = message.rsplit("<=", 1)[-1].strip(" .") if "<=" in message else "?"
                raise TrainingError(f"--vocab-size {cfg.vocab_size} is too large for the "
                                    f"training split of {cfg.corpus}: its text allows at most "
                                    f"{limit} pieces") from None
            raise TrainingError(f"training the BPE vocabulary on {cfg.corpus} failed: "
                                f"{message.splitlines()[0][:300]}") from None
        return Tokenizer.from_serialized(tok.serialized())
