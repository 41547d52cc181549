"""A run's data before its first update: the corpus splits, the BPE vocabulary, batches.

Section 5.1: "Sentences were encoded using byte-pair encoding, which has a shared
source-target vocabulary ... Sentence pairs were batched together by approximate sequence
length." :func:`load_run_data` does what ``python -m transformer train`` does before it
builds the model: it checks the settings against the run folder, reads the train and valid
splits (:func:`load_split`), trains the vocabulary (:func:`.vocabulary.train_tokenizer`) or
takes the run's, builds the token-bucketed iterators (:func:`batch_iterators`) and only
then, every check passed, writes the run folder.

A corpus prepared on disk (a folder written by ``python -m transformer prepare``,
:func:`.prepare.prepare_corpus`) is memory-mapped instead, with its own vocabulary
(:func:`prepared_folder`, :func:`from_prepared`; the format and its reader are
:mod:`.corpus_files`'s). A corpus of the hub (``--corpus wmt14``) is prepared here, once,
on rank 0, into the folder its registry entry names
(:meth:`~transformer.corpora.HubCorpus.prepared_folder`; the other ranks wait for it).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..batching import BatchIterator
from ..data import CorpusStream, ParallelCorpus
from ..tokenizer import Tokenizer, same_vocabulary
from .config import TrainConfig, TrainingError
from .distributed import Distributed
from .corpus_files import PREPARED_SPLITS, VOCABULARY, PreparedCorpus, is_prepared
from .prepare import prepare_corpus
from .run_folder import RunFolder
from .vocabulary import train_tokenizer


def load_split(cfg: TrainConfig, split: str) -> ParallelCorpus:
    """The ``split`` of ``cfg``'s corpus in ``cfg.direction``; an empty split raises
    :class:`TrainingError` naming its files."""
    spec = cfg.corpus_spec
    corpus = CorpusStream(spec, split).read(cfg.direction)
    if len(corpus) == 0:
        where = " and ".join(f"{part.folder}/{split}.src and {split}.tgt"
                             if part.hub is None else part.name for part in spec.parts)
        raise TrainingError(f"the {split} split is empty: {where} hold no sentence pairs")
    return corpus


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
class RunData:
    """What :func:`load_run_data` hands the trainer: the vocabulary, the two iterators and the
    validation pairs as text (for BLEU during validation)."""

    tokenizer: Tokenizer
    train_iter: BatchIterator
    valid_iter: BatchIterator
    valid: ParallelCorpus


def load_run_data(cfg: TrainConfig, dist: Distributed, run: RunFolder, identity: dict,
                  tokenizer: Tokenizer | None = None) -> RunData:
    """Check ``cfg`` against ``run`` (when it holds a run), seed the generators, read the
    splits, take the run's vocabulary (or ``tokenizer``, or train one: rank 0 only), build
    the iterators and create the run folder with ``identity`` (its ``run.json``). Other
    ranks wait for rank 0, then read the vocabulary it wrote."""
    resuming = run.exists()
    if resuming:
        run.check(identity)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)

    folder = prepared_folder(cfg, dist)                    # a corpus prepared on disk
    if folder is not None:
        return from_prepared(folder, cfg, dist, run, identity, tokenizer)
    train, valid = load_split(cfg, "train"), load_split(cfg, "valid")
    if resuming and run.tokenizer_file.exists():
        own = run.tokenizer()
        if tokenizer is not None and not same_vocabulary(tokenizer, own):
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
    return RunData(tokenizer, *iters, valid)


# --------------------------------------------------------------------------- a prepared corpus
def prepared_folder(cfg, dist=None) -> Path | None:
    """The prepared folder that ``cfg``'s corpus trains from, or None for the in-memory
    path: ``--corpus`` naming a prepared folder, or a corpus of the hub (``wmt14``),
    prepared here on first use (:meth:`~transformer.corpora.HubCorpus.prepared_folder`; by
    rank 0, while the other ranks wait for its manifest)."""
    spec = cfg.corpus_spec
    if spec.hub is not None:
        folder = spec.hub.prepared_folder(cfg.vocab_size, cfg.seed, cfg.data_root)
        if dist is None or dist.main:
            try:
                prepare_corpus(cfg, folder)
            except (OSError, ValueError) as exc:
                raise TrainingError(
                    f"preparing {spec.hub.name} into {folder} failed: {exc}. Prepare it "
                    f"elsewhere with `python -m transformer prepare --corpus {spec.hub.name} "
                    f"--vocab-size {cfg.vocab_size} --seed {cfg.seed} --out DIR` and train "
                    f"with --corpus DIR") from None
        else:
            waited = 0.0
            while not is_prepared(folder):    # rank 0 may take longer than a barrier allows
                if waited == 0.0:
                    print(f"rank {dist.rank}: waiting for rank 0 to prepare {folder}",
                          flush=True)
                time.sleep(2.0)
                waited += 2.0
        return folder
    return spec.folder if spec.folder is not None and is_prepared(spec.folder) else None


def from_prepared(folder: Path, cfg, dist, run, identity: dict,
                  tokenizer: Tokenizer | None = None):
    """:func:`load_run_data`'s work for a prepared corpus: its
    vocabulary (the run's, when resuming, must be the same), memory-mapped iterators with
    ``cfg``'s batching, the valid split's text; then the run folder is created."""
    store = PreparedCorpus(folder)
    own = store.tokenizer()
    if own.vocab_size != cfg.vocab_size:
        raise TrainingError(f"{folder} was prepared with a vocabulary of {own.vocab_size} "
                            f"pieces but --vocab-size is {cfg.vocab_size}")
    resuming = run.exists() and run.tokenizer_file.exists()
    if resuming and not same_vocabulary(run.tokenizer(), own):
        raise TrainingError(f"{run.tokenizer_file} is not {folder / VOCABULARY}, the "
                            f"vocabulary the prepared corpus was encoded with")
    if tokenizer is not None and not same_vocabulary(tokenizer, own):
        raise TrainingError(f"the tokenizer handed in is not {folder / VOCABULARY}, the "
                            f"vocabulary the prepared corpus was encoded with")
    for split in PREPARED_SPLITS:
        if store.pairs(split) == 0:
            raise TrainingError(f"the {split} split is empty: {folder} holds no {split} "
                                f"sentence pairs")
    train_iter = store.batch_iterator("train", cfg.direction, cfg.max_tokens, seed=cfg.seed,
                                      max_len=cfg.max_len, tokenizer=own)
    if len(train_iter) == 0:
        raise TrainingError(f"every training pair of {cfg.corpus} is longer than "
                            f"--max-len {cfg.max_len} tokens: nothing to train on")
    valid_iter = store.batch_iterator("valid", cfg.direction, cfg.max_tokens, shuffle=False,
                                      tokenizer=own)
    valid = store.valid_text(cfg.direction)
    if dist.main and not resuming:
        run.create(identity, own)                 # every check passed: a run now
    dist.barrier()
    return RunData(own, train_iter, valid_iter, valid)
