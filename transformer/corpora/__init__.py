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
* **wmt14** (:data:`HUB_CORPORA`), the paper's 4.5 million pairs, is not fetched as files:
  it is read through Hugging Face ``datasets`` (:func:`wmt14_dataset`) and prepared once
  for training into a folder of the data root.

**The corpus as a value.** What ``--corpus`` names, a registered name, a folder or a
mixture (``"multi30k-en-de*2+tatoeba-en-de"``), is parsed once into a
:class:`CorpusSpec`; every reader (the corpus reader, the trainer, the prepare step, the
run folder, the book) asks it what it is instead of testing the string.

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
import typing
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, MissingPackage
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


# --------------------------------------------------------------------------- WMT 2014
WMT14_ENV = "TRANSFORMER_WMT14"
WMT14_SPLITS = {"train": "train", "valid": "validation", "test": "test"}   # ours -> the hub's


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
    hf_split = WMT14_SPLITS.get(split)
    if hf_split is None:
        raise InputError(f"split must be one of {tuple(WMT14_SPLITS)}, got {split!r}")
    local = os.environ.get(WMT14_ENV, "").strip()
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


def wmt14_pairs(split: str, batch_rows: int = 10_000) -> typing.Iterator[tuple[str, str]]:
    """(English, German) of each row of ``split``, stripped, read ``batch_rows`` at a time."""
    where = f"wmt14/{split}"
    for batch in wmt14_dataset(split).iter(batch_size=batch_rows):
        for row in batch["translation"]:
            try:
                yield row["en"].strip(), row["de"].strip()
            except (KeyError, TypeError, AttributeError):
                raise InputError(f"{where}: a row of the 'translation' column is {row!r}, "
                                 f"not a dict of 'en' and 'de' sentences") from None


def wmt14_prepared_name(vocab_size: int, seed: int) -> str:
    """The folder of the data root that ``--corpus wmt14`` is prepared into, once per
    vocabulary size and seed."""
    return f"wmt14-prepared-v{vocab_size}-s{seed}"


@dataclass(frozen=True)
class HubCorpus:
    """A corpus read from the Hugging Face hub (not fetched as files) and prepared once for
    training: its reader of sentence pairs and the name of its prepared folder."""
    name: str
    title: str
    licence: str
    attribution: str
    pairs: typing.Callable[..., typing.Iterator[tuple[str, str]]]   # (split, batch_rows)
    prepared_name: typing.Callable[[int, int], str]                # (vocab_size, seed)

    def prepared_folder(self, vocab_size: int, seed: int,
                        root: str | os.PathLike | None = None) -> Path:
        """Where training prepares this corpus for a vocabulary size and seed."""
        return data_dir(root) / self.prepared_name(vocab_size, seed)


HUB_CORPORA: dict[str, HubCorpus] = {c.name: c for c in [
    HubCorpus(
        name="wmt14",
        title="WMT 2014 English-German (Bojar et al., 2014): about 4.5M training pairs, "
              "newstest2013 (valid) and newstest2014 (test), the paper's data (section 5.1)",
        licence="the terms of each WMT 2014 source (research use)",
        attribution="Bojar et al. (2014), \"Findings of the 2014 Workshop on Statistical "
                    "Machine Translation\", Proc. 9th Workshop on Statistical Machine "
                    "Translation, pp. 12-58, doi:10.3115/v1/W14-3302; read through the "
                    "Hugging Face dataset wmt14 (de-en)",
        pairs=wmt14_pairs, prepared_name=wmt14_prepared_name),
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


def shown_root(root: Path) -> str:
    """The data root as a message names it: ``~/...`` under the home folder, else "the data
    root" (one the user named), so that no message, and no page of the book built with it,
    carries a path of the machine it ran on."""
    try:
        return "~/" + Path(root).relative_to(Path.home()).as_posix()
    except ValueError:
        return "the data root ($TRANSFORMER_DATA or --data-root)"


# --------------------------------------------------------------------------- the value
@dataclass(frozen=True)
class Part:
    """One corpus a :class:`CorpusSpec` reads: a folder (absolute) with its repeats in a
    mixture, or a corpus of the hub (``folder`` None)."""
    name: str                         # as written: a registered name or a path
    folder: Path | None
    times: int = 1
    hub: HubCorpus | None = None

    @property
    def fetched(self) -> Corpus | None:
        """The registered corpus this part is fetched as on first use (a name under the
        data root that :data:`CORPORA` lists), else None."""
        return None if _is_path(self.name) else CORPORA.get(self.name)

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
        """The value of ``text``: a registered name (:data:`CORPORA`, :data:`HUB_CORPORA`),
        a path (a ``Path``, or a string with a ``/`` or ``~``), a name under the data root
        ``root``, or a mixture ``"a*2+b"`` of those (not of the hub's; a folder whose name
        holds a ``+`` is a folder). InputError names a part that is not one."""
        if isinstance(text, CorpusSpec):
            return text
        if not isinstance(text, os.PathLike) and str(text) in HUB_CORPORA:
            hub = HUB_CORPORA[str(text)]
            return cls(hub.name, (Part(hub.name, None, hub=hub),))
        if isinstance(text, os.PathLike) or "+" not in text or _folder(text, root).is_dir():
            return cls(str(text), (Part(str(text), _folder(text, root)),))
        parts = []
        for part in text.split("+"):
            name, _, times = part.strip().rpartition("*") if "*" in part else \
                (part.strip(), "", "1")
            if not name or not times.isdigit() or int(times) < 1 or name in HUB_CORPORA:
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


def _is_path(name: str | os.PathLike) -> bool:
    """Whether a corpus ``name`` is a path (a ``Path``, or a string with a ``/`` or ``~``)
    rather than a folder name under :func:`data_dir`."""
    return isinstance(name, os.PathLike) or os.sep in name or name.startswith("~")


def _folder(name: str | os.PathLike, root: str | os.PathLike | None) -> Path:
    """The folder ``name`` names, absolute: the path, or the name under the data root."""
    folder = Path(name).expanduser() if _is_path(name) else data_dir(root) / name
    return folder.resolve()


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


