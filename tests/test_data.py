"""transformer.data: corpus reading, error messages, Multi30k layout."""
import gzip
import sys

import pytest

from transformer import data
from transformer.corpora import CorpusSpec
from transformer.data import ParallelCorpus, load_corpus, load_wmt14, read_parallel
from transformer.training.config import TrainConfig

from corpus_host import OFFLINE as REAL_DATA, needs_corpora  # noqa: E402  (the offline copy)
# skipped only where the corpora's hosts cannot be reached; under CI (CI=true) it fails
needs_multi30k = needs_corpora()


def write(path, lines, gz=False, raw=None):
    payload = raw if raw is not None else "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(payload) if gz else payload)
    return path


# ------------------------------------------------------------------ corpus folders
def test_corpus_folder_resolves_every_spelling(tmp_path, monkeypatch):
    (tmp_path / "c").mkdir()
    monkeypatch.chdir(tmp_path)
    spellings = ["./c", "./c/", str(tmp_path / "c"), str(tmp_path / "c") + "/", "c/"]
    assert {CorpusSpec.parse(s).folder for s in spellings} == {(tmp_path / "c").resolve()}
    assert {CorpusSpec.parse(s).resolved() for s in spellings} == {str(tmp_path / "c")}
    assert CorpusSpec.parse("multi30k-en-de", tmp_path).folder == \
        (tmp_path / "multi30k-en-de").resolve()


def test_a_corpus_is_parsed_once_into_a_value(tmp_path):
    """What ``--corpus`` names, decided in one place: a registered name (fetched on first
    use), a hub corpus (read and prepared, no folder), a path, a mixture."""
    from transformer.corpora import CORPORA
    multi30k = CorpusSpec.parse("multi30k-en-de", tmp_path)
    assert multi30k.parts[0].fetched is CORPORA["multi30k-en-de"] and not multi30k.mixture
    assert multi30k.folder == tmp_path.resolve() / "multi30k-en-de" and multi30k.hub is None
    wmt = CorpusSpec.parse("wmt14", tmp_path)
    assert wmt.hub is CORPORA["wmt14"] and wmt.folder is None and wmt.resolved() == "wmt14"
    assert wmt.hub.prepared_folder(37000, 1, tmp_path) == tmp_path / "wmt14-prepared-v37000-s1"
    assert wmt.names() == ["wmt14"] and wmt.folders() == []
    mine = CorpusSpec.parse(tmp_path / "wmt14")          # a folder named so is a folder
    assert mine.hub is None and mine.folder == (tmp_path / "wmt14").resolve()
    mix = CorpusSpec.parse("multi30k-en-de*2+tatoeba-en-de", tmp_path)
    assert mix.mixture and [(p.name, p.times) for p in mix.parts] == \
        [("multi30k-en-de", 2), ("tatoeba-en-de", 1)]
    again = CorpusSpec.parse(mix.resolved())             # as a run folder stores it
    assert mix.folder is None and again.resolved() == mix.resolved()
    assert [(p.folder, p.times) for p in again.parts] == [(p.folder, p.times) for p in mix.parts]
    with pytest.raises(ValueError, match="'wmt14' is not a part of a mixture"):
        CorpusSpec.parse("multi30k-en-de+wmt14")
    with pytest.raises(ValueError, match=r"TrainConfig|not a part of a mixture"):
        TrainConfig(corpus="a*0+b")                      # refused with the settings


# ------------------------------------------------------------------ read_parallel
@pytest.mark.parametrize("gz", [False, True])
def test_read_parallel_plain_and_gzip(tmp_path, gz):
    suffix = ".gz" if gz else ""
    src = write(tmp_path / f"a.src{suffix}", ["A dog runs.", "  Two cats. "], gz)
    tgt = write(tmp_path / f"a.tgt{suffix}", ["Ein Hund läuft.", "Zwei Katzen."], gz)
    corpus = read_parallel(src, tgt)
    assert corpus.src == ["A dog runs.", "Two cats."]
    assert corpus.tgt == ["Ein Hund läuft.", "Zwei Katzen."]
    assert corpus.dropped_empty == 0 and len(corpus) == 2
    assert list(corpus) == [("A dog runs.", "Ein Hund läuft."), ("Two cats.", "Zwei Katzen.")]


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    src = write(tmp_path / "x.src", ["a", "b", "c"])
    tgt = write(tmp_path / "x.tgt", ["a", "b"])
    with pytest.raises(ValueError) as err:
        read_parallel(src, tgt)
    message = str(err.value)
    assert str(src) in message and str(tgt) in message
    assert "3 lines" in message and "2 lines" in message


@pytest.mark.parametrize("gz", [False, True])
def test_undecodable_bytes_name_file_and_line(tmp_path, gz):
    suffix = ".gz" if gz else ""
    src = write(tmp_path / f"x.src{suffix}", [], gz,
                raw="ok\nstill ok\nbad \xff byte\n".encode("latin-1"))
    tgt = write(tmp_path / f"x.tgt{suffix}", ["a", "b", "c"], gz)
    with pytest.raises(ValueError, match="line 3") as err:
        read_parallel(src, tgt)
    assert str(src) in str(err.value) and "UTF-8" in str(err.value)


