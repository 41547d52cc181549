"""A prepared corpus on disk: its format, and its reader :class:`PreparedCorpus`.

A prepared corpus is a folder of token ids, written once (by ``python -m transformer
prepare``) and memory-mapped by every training process that reads it::

    folder/prepared.json            manifest: format, corpus, settings, counts, hashes, the
                                    vocabulary's fingerprint
    folder/spm.model                the shared BPE vocabulary
    folder/{split}.{en,de}.ids      each sentence's token ids, one after another (uint16
                                    when the vocabulary has at most 65,536 pieces, else int32)
    folder/{split}.{en,de}.offsets  int64, pairs + 1: sentence i is ids[offsets[i]:offsets[i+1]]
    folder/valid.json               the valid split's text, for BLEU during validation

for the train and valid splits, English and German (the direction is chosen when training).

:class:`PreparedCorpus` opens a folder with ``numpy.memmap``: the token ids stay in the page
cache, shared by every process that maps them, and a training process holds privately only
the lengths and one epoch's batch plan (:class:`~transformer.batching.BatchIterator`, the
same batcher as for ids in memory, reads each batch's ids when it makes the batch).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..batching import BatchIterator
from ..config import BOS_ID, EOS_ID, PAD_ID
from ..data import ParallelCorpus
from ..errors import InputError
from ..tokenizer import Tokenizer, same_vocabulary

FORMAT, VERSION = "transformer-prepared-corpus", 1
MANIFEST = "prepared.json"
VOCABULARY = "spm.model"
VALID_TEXT = "valid.json"
SIDES = ("en", "de")                 # the files hold both; --direction picks the source
PREPARED_SPLITS = ("train", "valid")


def ids_file(split: str, side: str) -> str:
    """The file of the token ids of ``side`` of ``split``, one sentence after another."""
    return f"{split}.{side}.ids"


def offsets_file(split: str, side: str) -> str:
    """The file of the offsets of :func:`ids_file`'s sentences (int64, pairs + 1)."""
    return f"{split}.{side}.offsets"


def manifest_text(body: dict) -> str:
    """The text of :data:`MANIFEST`: the format and its version, then ``body``."""
    return json.dumps({"format": FORMAT, "version": VERSION, **body}, indent=1) + "\n"


def is_prepared(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a prepared corpus (its manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def recorded_is(recorded, vocabulary) -> bool:
    """Whether ``recorded`` (a manifest's entry) is the fingerprint of ``vocabulary``
    (``sha256:<hex>``); anything else is not."""
    try:
        return isinstance(recorded, str) and same_vocabulary(recorded, vocabulary)
    except ValueError:
        return False


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
    """A folder written by ``python -m transformer prepare``, opened for reading. A missing or
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
        path = self.folder / VOCABULARY
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the prepared corpus is incomplete")
        recorded = self.manifest.get("vocabulary")
        if not recorded_is(recorded, recorded):          # not a fingerprint at all
            raise InputError(f"{self.folder / MANIFEST}: its 'vocabulary' is {recorded!r}, "
                             f"not a fingerprint (sha256:<hex>)")
        if not recorded_is(recorded, path.read_bytes()):
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
        name = offsets_file(split, side)
        offsets = self._map(name, np.int64, entry["pairs"] + 1)
        if offsets[0] != 0 or offsets[-1] != entry["tokens"][side]:
            raise InputError(f"{self.folder / name}: runs from {offsets[0]} to "
                             f"{offsets[-1]}, not from 0 to {entry['tokens'][side]} tokens")
        back = np.flatnonzero(np.diff(offsets) < 0)
        if len(back):
            raise InputError(f"{self.folder / name}: sentence {back[0]} ends before it "
                             f"starts (offsets {offsets[back[0]]} then {offsets[back[0] + 1]})")
        name = ids_file(split, side)
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
        path = self.folder / VALID_TEXT
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
