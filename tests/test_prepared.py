"""Large corpora: WMT14 read offline in the hub's format, a corpus prepared once into
memory-mapped token ids (transformer.training.prepared), read by two processes, and
trained on with the same batches as the in-memory path."""
from __future__ import annotations

import gzip
import os

import pytest

from transformer.data import CorpusStream, load_corpus, load_wmt14

datasets = pytest.importorskip("datasets", reason="the WMT14 loader tests need `pip install "
                                                   "datasets` (the wmt extra)")

WMT_ROWS = {
    "train": [("A house.", "Ein Haus."), ("The cat sleeps.", "Die Katze schläft."),
              ("  Spaces around.  ", " Leerzeichen. "), ("", "Leer."),
              ("Two dogs run.", "Zwei Hunde rennen.")],
    "validation": [("Good morning.", "Guten Morgen."), ("Thank you.", "Danke.")],
    "test": [("Where is the station?", "Wo ist der Bahnhof?")],
}


def save_wmt14(folder):
    """A DatasetDict on disk in the format load_dataset("wmt14", "de-en") returns: train,
    validation and test, each one `translation` column of {"de", "en"} dicts."""
    features = datasets.Features({"translation": datasets.Translation(languages=["de", "en"])})
    splits = {split: datasets.Dataset.from_dict(
        {"translation": [{"de": de, "en": en} for en, de in rows]}, features=features)
        for split, rows in WMT_ROWS.items()}
    datasets.DatasetDict(splits).save_to_disk(str(folder))
    return folder


@pytest.fixture
def wmt14(tmp_path, monkeypatch):
    folder = save_wmt14(tmp_path / "wmt14-saved")
    monkeypatch.setenv("TRANSFORMER_WMT14", str(folder))
    return folder


def test_wmt14_loader_reads_the_hub_format_offline(wmt14):
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        train = load_wmt14("train")
    assert train.src == ["A house.", "The cat sleeps.", "Spaces around.", "Two dogs run."]
    assert train.tgt == ["Ein Haus.", "Die Katze schläft.", "Leerzeichen.", "Zwei Hunde rennen."]
    assert load_wmt14("valid", "de-en").src == ["Guten Morgen.", "Danke."]
    assert load_corpus("wmt14", "test").tgt == ["Wo ist der Bahnhof?"]
    stream = CorpusStream("wmt14", "train", batch_rows=2)        # the prepare step's reader
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        assert list(stream) == list(zip(train.src, train.tgt))
    assert stream.dropped_empty == 1


def test_wmt14_loader_names_a_bad_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_WMT14", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="TRANSFORMER_WMT14=.*missing"):
        load_wmt14("train")
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"translation": ["a"]})}) \
        .save_to_disk(str(tmp_path / "bad"))
    monkeypatch.setenv("TRANSFORMER_WMT14", str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="not 'validation'"):
        load_wmt14("valid")
    with pytest.raises(ValueError, match="wmt14/train: a row of the 'translation' column"):
        load_wmt14("train")


def write_pairs(folder, split, pairs):
    folder.mkdir(parents=True, exist_ok=True)
    for side, i in (("src", 0), ("tgt", 1)):
        with gzip.open(folder / f"{split}.{side}.gz", "wt", encoding="utf-8") as f:
            f.writelines(p[i] + "\n" for p in pairs)


def test_corpus_stream_reads_what_load_corpus_reads(tmp_path):
    pairs = [("\ufeffOne.", "Eins."), ("Two. ", " Zwei."), ("", "Leer."), ("Three.", "Drei.")]
    write_pairs(tmp_path / "c", "train", pairs)
    write_pairs(tmp_path / "d", "train", [("Four.", "Vier.")])
    for name in (tmp_path / "c", f"{tmp_path / 'c'}*2+{tmp_path / 'd'}"):
        with pytest.warns(UserWarning):
            corpus = load_corpus(name, "train")
        with pytest.warns(UserWarning):
            assert list(CorpusStream(name, "train")) == list(zip(corpus.src, corpus.tgt))


def test_corpus_stream_refuses_unaligned_files(tmp_path):
    write_pairs(tmp_path / "c", "train", [("One.", "Eins."), ("Two.", "Zwei.")])
    with gzip.open(tmp_path / "c" / "train.tgt.gz", "wt", encoding="utf-8") as f:
        f.write("Eins.\nZwei.\nDrei.\n")
    with pytest.raises(ValueError, match=r"train.src.gz has 2 lines but .*train.tgt.gz has 3"):
        list(CorpusStream(tmp_path / "c", "train"))
