"""Every corpus the project names, and how it gets onto a reader's machine.

``python -m transformer fetch multi30k-en-de tatoeba-en-de`` (or :func:`fetch`) puts each
corpus into the data root (:func:`transformer.data.data_dir`) as a folder of
``{train,valid,test}.{src,tgt}.gz`` (English source, German target), and the first use of
a corpus that is not there yet (a recipe, a chapter, ``evaluate``) fetches it the same way.

* **multi30k-en-de** comes from its public repository (Elliott et al., 2016). Its licence
  (non-commercial research and education) does not let the project ship it.
* **tatoeba-en-de** is shipped with the package (``tatoeba-en-de/`` beside this file, 3.6 MB):
  the project's own split of a 2018 Tatoeba export, CC BY 2.0 FR, which may be
  redistributed with its attribution (``NOTICE``). Its host now serves a newer export,
  so a download could not give back the split that the records were measured on; a copy
  shipped with the code can, and it works offline.

**What is checked.** A corpus is the text the project reads, so each file is pinned by the
SHA-256 of its text: the decompressed lines with their whitespace normalised (runs of
spaces, tabs and no-break spaces as one space, none at either end), each ending in
``\\n``. Upstream Multi30k has double and no-break spaces in a few lines; the fetch
writes the normalised text, the same text every record of the project was measured on.
The same pin holds for a mirror that compresses the files anew.

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
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..output import output_folder, remove_leftovers

SHIPPED = Path(__file__).resolve().parent
FILES = tuple(f"{split}.{side}.gz" for split in ("train", "valid", "test") for side in ("src", "tgt"))


@dataclass(frozen=True)
class Corpus:
    """One corpus the project names: where it comes from and what its files hold."""
    name: str
    title: str
    licence: str
    attribution: str
    sha256: dict[str, str]                 # our file name -> SHA-256 of its normalised text
    url: str | None = None                 # where the files are; None: shipped (SHIPPED/name)
    url_env: str | None = None             # the environment variable that names a mirror
    upstream: dict[str, str] = field(default_factory=dict)   # our name -> name under url

    def source(self, url: str | None = None) -> str:
        """The folder or URL the files come from."""
        if self.url is None:
            return str(SHIPPED / self.name)
        return (url or (self.url_env and os.environ.get(self.url_env)) or self.url).rstrip("/")


CORPORA: dict[str, Corpus] = {c.name: c for c in [
    Corpus(
        name="multi30k-en-de",
        title="Multi30k task 1 (Elliott et al., 2016), English-German image captions",
        licence="non-commercial research and education only (the Flickr30K terms)",
        attribution="Elliott, Frank, Sima'an, Specia (2016), \"Multi30K: Multilingual "
                    "English-German Image Descriptions\", Proc. 5th Workshop on Vision and "
                    "Language, pp. 70-74, doi:10.18653/v1/W16-3210",
        url="https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw",
        url_env="TRANSFORMER_MULTI30K_URL",
        upstream={"train.src.gz": "train.en.gz", "train.tgt.gz": "train.de.gz",
                  "valid.src.gz": "val.en.gz", "valid.tgt.gz": "val.de.gz",
                  "test.src.gz": "test_2016_flickr.en.gz",
                  "test.tgt.gz": "test_2016_flickr.de.gz"},
        sha256={
            "train.src.gz": "f7cb7c7d411f6039a15de94de8c4d1709fada7b7474791598fd18451ec62427d",
            "train.tgt.gz": "550c2612c7ae45ed46754e67c3011fde500b1bf88592a376e2ed6126903766f7",
            "valid.src.gz": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
            "valid.tgt.gz": "c02c1d05fb89dba12b00503a2744b1105d45fef287501fd701b4fea5b1fca3e5",
            "test.src.gz": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
            "test.tgt.gz": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
        }),
    Corpus(
        name="tatoeba-en-de",
        title="Tatoeba English-German sentence pairs (manythings.org deu-eng, 2018-05-13), "
              "split into train/valid/test by this project",
        licence="CC BY 2.0 FR (attribution required)",
        attribution="Sentence pairs from the Tatoeba Project (tatoeba.org), via "
                    "manythings.org/anki (deu-eng, 2018-05-13), licensed CC BY 2.0 FR; "
                    "whitespace-normalised and split into train/valid/test.",
        sha256={
            "train.src.gz": "9f87ee5e6e45db7d7a988ed9bebbac36ade3c412677399dd702a203dfce7a420",
            "train.tgt.gz": "186266e7dfd9d667a3a79f80dd2ef668a4541a256bc8ffdca5edd32617505713",
            "valid.src.gz": "d272b1bdc015a71557edcba7227c55bfe4f51b530697fe2f4e308714b7ba6a81",
            "valid.tgt.gz": "f686d52087d5cebaa4d7116cb676bdf706f97a51344f8900376e82fcfb02a067",
            "test.src.gz": "805c2bdc7794aab9e3e1453ec4c1b873a34d2b103a798da09e8ae1028752f28d",
            "test.tgt.gz": "76cf563b931a9dd11693d680e4de79e6eebced7a3f515d94017a2e606fc2d6e0",
        }),
]}


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The data root, the one rule every reader and writer of corpora follows: ``path``
    (``--data-root``), else ``$TRANSFORMER_DATA`` (blank counts as unset), else
    ``~/.cache/transformer/data``."""
    if path is not None:
        if not str(path).strip():
            raise InputError(f"--data-root {str(path)!r} is blank: name a folder, or leave "
                             f"it out for the default")
        return Path(path).expanduser()
    if os.environ.get("TRANSFORMER_DATA", "").strip():     # blank: as if unset
        return Path(os.environ["TRANSFORMER_DATA"]).expanduser()
    return Path.home() / ".cache" / "transformer" / "data"


def corpus(name: str) -> Corpus:
    """The corpus called ``name``; ValueError lists the known ones."""
    if name not in CORPORA:
        raise InputError(f"unknown corpus {name!r}: the project fetches "
                         f"{', '.join(sorted(CORPORA))}")
    return CORPORA[name]


# --------------------------------------------------------------------------- text
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
    for filename, expected in corpus(name).sha256.items():
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


def _about(c: Corpus, source: str) -> str:
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

    c = corpus(name)
    root = data_dir(root)
    folder = root / name
    if root.is_dir():
        _remove_leftovers(root, name)
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


def _remove_leftovers(root: Path, name: str) -> None:
    """Remove what fetches of ``name`` that were killed left in ``root``: the writer's
    temporaries no process holds, and the hidden folders of the naming used before the
    fetch wrote through :mod:`transformer.output`, once an hour old (no lock tells
    whether their writer still runs)."""
    remove_leftovers(root, name)
    for stale in root.glob(f".{name}.fetching-*"):
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)


def ensure(name: str, root: str | os.PathLike | None = None) -> Path | None:
    """The folder of corpus ``name`` under the data root, fetched first if it is one of
    :data:`CORPORA` and not there yet; None for a name the project does not fetch."""
    if name not in CORPORA:
        return None
    folder = data_dir(root) / name
    if not folder.exists():
        print(f"{name} is not in {data_dir(root)} yet: fetching it (once)", file=sys.stderr)
        fetch(name, root)
    return folder
