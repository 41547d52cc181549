"""A corpus prepared once for training: its BPE vocabulary and token ids, memory-mapped.

WMT 2014 English-German (section 5.1) has about 4.5 million sentence pairs. Read as Python
strings and lists of token ids it takes gigabytes in every training process, eight times
over under 8-GPU DDP, and the BPE vocabulary would train single-threaded on all 9 million
sentences. ``python -m transformer prepare`` (:func:`prepare_corpus`) instead reads the
corpus in pieces (:class:`~transformer.data.CorpusStream`), trains the vocabulary on a
random sample of pairs, encodes every pair in worker processes and writes::

    folder/prepared.json            manifest: format, corpus, settings, counts, hashes, the
                                    vocabulary's fingerprint
    folder/spm.model                the shared BPE vocabulary
    folder/{split}.{en,de}.ids      each sentence's token ids, one after another (uint16
                                    when the vocabulary has at most 65,536 pieces, else int32)
    folder/{split}.{en,de}.offsets  int64, pairs + 1: sentence i is ids[offsets[i]:offsets[i+1]]
    folder/valid.json               the valid split's text, for BLEU during validation

for the train and valid splits, English and German (the direction is chosen when training).
The folder is written under a temporary name and renamed: it is whole or absent.

:class:`PreparedCorpus` opens a folder with ``numpy.memmap``: the token ids stay in the page
cache, shared by every process that maps them, and a training process holds privately only
the lengths and one epoch's batch plan (:class:`~transformer.batching.BatchIterator`, the
same batcher as for ids in memory, reads each batch's ids when it makes the batch).

The trainer (:func:`~transformer.training.prepare.prepare`, with
:func:`~transformer.training.prepare.from_prepared`) trains from a prepared folder
when ``--corpus`` names one, and prepares a corpus of the hub (``--corpus wmt14``) itself,
once, on rank 0, into the folder its registry entry names
(:meth:`~transformer.corpora.HubCorpus.prepared_folder`; the other ranks wait for it).
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

from ..batching import BatchIterator
from ..config import BOS_ID, EOS_ID, PAD_ID
from ..data import CorpusStream, ParallelCorpus
from ..output import output_folder
from ..tokenizer import Tokenizer, same_vocabulary
from .vocabulary import train_tokenizer
from ..errors import InputError

FORMAT, VERSION = "transformer-prepared-corpus", 1
MANIFEST = "prepared.json"
SIDES = ("en", "de")                 # the files hold both; --direction picks the source
PREPARED_SPLITS = ("train", "valid")
DEFAULT_SAMPLE = 1_000_000           # pairs the BPE vocabulary is trained on (both sides)
CHUNK_PAIRS = 20_000                 # pairs per encoding task


def is_prepared(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a prepared corpus (its manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def _settings(cfg, sample: int, tokenizer: Tokenizer | None) -> dict:
    """What a prepared folder is made from: reused only when these are equal."""
    return {"corpus": cfg.corpus_spec.resolved(), "vocab_size": cfg.vocab_size,
            "seed": cfg.seed, "sample": sample,
            "tokenizer": "trained" if tokenizer is None else tokenizer.fingerprint}


def _recorded_is(recorded, vocabulary) -> bool:
    """Whether ``recorded`` (a manifest's entry) is the fingerprint of ``vocabulary``, in
    either spelling (a folder prepared before the fingerprint had its prefix holds the
    bare hex); anything else is not."""
    try:
        return isinstance(recorded, str) and same_vocabulary(recorded, vocabulary)
    except ValueError:
        return False


def _same_setting(key: str, theirs, ours) -> bool:
    """Whether a stored setting equals ours; the vocabulary by its fingerprint."""
    if key == "tokenizer" and ours != "trained":
        return _recorded_is(theirs, ours)
    return theirs == ours


# --------------------------------------------------------------------------- writing
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
    files = {side: open(folder / f"{split}.{side}.ids", "wb") for side in SIDES}

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
        with open(folder / f"{split}.{side}.offsets", "wb") as f:
            offsets.tofile(f)
            f.flush()
            os.fsync(f.fileno())
        tokens[side] = int(offsets[-1])
    return {"pairs": n, "tokens": tokens, "sha256": digest.hexdigest()}


def prepare_corpus(cfg, out: str | os.PathLike, sample: int = DEFAULT_SAMPLE,
                   workers: int = 0, tokenizer: Tokenizer | None = None, log=print) -> Path:
    """Prepare corpus ``cfg.corpus`` (a folder, a mixture or a corpus of the hub; ``cfg`` is a
    :class:`~transformer.training.config.TrainConfig`, whose ``vocab_size``, ``seed`` and
    ``data_root`` are used) into the folder ``out`` (see the module docstring).

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
        (scratch / "spm.model").write_bytes(tokenizer.serialized())
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
        (scratch / "valid.json").write_text(json.dumps(
            {side: [pair[i] for pair in text] for i, side in enumerate(SIDES)},
            ensure_ascii=False), encoding="utf-8")
        manifest = {"format": FORMAT, "version": VERSION, "settings": settings,
                    "dtype": dtype, "vocab_size": tokenizer.vocab_size,
                    "vocabulary": tokenizer.fingerprint,
                    "bpe_pairs": bpe_pairs, "splits": splits,
                    "seconds": round(time.perf_counter() - start, 1)}
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    log(f"prepared {cfg.corpus} into {out} in {time.perf_counter() - start:.0f} s")
    return out


# --------------------------------------------------------------------------- reading
def _count(value) -> bool:
    """Whether a manifest's ``value`` is a count: an integer >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class RaggedIds:
    """The token ids of one side of a split: ``ids[i]`` is sentence ``i`` (a numpy view of
    the memory-mapped file), ``len(ids)`` the number of sentences."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray):
        self.ids, self.offsets = ids, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]:self.offsets[i + 1]]

    def lengths(self) -> np.ndarray:
        """Tokens of each sentence (int64, this process's own copy)."""
        return np.diff(self.offsets)


