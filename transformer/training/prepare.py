"""A run's data before its first update: the corpus splits, the BPE vocabulary, batches.

Section 5.1: "Sentences were encoded using byte-pair encoding, which has a shared
source-target vocabulary ... Sentence pairs were batched together by approximate sequence
length." :func:`prepare` does what ``python -m transformer train`` does before it builds
the model: it checks the settings against the run folder, reads the train and valid
splits (:func:`load_split`), trains the vocabulary (:func:`train_tokenizer`) or takes the
run's, builds the token-bucketed iterators (:func:`batch_iterators`) and only then, every
check passed, writes the run folder. A corpus prepared on disk (a folder written by
``python -m transformer prepare``, and ``wmt14``, prepared on first use) is memory-mapped
instead, with its own vocabulary (:mod:`.prepared`).
"""
from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ..batching import BatchIterator
from ..data import ParallelCorpus, corpus_folder, load_corpus
from ..tokenizer import Tokenizer
from .config import TrainConfig, TrainingError
from .distributed import Distributed
from .run_folder import RunFolder


def load_split(cfg: TrainConfig, split: str) -> ParallelCorpus:
    """The ``split`` of ``cfg``'s corpus in ``cfg.direction``; an empty split raises
    :class:`TrainingError` naming its files."""
    corpus = load_corpus(cfg.corpus, split, cfg.direction, cfg.data_root)
    if len(corpus) == 0:
        where = ("wmt14" if cfg.corpus == "wmt14" else
                 f"{corpus_folder(cfg.corpus, cfg.data_root)}/{split}.src and {split}.tgt")
        raise TrainingError(f"the {split} split is empty: {where} hold no sentence pairs")
    return corpus


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


def batch_iterators(cfg: TrainConfig, tok: Tokenizer, train: ParallelCorpus,
                    valid: ParallelCorpus) -> tuple[BatchIterator, BatchIterator]:
    """The training iterator (shuffled by ``cfg.seed``, pairs over ``cfg.max_len`` tokens
    left out) and the validation iterator (in order), ``cfg.max_tokens`` per micro-batch."""
    train_iter = BatchIterator(tok.encode_batch(train.src), tok.encode_batch(train.tgt),
                               cfg.max_tokens, seed=cfg.seed, max_len=cfg.max_len,
                               pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    if len(train_iter) == 0:
        raise TrainingError(f"every training pair of {cfg.corpus} is longer than "
                            f"--max-len {cfg.max_len} tokens: nothing to train on")
    valid_iter = BatchIterator(tok.encode_batch(valid.src), tok.encode_batch(valid.tgt),
                               cfg.max_tokens, shuffle=False, pad_id=tok.pad_id,
                               bos_id=tok.bos_id, eos_id=tok.eos_id)
    return train_iter, valid_iter


@dataclass
class Prepared:
    """What :func:`prepare` hands the trainer: the vocabulary, the two iterators and the
    validation pairs as text (for BLEU during validation)."""

    tokenizer: Tokenizer
    train_iter: BatchIterator
    valid_iter: BatchIterator
    valid: ParallelCorpus


def prepare(cfg: TrainConfig, dist: Distributed, run: RunFolder, identity: dict,
            tokenizer: Tokenizer | None = None) -> Prepared:
    """Check ``cfg`` against ``run`` (when it holds a run), seed the generators, read the
    splits, take the run's vocabulary (or ``tokenizer``, or train one: rank 0 only), build
    the iterators and create the run folder with ``identity`` (its ``run.json``). Other
    ranks wait for rank 0, then read the vocabulary it wrote."""
    resuming = run.exists()
    if resuming:
        run.check(identity)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)

    from .prepared import from_prepared, prepared_folder   # a corpus prepared on disk
    folder = prepared_folder(cfg, dist)
    if folder is not None:
        return from_prepared(folder, cfg, dist, run, identity, tokenizer)
    train, valid = load_split(cfg, "train"), load_split(cfg, "valid")
    if resuming and run.tokenizer_file.exists():
        own = run.tokenizer()
        if tokenizer is not None and tokenizer.serialized() != own.serialized():
            raise TrainingError(f"the tokenizer handed in is not {run.tokenizer_file}, "
                                f"the vocabulary of the run in {run.path}")
        tokenizer = own
    elif dist.main and tokenizer is None:
        tokenizer = train_tokenizer(train, cfg)
    if tokenizer is not None and tokenizer.vocab_size != cfg.vocab_size:
        raise TrainingError(f"the tokenizer has {tokenizer.vocab_size} pieces but "
                            f"--vocab-size is {cfg.vocab_size}")
    if dist.main:
        iters = batch_iterators(cfg, tokenizer, train, valid)
        if not (resuming and run.tokenizer_file.exists()):
            run.create(identity, tokenizer)       # every check passed: a run now
    dist.barrier()
    if not dist.main:
        tokenizer = run.tokenizer()
        iters = batch_iterators(cfg, tokenizer, train, valid)
    return Prepared(tokenizer, *iters, valid)
