"""WMT 2014 English-German (section 5.1), read through Hugging Face ``datasets``: the
paper's 4.5 million training pairs are not fetched as files but read from the hub (or a
local copy named by ``$TRANSFORMER_WMT14``) and prepared once for training into a folder
of the data root (:func:`wmt14_prepared_name`). Its entry in the registry is
:data:`transformer.corpora.registry.CORPORA`'s ``wmt14``."""
from __future__ import annotations

import os
import typing
from pathlib import Path

from ..errors import InputError, MissingPackage

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
