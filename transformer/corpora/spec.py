"""What ``--corpus`` names, parsed once: :class:`CorpusSpec`.

A registered name (:data:`~transformer.corpora.registry.CORPORA`, a corpus of files or of
the hub), a folder (a name under the data root, or a path) or a mixture
(``"multi30k-en-de*2+tatoeba-en-de"``) is parsed once into a :class:`CorpusSpec`; every
reader (the corpus reader, the trainer, the prepare step, the run folder, the book) asks
it what it is instead of testing the string.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .fetching import fetch
from .registry import CORPORA, FileCorpus, HubCorpus
from .root import data_dir, shown_root


@dataclass(frozen=True)
class Part:
    """One corpus a :class:`CorpusSpec` reads: a folder (absolute) with its repeats in a
    mixture, or a corpus of the hub (``folder`` None)."""
    name: str                         # as written: a registered name or a path
    folder: Path | None
    times: int = 1
    hub: HubCorpus | None = None

    @property
    def fetched(self) -> FileCorpus | None:
        """The registered corpus of files this part is fetched as on first use (a name
        under the data root that :data:`CORPORA` lists), else None."""
        corpus = None if _is_path(self.name) else CORPORA.get(self.name)
        return corpus if isinstance(corpus, FileCorpus) else None

    def ensure(self) -> Path | None:
        """The folder, fetched first when it is a registered corpus not there yet."""
        corpus = self.fetched
        if corpus is not None and not self.folder.exists():
            print(f"{corpus.name} is not in {shown_root(self.folder.parent)} yet: fetching it "
                  f"(once)", file=sys.stderr)
            fetch(corpus.name, self.folder.parent)
        return self.folder


@dataclass(frozen=True)
class CorpusSpec:
    """What ``--corpus`` names, parsed once (:meth:`parse`): a folder (a name under the data
    root, or a path), a mixture of folders each repeated ``*N`` times in the train split,
    or a corpus of the hub (``wmt14``). Two spellings of the same corpus give equal values."""
    text: str                         # as given
    parts: tuple[Part, ...]
    mixture: bool = False

    @classmethod
    def parse(cls, text: "str | os.PathLike | CorpusSpec",
              root: str | os.PathLike | None = None) -> "CorpusSpec":
        """The value of ``text``: a registered name (:data:`CORPORA`, of files or of the hub),
        a path (a ``Path``, or a string with a ``/`` or ``~``), a name under the data root
        ``root``, or a mixture ``"a*2+b"`` of those (not of the hub's; a folder whose name
        holds a ``+`` is a folder). InputError names a part that is not one."""
        if isinstance(text, CorpusSpec):
            return text
        hub = None if isinstance(text, os.PathLike) else _hub(str(text))
        if hub is not None:
            return cls(hub.name, (Part(hub.name, None, hub=hub),))
        if isinstance(text, os.PathLike) or "+" not in text or _folder(text, root).is_dir():
            return cls(str(text), (Part(str(text), _folder(text, root)),))
        parts = []
        for part in text.split("+"):
            name, _, times = part.strip().rpartition("*") if "*" in part else \
                (part.strip(), "", "1")
            if not name or not times.isdigit() or int(times) < 1 or _hub(name):
                raise InputError(f"corpus {text!r}: {part.strip()!r} is not a part of a "
                                 f"mixture (a corpus folder, optionally *N with N >= 1, "
                                 f"e.g. multi30k-en-de*2+tatoeba-en-de)")
            parts.append(Part(name, _folder(name, root), int(times)))
        return cls(text, tuple(parts), mixture=True)

    @property
    def hub(self) -> HubCorpus | None:
        """The hub's corpus this names, else None."""
        return self.parts[0].hub

    @property
    def folder(self) -> Path | None:
        """The one folder this names (None for a mixture or a hub corpus)."""
        return None if self.mixture else self.parts[0].folder

    def resolved(self) -> str:
        """The spelling stored in a run or a prepared corpus: every folder absolute (the
        data root folded in), so ``dir``, ``dir/``, ``./dir`` and ``/abs/dir`` compare
        equal; a hub corpus by its name."""
        if self.hub is not None:
            return self.hub.name
        if not self.mixture:
            return str(self.folder)
        return "+".join(f"{part.folder}*{part.times}" for part in self.parts)

    def names(self) -> list[str]:
        """The corpora this reads, each with its own test split (a mixture has none)."""
        return [part.name for part in self.parts]

    def folders(self) -> list[Path]:
        """The folders this reads, each fetched first when it is a registered corpus not
        there yet (none for a hub corpus)."""
        return [part.ensure() for part in self.parts if part.hub is None]


def _hub(name: str) -> HubCorpus | None:
    """The registered corpus of the hub called ``name``, else None."""
    corpus = CORPORA.get(name)
    return corpus if isinstance(corpus, HubCorpus) else None


def _is_path(name: str | os.PathLike) -> bool:
    """Whether a corpus ``name`` is a path (a ``Path``, or a string with a ``/`` or ``~``)
    rather than a folder name under :func:`data_dir`."""
    return isinstance(name, os.PathLike) or os.sep in name or name.startswith("~")


def _folder(name: str | os.PathLike, root: str | os.PathLike | None) -> Path:
    """The folder ``name`` names, absolute: the path, or the name under the data root."""
    folder = Path(name).expanduser() if _is_path(name) else data_dir(root) / name
    return folder.resolve()