class PreparedCorpus:
    """A folder written by :func:`prepare_corpus`, opened for reading. A missing or
    damaged file raises naming it; nothing but the manifest is read until asked."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder).expanduser()
        path = self.folder / MANIFEST
        if not path.is_file():
            raise FileNotFoundError(f"{self.folder} is not a prepared corpus: it has no "
                                    f"{MANIFEST} (python -m transformer prepare writes one)")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or \
                manifest.get("version") != VERSION:
            found = (manifest.get("format"), manifest.get("version")) \
                if isinstance(manifest, dict) else type(manifest).__name__
            raise InputError(f"{path}: not a {FORMAT} of version {VERSION} (found {found})")
        for key in ("settings", "dtype", "vocab_size", "splits"):
            if key not in manifest:
                raise InputError(f"{path}: the field {key!r} is missing")
        if manifest["dtype"] not in ("uint16", "int32"):
            raise InputError(f"{path}: dtype {manifest['dtype']!r} is not uint16 or int32")
        if not _count(manifest["vocab_size"]) or manifest["vocab_size"] < 5:
            raise InputError(f"{path}: vocab_size {manifest['vocab_size']!r} is not a "
                             f"vocabulary size (an integer >= 5)")
        if not isinstance(manifest["settings"], dict) or \
                not isinstance(manifest["splits"], dict):
            raise InputError(f"{path}: settings and splits must be JSON objects")
        for split in PREPARED_SPLITS:
            entry = manifest["splits"].get(split)
            tokens = entry.get("tokens") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not _count(entry.get("pairs")) or \
                    not isinstance(tokens, dict) or not all(_count(tokens.get(s)) for s in SIDES):
                raise InputError(f"{path}: splits.{split} lacks its pairs or tokens counts "
                                 f"(integers >= 0)")
        self.manifest = manifest
        self.dtype = np.dtype(manifest["dtype"])
        self.vocab_size = manifest["vocab_size"]
        self.corpus = manifest["settings"].get("corpus", str(self.folder))

    def __repr__(self) -> str:
        return f"PreparedCorpus({str(self.folder)!r})"

    def pairs(self, split: str) -> int:
        return self.manifest["splits"][split]["pairs"]

    def tokenizer(self) -> Tokenizer:
        """The vocabulary the ids were encoded with (checked against the manifest's hash
        and vocabulary size)."""
        path = self.folder / "spm.model"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the prepared corpus is incomplete")
        recorded = self.manifest.get("vocabulary", self.manifest.get("tokenizer_sha256"))
        if not _recorded_is(recorded, path.read_bytes()):
            raise InputError(f"{path} is not the vocabulary the ids in {self.folder} were "
                             f"encoded with (its fingerprint differs from {MANIFEST}'s)")
        tokenizer = Tokenizer.load(path)
        if tokenizer.vocab_size != self.vocab_size:
            raise InputError(f"{self.folder / MANIFEST}: vocab_size {self.vocab_size} but "
                             f"{path} has {tokenizer.vocab_size} pieces")
        return tokenizer

    def _map(self, name: str, dtype, count: int) -> np.ndarray:
        path = self.folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the prepared corpus is incomplete")
        size, expected = path.stat().st_size, count * np.dtype(dtype).itemsize
        if size != expected:
            raise InputError(f"{path} has {size:,} bytes; {MANIFEST} says {count:,} values "
                             f"of {np.dtype(dtype).name}, {expected:,} bytes")
        if count == 0:
            return np.zeros(0, dtype=dtype)
        return np.memmap(path, dtype=dtype, mode="r", shape=(count,))

    def sentences(self, split: str, side: str) -> RaggedIds:
        """The token ids of ``side`` (en or de) of ``split``, memory-mapped, checked: the
        offsets run from 0 to the manifest's token count without going back, and every id
        is below the vocabulary size (one pass over the file: what a training step would
        otherwise meet as "index out of range" after the run folder was made)."""
        entry = self.manifest["splits"][split]
        name = f"{split}.{side}.offsets"
        offsets = self._map(name, np.int64, entry["pairs"] + 1)
        if offsets[0] != 0 or offsets[-1] != entry["tokens"][side]:
            raise InputError(f"{self.folder / name}: runs from {offsets[0]} to "
                             f"{offsets[-1]}, not from 0 to {entry['tokens'][side]} tokens")
        back = np.flatnonzero(np.diff(offsets) < 0)
        if len(back):
            raise InputError(f"{self.folder / name}: sentence {back[0]} ends before it "
                             f"starts (offsets {offsets[back[0]]} then {offsets[back[0] + 1]})")
        name = f"{split}.{side}.ids"
        ids = self._map(name, self.dtype, entry["tokens"][side])
        if len(ids) and (int(ids.max()) >= self.vocab_size or int(ids.min()) < 0):
            where = int(np.flatnonzero((ids >= self.vocab_size) | (ids < 0))[0])
            raise InputError(f"{self.folder / name}: token id {int(ids[where])} of sentence "
                             f"{int(np.searchsorted(offsets, where, side='right')) - 1} is "
                             f"outside the vocabulary (vocab_size {self.vocab_size} in "
                             f"{MANIFEST})")
        return RaggedIds(ids, offsets)

    def batch_iterator(self, split: str, direction: str, max_tokens: int, seed: int = 0,
                       shuffle: bool = True, max_len: int | None = None,
                       tokenizer: Tokenizer | None = None) -> BatchIterator:
        """The batches of ``split`` in ``direction`` (en-de: English is the source)."""
        src, tgt = direction.split("-")
        ids = dict(pad_id=PAD_ID, bos_id=BOS_ID, eos_id=EOS_ID) if tokenizer is None else \
            dict(pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id)
        return BatchIterator(self.sentences(split, src), self.sentences(split, tgt),
                             max_tokens, seed=seed, shuffle=shuffle, max_len=max_len, **ids)

    def valid_text(self, direction: str) -> ParallelCorpus:
        """The valid split's sentence pairs as text, in ``direction``."""
        path = self.folder / "valid.json"
        try:
            text = json.loads(path.read_text(encoding="utf-8"))
            en, de = text["en"], text["de"]
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} is missing: the prepared corpus is "
                                    f"incomplete") from None
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: not the valid split's text ({exc})") from None
        corpus = ParallelCorpus(en, de, name=f"{self.folder.name}/valid (en-de)")
        return corpus.swapped() if direction == "de-en" else corpus
