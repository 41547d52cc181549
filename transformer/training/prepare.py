"""``python -m transformer prepare``: a corpus prepared once for training, its BPE
vocabulary and token ids written to disk (:func:`prepare_corpus`).

WMT 2014 English-German (section 5.1) has about 4.5 million sentence pairs. Read as Python
strings and lists of token ids it takes gigabytes in every training process, eight times
over under 8-GPU DDP, and the BPE vocabulary would train single-threaded on all 9 million
sentences. :func:`prepare_corpus` instead reads the corpus in pieces
(:class:`~transformer.data.CorpusStream`), trains the vocabulary on a random sample of
pairs (:func:`.vocabulary.train_tokenizer`), encodes every pair in worker processes and
writes the folder that :mod:`.corpus_files` describes and reads. The folder is written
under a temporary name and renamed: it is whole or absent.
"""
from __future__ import annotations

import collections
import hashlib
import json
import math
import multiprocessing
import os
import random
import time
from pathlib import Path

import numpy as np
import torch

from ..data import CorpusStream, ParallelCorpus
from ..errors import InputError
from ..output import output_folder
from ..tokenizer import Tokenizer
from .corpus_files import (MANIFEST, SIDES, VALID_TEXT, VOCABULARY, PreparedCorpus, ids_file,
                           is_prepared, manifest_text, offsets_file, recorded_is)
from .vocabulary import train_tokenizer

DEFAULT_SAMPLE = 1_000_000           # pairs the BPE vocabulary is trained on (both sides)
CHUNK_PAIRS = 20_000                 # pairs per encoding task


def _settings(cfg, sample: int, tokenizer: Tokenizer | None) -> dict:
    """What a prepared folder is made from: reused only when these are equal."""
    return {"corpus": cfg.corpus_spec.resolved(), "vocab_size": cfg.vocab_size,
            "seed": cfg.seed, "sample": sample,
            "tokenizer": "trained" if tokenizer is None else tokenizer.fingerprint}


def _same_setting(key: str, theirs, ours) -> bool:
    """Whether a stored setting equals ours; the vocabulary by its fingerprint."""
    if key == "tokenizer" and ours != "trained":
        return recorded_is(theirs, ours)
    return theirs == ours


def _sample_pairs(stream, k: int, seed: int) -> tuple[list, int, str]:
    """One pass over ``stream``: ``k`` pairs drawn uniformly at random (all of them when
    there are no more than ``k``), in corpus order; the number of pairs; their sha256.
    Reservoir sampling (Li's algorithm L): the sample is held, never the corpus."""
    rng = random.Random(seed)
    draw = lambda: 1.0 - rng.random()                       # in (0, 1]
    reservoir, digest, n = [], hashlib.sha256(), 0
    weight = min(math.exp(math.log(draw()) / k), 1 - 1e-12)
    next_index = k - 1 + int(math.log(draw()) / math.log1p(-weight)) + 1
    for n, (en, de) in enumerate(stream, start=1):
        digest.update(f"{en}\t{de}\n".encode())
        index = n - 1
        if index < k:
            reservoir.append((index, en, de))
        elif index == next_index:
            reservoir[rng.randrange(k)] = (index, en, de)
            weight = min(weight * math.exp(math.log(draw()) / k), 1 - 1e-12)
            next_index += int(math.log(draw()) / math.log1p(-weight)) + 1
    reservoir.sort()
    return [(en, de) for _, en, de in reservoir], n, digest.hexdigest()


_WORKER_TOKENIZER = None


def _worker_init(model: bytes) -> None:
    global _WORKER_TOKENIZER
    _WORKER_TOKENIZER = Tokenizer.from_serialized(model)


def _encode_chunk(en: list[str], de: list[str], dtype: str, tok: Tokenizer | None = None):
    """Token ids of a chunk of pairs: per side, the flat ids and the lengths."""
    tok = tok or _WORKER_TOKENIZER
    out = []
    for texts in (en, de):
        rows = tok.encode_batch(texts)
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((i for row in rows for i in row), dtype=dtype,
                           count=int(lengths.sum()))
        out.append((flat, lengths))
    return out


def _chunks(stream, size: int):
    en, de = [], []
    for a, b in stream:
        en.append(a)
        de.append(b)
        if len(en) == size:
            yield en, de
            en, de = [], []
    if en:
        yield en, de


class _Encoder:
    """Encodes chunks of pairs in order, in ``workers`` processes (in this one for 1),
    with a bounded number of chunks in flight: the corpus is never all in memory."""

    def __init__(self, tok: Tokenizer, workers: int, dtype: str):
        self.tok, self.dtype, self.workers, self.pool = tok, dtype, workers, None
        if workers > 1:
            # fork, unless CUDA has started here (the trainer's rank 0): then spawn
            method = "spawn" if torch.cuda.is_initialized() else "fork"
            self.pool = multiprocessing.get_context(method).Pool(
                workers, initializer=_worker_init, initargs=(tok.serialized(),))

    def map(self, chunks):
        if self.pool is None:
            for en, de in chunks:
                yield _encode_chunk(en, de, self.dtype, self.tok)
            return
        pending = collections.deque()
        for en, de in chunks:
            pending.append(self.pool.apply_async(_encode_chunk, (en, de, self.dtype)))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def _write_split(stream, split: str, folder: Path, encoder: _Encoder) -> dict:
    """Encode ``stream`` into ``folder/{split}.{side}.ids`` and ``.offsets``; its counts."""
    digest, n, tokens = hashlib.sha256(), 0, {}
    lengths = {side: [] for side in SIDES}
    files = {side: open(folder / ids_file(split, side), "wb") for side in SIDES}

    def hashed(pairs):
        for en, de in pairs:
            digest.update(f"{en}\t{de}\n".encode())
            yield en, de

    try:
        for encoded in encoder.map(_chunks(hashed(stream), CHUNK_PAIRS)):
            for side, (flat, lens) in zip(SIDES, encoded):
                flat.tofile(files[side])
                lengths[side].append(lens)
            n += len(encoded[0][1])
    finally:
        for f in files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()
    for side in SIDES:
        lens = np.concatenate(lengths[side]) if lengths[side] else np.zeros(0, np.int64)
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        with open(folder / offsets_file(split, side), "wb") as f:
            offsets.tofile(f)
            f.flush()
            os.fsync(f.fileno())
        tokens[side] = int(offsets[-1])
    return {"pairs": n, "tokens": tokens, "sha256": digest.hexdigest()}


