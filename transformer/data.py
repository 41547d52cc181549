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

``data_dir()`` is ``--data-root`` (the ``root`` arguments), else the ``TRANSFORMER_DATA``
environment variable, else ``~/.cache/transformer/data``. A corpus the project knows
(:mod:`transformer.corpora`: Multi30k, Tatoeba) is fetched into it on first use.

One reader, :class:`CorpusStream`, reads every corpus (a folder, a mixture, WMT14) pair by
pair; :func:`load_corpus` keeps what it reads in memory and ``python -m transformer
prepare`` reads it in pieces. It fails loudly: a line-count mismatch, an undecodable
byte or a missing file raises with the file, the line and the counts, never a silently
misaligned corpus.
"""
from __future__ import annotations

import gzip
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Iterable, Iterator

from .corpora import CORPORA, data_dir, ensure
from .errors import InputError, MissingPackage

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


def is_corpus_path(name: str | os.PathLike) -> bool:
    """Whether a corpus ``name`` is a path (a ``Path``, or a string with a ``/`` or ``~``)
    rather than a folder name under :func:`data_dir`."""
    return isinstance(name, os.PathLike) or os.sep in name or name.startswith("~")


def mixture_parts(name: str | os.PathLike,
                  root: str | os.PathLike | None = None) -> list[tuple[str, int]] | None:
    """The parts of a mixture name with their repeats, ``"a*2+b"`` -> ``[("a", 2), ("b", 1)]``;
    ``None`` for a single corpus: a name or path without ``+``, or an existing folder (whose
    name may hold a ``+``, e.g. ``data/multi30k+tatoeba-en-de``)."""
    if isinstance(name, os.PathLike) or "+" not in name or corpus_folder(name, root).is_dir():
        return None
    parts = []
    for part in name.split("+"):
        corpus, star, times = part.strip().rpartition("*") if "*" in part else (part.strip(), "", "1")
        if not corpus or not times.isdigit() or int(times) < 1 or corpus == "wmt14":
            raise InputError(f"corpus {name!r}: {part.strip()!r} is not a part of a mixture "
                             f"(a corpus folder, optionally *N with N >= 1, e.g. "
                             f"multi30k-en-de*2+tatoeba-en-de)")
        parts.append((corpus, int(times)))
    return parts


def part_names(name: str | os.PathLike, root: str | os.PathLike | None = None) -> list[str]:
    """The corpora that ``name`` reads: each part of a mixture, or ``name`` itself. Each has
    its own test split (a mixture has none)."""
    parts = mixture_parts(name, root)
    return [part for part, _ in parts] if parts else [str(name)]


def corpus_folders(name: str | os.PathLike, root: str | os.PathLike | None = None) -> list[Path]:
    """The folders a corpus name reads: one, or each part of a mixture (absolute); a corpus
    the project knows is fetched first when it is not there yet."""
    parts = mixture_parts(name, root)
    names = [part for part, _ in parts] if parts else [name]
    for part in names:
        if not is_corpus_path(part):
            ensure(str(part), root)
    return [corpus_folder(part, root) for part in names]


def resolve_corpus(name: str | os.PathLike, root: str | os.PathLike | None = None) -> str:
    """``name`` with every folder made absolute (``root`` folded in), so that two spellings
    of the same corpus or mixture compare equal; ``"wmt14"`` stays as it is."""
    if str(name) == "wmt14":
        return "wmt14"
    parts = mixture_parts(name, root)
    if parts is None:
        return str(corpus_folder(name, root))
    return "+".join(f"{corpus_folder(part, root)}*{times}" for part, times in parts)


def corpus_folder(name: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """The folder that corpus ``name`` names (see :func:`load_corpus`), made absolute, so
    that ``dir``, ``dir/``, ``./dir`` and its absolute path compare equal."""
    folder = Path(name).expanduser() if is_corpus_path(name) else data_dir(root) / name
    return folder.resolve()


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

    ``name`` is a folder under :func:`data_dir` (``"multi30k-en-de"``, ``"tatoeba-en-de"``)
    or a path (a ``Path``, or a string with a ``/``) to a folder holding
    ``{split}.src(.gz)`` and ``{split}.tgt(.gz)``; ``split`` is train, valid or test. The files
    store English as source; ``direction="de-en"`` swaps the sides. The name ``"wmt14"``
    loads WMT14 English-German through Hugging Face ``datasets`` (:func:`load_wmt14`).
    A mixture (``"a*2+b"``, see the module docstring) joins its parts' train or valid split.
    """
    _check_direction(direction)
    return CorpusStream(name, split, root).read(direction)


