"""The registry: every corpus the project names, in one table (:data:`CORPORA`), which
``--corpus NAME`` resolves through (:class:`~transformer.corpora.spec.CorpusSpec`).

Each entry is a :class:`Corpus` (its name, title, licence and attribution) of one of two
kinds:

* a :class:`FileCorpus` is fetched as files into the data root (or copied from the
  package), each file pinned by the SHA-256 of its text (:mod:`.fetching`);
* a :class:`HubCorpus` is read through Hugging Face ``datasets`` and prepared once for
  training into a folder of the data root (:mod:`.wmt14`).
"""
from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .root import data_dir
from .wmt14 import wmt14_pairs, wmt14_prepared_name

SHIPPED = Path(__file__).resolve().parent            # the corpora shipped with the package
FILES = tuple(f"{split}.{side}.gz" for split in ("train", "valid", "test") for side in ("src", "tgt"))


@dataclass(frozen=True)
class Corpus:
    """What every registered corpus has: its name (what ``--corpus`` names), title,
    licence and attribution."""
    name: str
    title: str
    licence: str
    attribution: str


@dataclass(frozen=True)
class FileCorpus(Corpus):
    """A corpus fetched as files (:data:`FILES`): where they come from and what they hold."""
    sha256: dict[str, str]                 # our file name -> SHA-256 of its normalised text
    url: str | None = None                 # where the files are; None: shipped (SHIPPED/name)
    url_env: str | None = None             # the environment variable that names a mirror
    upstream: dict[str, str] = field(default_factory=dict)   # our name -> name under url

    def source(self, url: str | None = None) -> str:
        """The folder or URL the files come from."""
        if self.url is None:
            return str(SHIPPED / self.name)
        return (url or (self.url_env and os.environ.get(self.url_env)) or self.url).rstrip("/")


@dataclass(frozen=True)
class HubCorpus(Corpus):
    """A corpus read from the Hugging Face hub (not fetched as files) and prepared once for
    training: its reader of sentence pairs and the name of its prepared folder."""
    pairs: typing.Callable[..., typing.Iterator[tuple[str, str]]]   # (split, batch_rows)
    prepared_name: typing.Callable[[int, int], str]                # (vocab_size, seed)

    def prepared_folder(self, vocab_size: int, seed: int,
                        root: str | os.PathLike | None = None) -> Path:
        """Where training prepares this corpus for a vocabulary size and seed."""
        return data_dir(root) / self.prepared_name(vocab_size, seed)


CORPORA: dict[str, Corpus] = {c.name: c for c in [
    FileCorpus(
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
    FileCorpus(
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


def fetched_names() -> list[str]:
    """The names of the corpora fetched as files (the ``fetch`` command's choices)."""
    return sorted(name for name, c in CORPORA.items() if isinstance(c, FileCorpus))


def fetched_corpus(name: str) -> FileCorpus:
    """The corpus called ``name``, fetched as files; InputError lists the ones there are
    (and says how a corpus of the hub is read instead)."""
    c = CORPORA.get(name)
    if isinstance(c, HubCorpus):
        raise InputError(f"{name} is read from the Hugging Face hub, not fetched as files: "
                         f"train or prepare with --corpus {name}")
    if not isinstance(c, FileCorpus):
        raise InputError(f"unknown corpus {name!r}: the project fetches "
                         f"{', '.join(fetched_names())}")
    return c
