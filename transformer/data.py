"""Parallel corpora: read aligned sentence files, find the data folder, fetch Multi30k.

A corpus split is two aligned line files, ``{split}.src(.gz)`` (English) and
``{split}.tgt(.gz)`` (German), in a folder under the data directory::

    data_dir()/multi30k-en-de/{train,valid,test}.{src,tgt}.gz
    data_dir()/tatoeba-en-de/...

Several corpora train together as a mixture, named ``"multi30k-en-de*2+tatoeba-en-de"``:
its train split holds each part's train split as many times as its ``*N`` says (once
without), its valid split each part's valid split once, and it has no test split (each
corpus is scored on its own). :func:`concatenate_corpora` writes such a combination into
one folder instead (for a machine that reads folders only).

``data_dir()`` (:func:`transformer.corpora.data_dir`) is ``--data-root`` (the ``root``
arguments), else the ``TRANSFORMER_DATA`` environment variable, else
``~/.cache/transformer/data``. A corpus the project knows
(:mod:`transformer.corpora`: Multi30k, Tatoeba) is fetched into it on first use.

What a corpus name means (a folder, a mixture, WMT14) is decided once, by
:class:`~transformer.corpora.CorpusSpec`. One reader, :class:`CorpusStream`, reads every
corpus pair by pair; :func:`load_corpus` keeps what it reads in memory and ``python -m
transformer prepare`` reads it in pieces. It fails loudly: a line-count mismatch, an
undecodable byte or a missing file raises with the file, the line and the counts, never
a silently misaligned corpus.
"""
from __future__ import annotations

import gzip
import logging
import os
import warnings
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Iterable, Iterator

from .corpora.spec import CorpusSpec
from .errors import InputError
from .output import open_output

log = logging.getLogger(__name__)

DIRECTIONS = ("en-de", "de-en")
SPLITS = ("train", "valid", "test")
_SPLIT_ALIASES = {"val": "valid", "validation": "valid", "dev": "valid"}

@dataclass
class ParallelCorpus:
    """Aligned sentence pairs: ``src[i]`` translates to ``tgt[i]``."""
    src: list[str]
    tgt: list[str]
    dropped_empty: int = 0   # pairs removed because one side was empty or blank
    name: str = ""

    def __len__(self) -> int:
        return len(self.src)

    def __iter__(self):
        return iter(zip(self.src, self.tgt))

    def swapped(self) -> "ParallelCorpus":
        """The same pairs with source and target exchanged (en-de <-> de-en)."""
        return ParallelCorpus(self.tgt, self.src, self.dropped_empty, self.name)


def part_names(name: str | os.PathLike, root: str | os.PathLike | None = None) -> list[str]:
    """The corpora that ``name`` reads: each part of a mixture, or ``name`` itself. Each has
    its own test split (a mixture has none)."""
    return CorpusSpec.parse(name, root).names()


def corpus_folders(name: str | os.PathLike, root: str | os.PathLike | None = None) -> list[Path]:
    """The folders a corpus name reads: one, or each part of a mixture (absolute); a corpus
    the project knows is fetched first when it is not there yet."""
    return CorpusSpec.parse(name, root).folders()


# --------------------------------------------------------------------------- reading
def iter_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a UTF-8 text file (gzip-compressed when the name ends in ``.gz``), one
    at a time, stripped of surrounding whitespace (a leading byte-order mark removed).
    Raises with the file and 1-based line number on bytes that are not UTF-8."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise InputError(f"{path}: line {number} is not valid UTF-8 "
                                     f"({e.reason} at byte {e.start})") from None
                if number == 1 and line.startswith("\ufeff"):   # a byte-order mark is not text
                    line = line[1:]
                yield line
    except (gzip.BadGzipFile, EOFError) as e:
        raise InputError(f"{path}: not a readable gzip file ({e})") from None