def test_missing_file_names_the_path(tmp_path):
    tgt = write(tmp_path / "x.tgt", ["a"])
    with pytest.raises(FileNotFoundError) as err:
        read_parallel(tmp_path / "nope.src", tgt)
    assert str(tmp_path / "nope.src") in str(err.value)


def test_corrupt_gzip_is_a_clear_error(tmp_path):
    src = write(tmp_path / "x.src.gz", [], raw=b"not gzip at all\n")
    tgt = write(tmp_path / "x.tgt", ["a"])
    with pytest.raises(ValueError, match="gzip") as err:
        read_parallel(src, tgt)
    assert str(src) in str(err.value)


def test_empty_pairs_are_dropped_counted_and_warned(tmp_path):
    src = write(tmp_path / "x.src", ["one", "", "three", "four", "   "])
    tgt = write(tmp_path / "x.tgt", ["eins", "zwei", " \t", "vier", "fünf"])
    with pytest.warns(UserWarning, match="dropped 3 of 5"):
        corpus = read_parallel(src, tgt)
    assert corpus.src == ["one", "four"] and corpus.tgt == ["eins", "vier"]
    assert corpus.dropped_empty == 3


def test_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path):
    src = write(tmp_path / "x.src", [], raw="\ufeffHello\n".encode("utf-8"))
    tgt = write(tmp_path / "x.tgt", ["Hallo"])
    assert read_parallel(src, tgt).src == ["Hello"]


# ------------------------------------------------------------------ load_corpus
@pytest.fixture
def toy_root(tmp_path):
    folder = tmp_path / "toy-en-de"
    folder.mkdir()
    write(folder / "train.src.gz", ["a house", "a tree"], gz=True)
    write(folder / "train.tgt.gz", ["ein Haus", "ein Baum"], gz=True)
    write(folder / "valid.src", ["a cat"])   # plain files work too
    write(folder / "valid.tgt", ["eine Katze"])
    return tmp_path


def test_load_corpus_by_name_path_and_direction(toy_root, monkeypatch):
    corpus = load_corpus("toy-en-de", "train", root=toy_root)
    assert corpus.src == ["a house", "a tree"] and corpus.tgt == ["ein Haus", "ein Baum"]
    assert "toy-en-de/train" in corpus.name
    swapped = load_corpus("toy-en-de", "train", direction="de-en", root=toy_root)
    assert swapped.src == corpus.tgt and swapped.tgt == corpus.src
    by_path = load_corpus(toy_root / "toy-en-de", "valid")
    assert by_path.src == ["a cat"] and by_path.tgt == ["eine Katze"]
    monkeypatch.setenv("TRANSFORMER_DATA", str(toy_root))
    assert load_corpus("toy-en-de", "val").tgt == ["eine Katze"]   # alias, env root


def test_load_corpus_bad_direction(toy_root):
    with pytest.raises(ValueError, match="direction") as err:
        load_corpus("toy-en-de", "train", direction="en-fr", root=toy_root)
    assert "en-fr" in str(err.value) and "de-en" in str(err.value)


def test_load_corpus_missing_split_names_paths(toy_root):
    with pytest.raises(FileNotFoundError) as err:
        load_corpus("toy-en-de", "test", root=toy_root)
    message = str(err.value)
    assert str(toy_root / "toy-en-de" / "test.src.gz") in message
    assert str(toy_root / "toy-en-de" / "test.tgt") in message
    assert "fetch" not in message                 # not a corpus the project fetches


def test_concatenated_corpora_hold_each_part_in_turn_and_no_test_split(toy_root, tmp_path):
    other = toy_root / "other-en-de"
    other.mkdir()
    for split, pairs in (("train", [("a dog", "ein Hund")]), ("valid", [("a bird", "ein Vogel")])):
        write(other / f"{split}.src", [s for s, _ in pairs])
        write(other / f"{split}.tgt", [t for _, t in pairs])
    out = data.concatenate_corpora(["toy-en-de", other], tmp_path / "both", root=toy_root)
    train = load_corpus(out, "train")
    assert train.src == ["a house", "a tree", "a dog"]
    assert train.tgt == ["ein Haus", "ein Baum", "ein Hund"]
    assert load_corpus(out, "valid").tgt == ["eine Katze", "ein Vogel"]
    assert not (out / "test.src.gz").exists() and "train: 2 " in (out / "_about.txt").read_text()
    first = (out / "train.src.gz").read_bytes()
    data.concatenate_corpora(["toy-en-de", other], out, root=toy_root)
    assert (out / "train.src.gz").read_bytes() == first                 # byte for byte
    small = data.concatenate_corpora(["toy-en-de", other], tmp_path / "small", root=toy_root,
                                     limit=1)
    assert load_corpus(small, "train").src == ["a house", "a dog"]
    with pytest.raises(ValueError, match="own test split"):
        data.concatenate_corpora(["toy-en-de", other], tmp_path / "x", ("train", "test"),
                                 root=toy_root)


