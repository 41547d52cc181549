"""Fetching a corpus of files into the data root, checked by the SHA-256 of its text.

**What is checked.** A corpus is the text the project reads, so each file is pinned by the
SHA-256 of its text (:func:`normalised_text`): the decompressed lines with their
whitespace normalised (runs of spaces, tabs and no-break spaces as one space, none at
either end), each ending in ``\\n``. Upstream Multi30k has double and no-break spaces in a
few lines; the fetch writes the normalised text, the same text every record of the
project was measured on. The same pin holds for a mirror that compresses the files anew.

**All or nothing.** The files are fetched into a hidden folder beside the corpus and
renamed into place only when every one is complete and matches its hash
(:func:`transformer.output.output_folder`); a failure raises with one line
(``ConnectionError`` for a file that cannot be fetched, ``ValueError`` for one that is not
the file) and leaves no corpus behind. A fetch that was killed leaves its hidden folder,
which the next fetch of that corpus removes, also when the corpus is there by then. An
existing folder is never overwritten; processes that fetch at once (ranks under
``torchrun``) each fetch, the first rename wins and the others return its folder.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import shutil
import sys
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from ..errors import InputError
from ..output import output_folder, remove_leftovers
from .registry import FileCorpus, fetched_corpus
from .root import data_dir


# --------------------------------------------------------------------------- the text
def normalised_text(data: bytes, where: str) -> bytes:
    """The gzip file ``data`` as the project reads it: its lines decoded, whitespace
    normalised, each ending in ``\\n`` (UTF-8). ValueError names ``where`` for a file that
    is not complete gzip-compressed UTF-8 text."""
    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"{where} is not a complete gzip file ({e}; not kept)") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{where} is not UTF-8 text ({e.reason} at byte {e.start}; "
                         f"not kept)") from None
    text = text.removeprefix("\ufeff")
    return "".join(" ".join(line.split()) + "\n" for line in text.splitlines()).encode()


def text_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a corpus file's normalised text (:func:`normalised_text`)."""
    path = Path(path)
    return hashlib.sha256(normalised_text(path.read_bytes(), str(path))).hexdigest()


def verify(name: str, folder: str | os.PathLike) -> list[str]:
    """The files of corpus ``name`` in ``folder`` that are missing or differ from the
    project's copy (empty when the folder holds the corpus)."""
    folder, wrong = Path(folder), []
    for filename, expected in fetched_corpus(name).sha256.items():
        path = folder / filename
        try:
            if not path.is_file() or text_sha256(path) != expected:
                wrong.append(filename)
        except ValueError:
            wrong.append(filename)
    return wrong


# --------------------------------------------------------------------------- fetching
def _read(source: str, names: tuple[str, str], timeout: float, bar) -> bytes:
    """The bytes of a file under ``source``, counted on ``bar``: at a URL, under its
    upstream name (``names[0]``); in a folder, under that name or ours (``names[1]``)."""
    if "://" not in source:
        path = next((Path(source) / n for n in names if (Path(source) / n).is_file()),
                    Path(source) / names[0])
        data = path.read_bytes()
        bar.update(len(data))
        return data
    name = names[0]
    url = f"{source}/{name}"
    chunks = []
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            expected = response.headers.get("Content-Length")
            while chunk := response.read(1 << 16):
                chunks.append(chunk)
                bar.update(len(chunk))
    except urllib.error.HTTPError as e:
        raise ConnectionError(f"could not download {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError,
            ConnectionError) as e:
        raise ConnectionError(f"could not download {url}: "
                              f"{getattr(e, 'reason', None) or e}") from None
    received = sum(map(len, chunks))
    if expected is not None and expected.isdigit() and received != int(expected):
        raise ConnectionError(f"could not download {url}: the connection closed after "
                              f"{received:,} of {int(expected):,} bytes")
    return b"".join(chunks)


def _about(c: FileCorpus, source: str) -> str:
    return (f"{c.title}\nsource: {source}\nlicence: {c.licence}\nattribution: "
            f"{c.attribution}\nfetched by `python -m transformer fetch {c.name}` "
            f"(transformer.corpora); each file's text is pinned by its SHA-256 there.\n")


def fetch(name: str, root: str | os.PathLike | None = None, url: str | None = None,
          timeout: float = 60.0, progress: bool | None = None) -> Path:
    """Put corpus ``name`` into ``data_dir(root)/name`` and return that folder.

    A folder that already holds the corpus (every file's text as pinned) is left as it is;
    one that holds something else raises ValueError naming the files, and is not touched.
    ``url`` (else the corpus's ``url_env`` variable) names a mirror of a downloaded
    corpus: a URL, or a folder holding its files under the upstream names or ours. ``progress``: a progress bar on stderr (None: when stderr is a terminal).
    """
    from tqdm.auto import tqdm

    c = fetched_corpus(name)
    root = data_dir(root)
    folder = root / name
    if root.is_dir():
        remove_leftovers(root, name)             # what a killed fetch left, unheld
    if folder.exists():
        return _checked(name, folder)
    source = c.source(url)
    disable = (not sys.stderr.isatty()) if progress is None else not progress
    try:
        with output_folder(folder, replace=False) as staging, \
                tqdm(desc=f"fetching {name}", unit="B", unit_scale=True, disable=disable,
                     file=sys.stderr) as bar:
            for filename, expected in c.sha256.items():
                upstream = c.upstream.get(filename, filename)
                where = f"{source}/{upstream}"
                data = _read(source, (upstream, filename), timeout, bar)
                text = normalised_text(data, where)
                digest = hashlib.sha256(text).hexdigest()
                if digest != expected:
                    raise InputError(f"{where} is not {name}'s {filename}: the SHA-256 of "
                                     f"its text is {digest}, not {expected} (a damaged or "
                                     f"different file; not kept)")
                if gzip.decompress(data) != text:        # store the normalised text
                    data = gzip.compress(text, mtime=0)
                (staging / filename).write_bytes(data)
            if c.url is None:                            # the shipped notices come along
                for extra in sorted(Path(source).iterdir()):
                    if extra.name not in c.sha256:
                        shutil.copyfile(extra, staging / extra.name)
            else:
                (staging / "_about.txt").write_text(_about(c, source), encoding="utf-8")
            for path in staging.iterdir():
                path.chmod(0o644)
    except FileExistsError:               # another process (a torchrun rank) was first
        return _checked(name, folder)
    return folder


def _checked(name: str, folder: Path) -> Path:
    """``folder``, when it holds corpus ``name``; else InputError names what differs."""
    wrong = verify(name, folder)
    if wrong:
        raise InputError(f"{folder} exists but is not the project's {name}: "
                         f"{', '.join(wrong)} missing or different; move the folder "
                         f"away and fetch again")
    return folder