def read_pairs(src_path: str | os.PathLike,
               tgt_path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """The (source, target) lines of two aligned files (plain or ``.gz``), one pair at a
    time; raises ValueError naming both files and their line counts when one file ends
    first."""
    for src, tgt in zip_longest(iter_lines(src_path), iter_lines(tgt_path)):
        if src is None or tgt is None:          # one file ended first: count both
            n_src, n_tgt = (sum(1 for _ in iter_lines(path)) for path in (src_path, tgt_path))
            raise InputError(f"parallel files are not aligned: {src_path} has {n_src} lines "
                             f"but {tgt_path} has {n_tgt} lines")
        yield src, tgt


def read_parallel(src_path: str | os.PathLike, tgt_path: str | os.PathLike,
                  name: str | None = None) -> ParallelCorpus:
    """Read two aligned line files (plain or ``.gz``) into a :class:`ParallelCorpus`.

    Raises FileNotFoundError for a missing file and ValueError when the files have
    different line counts or hold bytes that are not UTF-8. Pairs with an empty side
    are dropped and counted in ``dropped_empty`` (:class:`PairStream`'s rules).
    """
    return FilePairs(src_path, tgt_path, name).read()


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise InputError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def _find(folder: Path, stem: str) -> tuple[Path | None, list[Path]]:
    candidates = [folder / f"{stem}.gz", folder / stem]
    return next((p for p in candidates if p.is_file()), None), candidates


def load_corpus(name: str | os.PathLike, split: str, direction: str = "en-de",
                root: str | os.PathLike | None = None) -> ParallelCorpus:
    """Load one split of a corpus folder.

    ``name`` is a folder under the data root (:func:`~transformer.corpora.data_dir`:
    ``"multi30k-en-de"``, ``"tatoeba-en-de"``) or a path (a ``Path``, or a string with a ``/``) to a folder holding
    ``{split}.src(.gz)`` and ``{split}.tgt(.gz)``; ``split`` is train, valid or test. The files
    store English as source; ``direction="de-en"`` swaps the sides. The name ``"wmt14"``
    loads WMT14 English-German through Hugging Face ``datasets`` (:func:`load_wmt14`).
    A mixture (``"a*2+b"``, see the module docstring) joins its parts' train or valid split.
    """
    _check_direction(direction)
    return CorpusStream(name, split, root).read(direction)


def split_files(part, split: str) -> tuple[Path, Path, Path]:
    """The folder of one part of a corpus (:class:`~transformer.corpora.Part`) and the
    files of its ``split``: ``(folder, source file, target file)``; a corpus the project
    knows is fetched first when it is not there yet; FileNotFoundError lists the names
    tried."""
    folder = part.ensure()
    src, src_tried = _find(folder, f"{split}.src")
    tgt, tgt_tried = _find(folder, f"{split}.tgt")
    if src is None or tgt is None:
        tried = [str(p) for p in (src_tried if src is None else []) +
                 (tgt_tried if tgt is None else [])]
        message = f"split {split!r} of corpus {part.name!r} not found; looked for " + \
                  ", ".join(tried)
        if part.fetched is not None:
            message += (f"; `python -m transformer fetch {part.name}` checks the folder "
                        f"(move it away to fetch {part.name} again)")
        raise FileNotFoundError(message)
    return folder, src, tgt


# --------------------------------------------------------------------------- combining
def concatenate_corpora(names, folder: str | os.PathLike, splits=("train", "valid"),
                        root: str | os.PathLike | None = None, limit: int = 0) -> Path:
    """Write the ``splits`` of the corpora ``names``, one after another, into ``folder``
    as ``{split}.src.gz`` and ``{split}.tgt.gz`` (English first, as every corpus folder).

    A test split is refused: each corpus is scored on its own test split, and a combined
    one would hide which sentences a score comes from. ``limit`` keeps the first ``limit``
    pairs of each corpus's split (0: all; a rehearsal's small copy). The files are written
    whole or not at all (:mod:`transformer.output`) and byte for byte the same each time
    (no time stamp in the gzip header), and ``_about.txt`` names the parts and their
    counts. Returns the folder.
    """
    if "test" in splits:
        raise InputError("concatenate_corpora writes train and valid splits only: score "
                         "each corpus on its own test split")
    if len(names) < 2:
        raise InputError(f"concatenate_corpora needs two corpora or more, got {list(names)}")
    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    about = [f"The {', '.join(splits)} splits of {' + '.join(map(str, names))}, one after "
             f"another (transformer.data.concatenate_corpora); each part keeps its own "
             f"licence and attribution (see its folder's notes)."]
    for split in splits:
        parts = [load_corpus(name, split, root=root) for name in names]
        if limit:
            parts = [ParallelCorpus(p.src[:limit], p.tgt[:limit], name=p.name) for p in parts]
        about.append(f"{split}: " + " + ".join(f"{len(p):,} ({p.name})" for p in parts))
        for side in ("src", "tgt"):
            text = "".join(line + "\n" for p in parts for line in getattr(p, side))
            with open_output(folder / f"{split}.{side}.gz") as out, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=out.file, mtime=0) as packed:
                packed.write(text.encode("utf-8"))
    with open_output(folder / "_about.txt") as out:
        out.write("\n".join(about) + "\n")
    return folder