def split_files(name: str | os.PathLike, split: str,
                root: str | os.PathLike | None = None) -> tuple[Path, Path, Path]:
    """The folder of corpus ``name`` (not a mixture) and the files of its ``split``:
    ``(folder, source file, target file)``; a corpus the project knows is fetched first
    when it is not there yet; FileNotFoundError lists the names tried."""
    folder = Path(name).expanduser() if is_corpus_path(name) else data_dir(root) / name
    if not is_corpus_path(name):
        ensure(str(name), root)
    src, src_tried = _find(folder, f"{split}.src")
    tgt, tgt_tried = _find(folder, f"{split}.tgt")
    if src is None or tgt is None:
        tried = [str(p) for p in (src_tried if src is None else []) +
                 (tgt_tried if tgt is None else [])]
        message = f"split {split!r} of corpus {str(name)!r} not found; looked for " + \
                  ", ".join(tried)
        if not is_corpus_path(name) and str(name) in CORPORA:
            message += (f"; `python -m transformer fetch {name}` checks the folder "
                        f"(move it away to fetch {name} again)")
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
    whole or not at all and byte for byte the same each time (no time stamp in the gzip
    header), and ``_about.txt`` names the parts and their counts. Returns the folder.
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
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{split}.{side}.")
            with os.fdopen(fd, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
                out.write(text.encode("utf-8"))
            os.chmod(tmp, 0o644)
            os.replace(tmp, folder / f"{split}.{side}.gz")
    (folder / "_about.txt").write_text("\n".join(about) + "\n", encoding="utf-8")
    return folder


WMT14_ENV = "TRANSFORMER_WMT14"
_WMT14_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def wmt14_dataset(split: str):
    """The Hugging Face ``datasets.Dataset`` of WMT14 de-en's ``split``: train (4.5M pairs),
    valid (newstest2013) or test (newstest2014). ``datasets.load_dataset("wmt14", "de-en")``,
    or, when ``$TRANSFORMER_WMT14`` names
    a folder, that copy offline: a ``DatasetDict.save_to_disk`` folder (train, validation,
    test, each with a ``translation`` column of ``{"de", "en"}`` dicts, as the hub's), or a
    local copy of the hub's repository (read with ``load_dataset(folder, "de-en")``)."""
    try:
        import datasets
    except ImportError:
        raise MissingPackage("--corpus wmt14 needs the Hugging Face datasets package: `pip "
                          "install datasets` (or pip install 'transformer[wmt]')") from None
    split = _SPLIT_ALIASES.get(split, split)
    hf_split = _WMT14_SPLITS.get(split)
    if hf_split is None:
        raise InputError(f"split must be one of {SPLITS}, got {split!r}")
    local = os.environ.get(WMT14_ENV)
    if not local:
        return datasets.load_dataset("wmt14", "de-en", split=hf_split)
    folder = Path(local).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"${WMT14_ENV}={local}: no such folder (a saved WMT14 "
                                f"DatasetDict, or a copy of the hub's wmt14 repository)")
    if not (folder / "dataset_dict.json").is_file():
        return datasets.load_dataset(str(folder), "de-en", split=hf_split)
    saved = datasets.load_from_disk(str(folder))
    if hf_split not in saved:
        raise InputError(f"${WMT14_ENV}={local}: the saved dataset has splits "
                         f"{sorted(saved)}, not {hf_split!r}")
    return saved[hf_split]


def _wmt14_pair(row, where: str) -> tuple[str, str]:
    """(English, German) of one row of the ``translation`` column, stripped."""
    try:
        return row["en"].strip(), row["de"].strip()
    except (KeyError, TypeError, AttributeError):
        raise InputError(f"{where}: a row of the 'translation' column is {row!r}, not a dict "
                         f"of 'en' and 'de' sentences") from None


def load_wmt14(split: str, direction: str = "en-de") -> ParallelCorpus:
    """WMT 2014 English-German (the paper's 4.5M pairs) through Hugging Face ``datasets``.

    ``split`` is ``"train"``, ``"valid"`` (newstest2013) or ``"test"`` (newstest2014).
    Needs ``pip install datasets`` and internet access on first use, or a local copy named
    by ``$TRANSFORMER_WMT14`` (:func:`wmt14_dataset`). The whole split is held as Python
    strings; ``python -m transformer prepare`` reads it in pieces instead
    (:class:`CorpusStream`).
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
    """The (English, German) pairs of one split of a corpus: a folder, a mixture of
    folders, or ``"wmt14"``. This is the package's one reader of corpora:
    :func:`load_corpus` holds what it reads in memory, ``python -m transformer prepare``
    reads it in pieces (WMT14 in batches of ``batch_rows`` rows)."""

    def __init__(self, name: str | os.PathLike, split: str,
                 root: str | os.PathLike | None = None, batch_rows: int = 10_000):
        self.name, self.root, self.batch_rows = name, root, batch_rows
        self.split = _SPLIT_ALIASES.get(split, split)
        if self.split not in SPLITS:
            raise InputError(f"split must be one of {SPLITS}, got {split!r}")
        self.parts = None if str(name) == "wmt14" else mixture_parts(name, root)
        if self.parts is not None and self.split not in ("train", "valid"):
            raise InputError(f"corpus {str(name)!r} is a mixture: it has train and valid "
                             f"splits only; score each part on its own test split (e.g. "
                             f"--corpus {self.parts[0][0]})")

    @property
    def label(self) -> str:
        """How warnings and :class:`ParallelCorpus` name what this reads, e.g.
        ``multi30k-en-de/train`` or ``multi30k-en-de x2 + tatoeba-en-de/train``."""
        if self.parts is None:
            base = "wmt14" if str(self.name) == "wmt14" else \
                corpus_folder(self.name, self.root).name
        else:
            base = " + ".join(corpus_folder(part, self.root).name +
                              (f" x{times}" if times > 1 and self.split == "train" else "")
                              for part, times in self.parts)
        return f"{base}/{self.split}"

    def _sources(self):
        if str(self.name) == "wmt14":
            return [self._wmt14()]
        if self.parts is not None:
            return (self._files(part) for part, times in self.parts
                    for _ in range(times if self.split == "train" else 1))
        return [self._files(self.name)]

    def _files(self, name) -> Iterator[tuple[str, str]]:
        _, src, tgt = split_files(name, self.split, self.root)
        yield from read_pairs(src, tgt)

    def _wmt14(self) -> Iterator[tuple[str, str]]:
        dataset = wmt14_dataset(self.split)
        where = f"wmt14/{self.split}"
        for batch in dataset.iter(batch_size=self.batch_rows):
            for row in batch["translation"]:
                yield _wmt14_pair(row, where)