def prepare_corpus(cfg, out: str | os.PathLike, sample: int = DEFAULT_SAMPLE,
                   workers: int = 0, tokenizer: Tokenizer | None = None, log=print) -> Path:
    """Prepare corpus ``cfg.corpus`` (a folder, a mixture or a corpus of the hub; ``cfg`` is a
    :class:`~transformer.training.config.TrainConfig`, whose ``vocab_size``, ``seed`` and
    ``data_root`` are used) into the folder ``out`` (the format of :mod:`.corpus_files`).

    The vocabulary is trained on ``sample`` pairs drawn at random with ``cfg.seed`` (all
    pairs when there are no more, in corpus order: then it is the vocabulary the in-memory
    path trains), or is ``tokenizer`` when one is given. ``workers`` processes encode
    (0: one per CPU, at most 8). When ``out`` already holds a corpus prepared with the same
    settings it is returned as it is; other settings raise ValueError naming them.
    """
    if sample < 1:
        raise InputError(f"--sample must be >= 1 pair, got {sample}")
    spec = cfg.corpus_spec
    if spec.folder is not None and is_prepared(spec.folder):
        raise InputError(f"--corpus {cfg.corpus} is a prepared corpus already; prepare the "
                         f"corpus it was made from")
    out = Path(out).expanduser()
    settings = _settings(cfg, sample, tokenizer)
    if is_prepared(out):
        theirs = PreparedCorpus(out).manifest["settings"]
        differ = [f"{k}: {theirs.get(k)!r} there, {v!r} here" for k, v in settings.items()
                  if not _same_setting(k, theirs.get(k), v)]
        if differ:
            raise InputError(f"{out} holds a corpus prepared with other settings ("
                             f"{'; '.join(differ)}): remove it or choose another folder")
        log(f"{out} holds {cfg.corpus} prepared with these settings already")
        return out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out} exists and is not a prepared corpus: choose another folder")
    workers = workers or min(8, os.cpu_count() or 1)
    start = time.perf_counter()
    # a temporary folder beside out, renamed to it when complete; one that a killed run
    # left is removed (transformer/output.py)
    with output_folder(out) as scratch:
        train = CorpusStream(spec, "train")
        if tokenizer is None:
            pairs, n, digest = _sample_pairs(train, sample, cfg.seed)
            log(f"read {n:,} training pairs of {cfg.corpus} in "
                f"{time.perf_counter() - start:.0f} s; training the BPE vocabulary on "
                f"{len(pairs):,} of them")
            tokenizer = train_tokenizer(
                ParallelCorpus([en for en, _ in pairs], [de for _, de in pairs]), cfg)
            del pairs
            bpe_pairs = min(n, sample)
        else:
            n = digest = None
            bpe_pairs = 0
        (scratch / VOCABULARY).write_bytes(tokenizer.serialized())
        dtype = "uint16" if tokenizer.vocab_size <= 1 << 16 else "int32"
        log(f"{time.perf_counter() - start:.0f} s: encoding with {workers} worker process(es)")
        encoder = _Encoder(tokenizer, workers, dtype)
        try:
            splits = {"train": _write_split(train, "train", scratch, encoder)}
            splits["train"]["dropped_empty"] = train.dropped_empty
            valid = CorpusStream(spec, "valid")
            text = list(valid)                    # a few thousand pairs: kept as text too
            splits["valid"] = _write_split(text, "valid", scratch, encoder)
            splits["valid"]["dropped_empty"] = valid.dropped_empty
        finally:
            encoder.close()
        if n is not None and (splits["train"]["pairs"], splits["train"]["sha256"]) != (n, digest):
            raise InputError(f"the training split of {cfg.corpus} changed while it was being "
                             f"prepared ({n:,} pairs, then {splits['train']['pairs']:,})")
        (scratch / VALID_TEXT).write_text(json.dumps(
            {side: [pair[i] for pair in text] for i, side in enumerate(SIDES)},
            ensure_ascii=False), encoding="utf-8")
        (scratch / MANIFEST).write_text(manifest_text({
            "settings": settings, "dtype": dtype, "vocab_size": tokenizer.vocab_size,
            "vocabulary": tokenizer.fingerprint, "bpe_pairs": bpe_pairs, "splits": splits,
            "seconds": round(time.perf_counter() - start, 1)}), encoding="utf-8")
    log(f"prepared {cfg.corpus} into {out} in {time.perf_counter() - start:.0f} s")
    return out