def load_wmt14(split: str, direction: str = "en-de") -> ParallelCorpus:
    """WMT 2014 English-German (the paper's 4.5M pairs) through Hugging Face ``datasets``.

    ``split`` is ``"train"``, ``"valid"`` (newstest2013) or ``"test"`` (newstest2014).
    Needs ``pip install datasets`` and internet access on first use, or a local copy named
    by ``$TRANSFORMER_WMT14`` (:func:`transformer.corpora.wmt14.wmt14_dataset`). The whole
    split is held as Python strings; ``python -m transformer prepare`` reads it in pieces
    instead (:class:`CorpusStream`).
    """
    return load_corpus("wmt14", split, direction)


class PairStream:
    """Sentence pairs read one at a time under the package's rules for corpora: pairs with
    an empty side are dropped (counted in ``dropped_empty`` after a full pass, with a
    warning naming ``label``); files that are not aligned are refused. Iterating again
    reads again. Subclasses say where the pairs come from (``_sources``)."""
    label = ""
    dropped_empty = 0

    def _sources(self) -> Iterable[Iterable[tuple[str, str]]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[str, str]]:
        self.dropped_empty = total = 0
        for source in self._sources():
            for en, de in source:
                total += 1
                if en and de:
                    yield en, de
                else:
                    self.dropped_empty += 1
        if self.dropped_empty:
            warnings.warn(f"{self.label}: dropped {self.dropped_empty} of {total} pairs with "
                          f"an empty source or target", stacklevel=2)

    def read(self, direction: str | None = None) -> ParallelCorpus:
        """Every pair, in memory; ``direction="de-en"`` puts German on the source side."""
        en, de = [], []
        for a, b in self:
            en.append(a)
            de.append(b)
        name = self.label if direction is None else f"{self.label} ({direction})"
        corpus = ParallelCorpus(en, de, self.dropped_empty, name)
        return corpus.swapped() if direction == "de-en" else corpus


class FilePairs(PairStream):
    """The pairs of two aligned line files (plain or ``.gz``)."""

    def __init__(self, src_path: str | os.PathLike, tgt_path: str | os.PathLike,
                 label: str | None = None):
        self.src_path, self.tgt_path = src_path, tgt_path
        self.label = label or str(src_path)

    def _sources(self):
        return [read_pairs(self.src_path, self.tgt_path)]


class CorpusStream(PairStream):
    """The (English, German) pairs of one split of a corpus (a name, a path or a
    :class:`~transformer.corpora.CorpusSpec`): a folder, a mixture of folders, or a corpus
    of the hub. This is the package's one reader of corpora: :func:`load_corpus` holds
    what it reads in memory, ``python -m transformer prepare`` reads it in pieces (a hub
    corpus in batches of ``batch_rows`` rows)."""

    def __init__(self, name: str | os.PathLike | CorpusSpec, split: str,
                 root: str | os.PathLike | None = None, batch_rows: int = 10_000):
        self.spec, self.batch_rows = CorpusSpec.parse(name, root), batch_rows
        self.split = _SPLIT_ALIASES.get(split, split)
        if self.split not in SPLITS:
            raise InputError(f"split must be one of {SPLITS}, got {split!r}")
        if self.spec.mixture and self.split not in ("train", "valid"):
            raise InputError(f"corpus {self.spec.text!r} is a mixture: it has train and valid "
                             f"splits only; score each part on its own test split (e.g. "
                             f"--corpus {self.spec.parts[0].name})")

    @property
    def label(self) -> str:
        """How warnings and :class:`ParallelCorpus` name what this reads, e.g.
        ``multi30k-en-de/train`` or ``multi30k-en-de x2 + tatoeba-en-de/train``."""
        if self.spec.hub is not None:
            base = self.spec.hub.name
        else:
            base = " + ".join(part.folder.name + (f" x{part.times}" if part.times > 1 and
                                                   self.split == "train" else "")
                              for part in self.spec.parts)
        return f"{base}/{self.split}"

    def _sources(self):
        if self.spec.hub is not None:
            return [self.spec.hub.pairs(self.split, self.batch_rows)]
        return (self._files(part) for part in self.spec.parts
                for _ in range(part.times if self.split == "train" else 1))

    def _files(self, part) -> Iterator[tuple[str, str]]:
        _, src, tgt = split_files(part, self.split)
        yield from read_pairs(src, tgt)