def test_a_mixture_repeats_train_parts_joins_valid_once_and_has_no_test(toy_root):
    other = toy_root / "other-en-de"
    other.mkdir()
    for split, pairs in (("train", [("a dog", "ein Hund")]), ("valid", [("a bird", "ein Vogel")])):
        write(other / f"{split}.src", [s for s, _ in pairs])
        write(other / f"{split}.tgt", [t for _, t in pairs])
    train = load_corpus("toy-en-de*2+other-en-de", "train", root=toy_root)
    assert train.src == ["a house", "a tree", "a house", "a tree", "a dog"]
    assert train.tgt == ["ein Haus", "ein Baum", "ein Haus", "ein Baum", "ein Hund"]
    assert "toy-en-de x2 + other-en-de" in train.name
    back = load_corpus("toy-en-de*2+other-en-de", "train", direction="de-en", root=toy_root)
    assert back.src == train.tgt
    assert load_corpus("toy-en-de*2+other-en-de", "valid", root=toy_root).src == ["a cat", "a bird"]
    with pytest.raises(ValueError, match="own test split"):
        load_corpus("toy-en-de+other-en-de", "test", root=toy_root)
    for bad in ("toy-en-de*0+other-en-de", "toy-en-de*x+other-en-de", "+other-en-de"):
        with pytest.raises(ValueError, match="not a part of a mixture"):
            load_corpus(bad, "train", root=toy_root)
    resolved = CorpusSpec.parse("toy-en-de*2+other-en-de", toy_root).resolved()
    assert resolved == f"{toy_root / 'toy-en-de'}*2+{other}*1"
    assert CorpusSpec.parse(resolved).resolved() == resolved          # the same spelt twice
    assert data.corpus_folders(resolved) == [toy_root / "toy-en-de", other]
    assert data.part_names("toy-en-de*2+other-en-de") == ["toy-en-de", "other-en-de"]
    assert data.part_names("toy-en-de") == ["toy-en-de"]
    joined = data.concatenate_corpora(["toy-en-de", other], toy_root / "toy+other", root=toy_root)
    assert not CorpusSpec.parse(str(joined)).mixture     # a folder whose name holds a +
    assert not CorpusSpec.parse("toy+other", toy_root).mixture              # by name too
    assert load_corpus("toy+other", "valid", root=toy_root).src == ["a cat", "a bird"]
    assert load_corpus(str(joined), "train").src == ["a house", "a tree", "a dog"]


# ------------------------------------------------------------------ WMT
def test_load_wmt14_without_datasets_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)   # makes `import datasets` fail
    with pytest.raises(ImportError, match="pip install datasets"):
        load_wmt14("train")


def test_load_wmt14_converts_rows(monkeypatch):
    rows = [{"en": "A house.", "de": "Ein Haus."}, {"en": "", "de": "Leer."}]

    class FakeDataset:                     # what a datasets.Dataset gives the reader
        @staticmethod
        def iter(batch_size):
            for start in range(0, len(rows), batch_size):
                yield {"translation": rows[start:start + batch_size]}

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config, split):
            assert (name, config, split) == ("wmt14", "de-en", "validation")
            return FakeDataset

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    with pytest.warns(UserWarning, match="dropped 1"):
        corpus = load_wmt14("valid", direction="de-en")
    assert isinstance(corpus, ParallelCorpus)
    assert corpus.src == ["Ein Haus."] and corpus.tgt == ["A house."]
    assert corpus.dropped_empty == 1
    with pytest.warns(UserWarning, match="dropped 1"):   # the trainer's --corpus wmt14
        assert load_corpus("wmt14", "valid", "de-en").src == ["Ein Haus."]


# ------------------------------------------------------------------ real corpora
@needs_multi30k
@pytest.mark.parametrize("split, size", [("train", 29000), ("valid", 1014), ("test", 1000)])
def test_multi30k_sizes(split, size):
    corpus = load_corpus("multi30k-en-de", split, root=REAL_DATA)
    assert len(corpus.src) == len(corpus.tgt) == size
    assert corpus.dropped_empty == 0


@needs_multi30k
def test_multi30k_sides_are_english_then_german():
    en_de = load_corpus("multi30k-en-de", "test", root=REAL_DATA)
    de_en = load_corpus("multi30k-en-de", "test", direction="de-en", root=REAL_DATA)
    def count(sentences, word):
        return sum(f" {word} " in f" {s.lower()} " for s in sentences)
    assert count(en_de.src, "the") > 300 and count(en_de.tgt, "the") < 10
    assert count(en_de.tgt, "ein") > 300 and count(en_de.src, "ein") < 10
    assert de_en.src == en_de.tgt and de_en.tgt == en_de.src
