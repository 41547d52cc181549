"""transformer.data: corpus reading, error messages, Multi30k layout."""
import gzip
import os
import sys
from pathlib import Path

import pytest

from transformer import data
from transformer.data import (ParallelCorpus, data_dir, load_corpus, load_wmt14,
                              multi30k_files, read_parallel)

REAL_DATA = Path(os.environ.get("TRANSFORMER_DATA",
                                Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
needs_multi30k = pytest.mark.skipif(    # under CI (CI=true) a missing corpus fails instead
    not (REAL_DATA / "multi30k-en-de" / "train.src.gz").is_file() and not os.environ.get("CI"),
    reason=f"Multi30k not found under {REAL_DATA} (set TRANSFORMER_DATA)")


def write(path, lines, gz=False, raw=None):
    payload = raw if raw is not None else "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(payload) if gz else payload)
    return path


# ------------------------------------------------------------------ data_dir
def test_data_dir_argument_then_env_then_checkout_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_DATA", str(tmp_path / "env"))
    assert data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv("TRANSFORMER_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(data, "CHECKOUT_DATA", tmp_path / "shared" / "data")
    assert data_dir() == tmp_path / "home" / ".cache" / "transformer" / "data"
    (tmp_path / "shared" / "data").mkdir(parents=True)     # ../shared/data beside the checkout
    assert data_dir() == tmp_path / "shared" / "data"


def test_the_readme_commands_find_the_offline_corpora_without_transformer_data(monkeypatch):
    """The README's `python -m transformer ...` block sets no TRANSFORMER_DATA."""
    monkeypatch.delenv("TRANSFORMER_DATA", raising=False)
    assert data.CHECKOUT_DATA == Path(data.__file__).resolve().parents[2] / "shared" / "data"
    if not data.CHECKOUT_DATA.is_dir():
        pytest.skip("no ../shared/data beside this checkout")
    assert data_dir() == data.CHECKOUT_DATA
    assert len(load_corpus("multi30k-en-de", "valid")) > 0


def test_corpus_folder_resolves_every_spelling(tmp_path, monkeypatch):
    (tmp_path / "c").mkdir()
    monkeypatch.chdir(tmp_path)
    spellings = ["./c", "./c/", str(tmp_path / "c"), str(tmp_path / "c") + "/", "c/"]
    assert {data.corpus_folder(s) for s in spellings} == {(tmp_path / "c").resolve()}
    assert data.corpus_folder("multi30k-en-de", tmp_path) == (tmp_path / "multi30k-en-de").resolve()


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
    assert "download_multi30k" not in message


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
    resolved = data.resolve_corpus("toy-en-de*2+other-en-de", toy_root)
    assert resolved == f"{toy_root / 'toy-en-de'}*2+{other}*1"
    assert data.resolve_corpus(resolved) == resolved                 # the same spelt twice
    assert data.corpus_folders(resolved) == [toy_root / "toy-en-de", other]
    assert data.part_names("toy-en-de*2+other-en-de") == ["toy-en-de", "other-en-de"]
    assert data.part_names("toy-en-de") == ["toy-en-de"]
    joined = data.concatenate_corpora(["toy-en-de", other], toy_root / "toy+other", root=toy_root)
    assert data.mixture_parts(str(joined)) is None          # a folder whose name holds a +
    assert data.mixture_parts("toy+other", toy_root) is None                # by name too
    assert load_corpus("toy+other", "valid", root=toy_root).src == ["a cat", "a bird"]
    assert load_corpus(str(joined), "train").src == ["a house", "a tree", "a dog"]


def test_missing_multi30k_says_how_to_download(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_corpus("multi30k-en-de", "train", root=tmp_path)
    message = str(err.value)
    assert str(tmp_path / "multi30k-en-de" / "train.src.gz") in message
    assert "download_multi30k()" in message and "TRANSFORMER_DATA" in message


# ------------------------------------------------------------------ download / WMT
def test_multi30k_urls_map_to_our_layout():
    files = multi30k_files()
    base = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
    assert files == {
        base + "train.en.gz": "train.src.gz", base + "train.de.gz": "train.tgt.gz",
        base + "val.en.gz": "valid.src.gz", base + "val.de.gz": "valid.tgt.gz",
        base + "test_2016_flickr.en.gz": "test.src.gz",
        base + "test_2016_flickr.de.gz": "test.tgt.gz",
    }


def test_the_checksums_cover_every_file_the_download_writes():
    assert set(data.MULTI30K_SHA256) == set(multi30k_files().values())
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in data.MULTI30K_SHA256.values())


class Mirror:
    """A local HTTP server (127.0.0.1) standing in for the Multi30k repository: it serves
    small gzip corpora under the upstream names; ``sha256`` is their table, ``requests``
    the paths asked for, and ``broken`` maps a served name to a status to answer with."""

    def __init__(self, folder: Path):
        import hashlib
        import http.server
        import threading
        root, folder = folder, folder / "data" / "task1" / "raw"     # the upstream layout
        self.folder, self.requests, self.broken, self.sha256 = folder, [], {}, {}
        folder.mkdir(parents=True)
        for split, stem in data.MULTI30K_SPLITS.items():
            for side, lang in (("src", "en"), ("tgt", "de")):
                lines = [f"{split} {lang} sentence {i} ." for i in range(5)]
                write(folder / f"{stem}.{lang}.gz", lines, gz=True)
                self.sha256[f"{split}.{side}.gz"] = hashlib.sha256(
                    (folder / f"{stem}.{lang}.gz").read_bytes()).hexdigest()
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):
                mirror.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                if name in mirror.broken:
                    self.send_error(mirror.broken[name])
                else:
                    super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/data/task1/raw"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    served = Mirror(tmp_path / "served")
    # these stand-ins are not Multi30k's files: the table the download checks is theirs
    monkeypatch.setattr(data, "MULTI30K_SHA256", served.sha256)
    monkeypatch.setenv("TRANSFORMER_MULTI30K_URL", served.url)
    yield served
    served.close()


def test_download_from_a_mirror_checks_and_keeps_the_bytes_and_skips_present_files(
        tmp_path, mirror):
    folder = tmp_path / "data" / "multi30k-en-de"
    folder.mkdir(parents=True)
    write(folder / "train.src.gz", ["already here"], gz=True)
    assert data.download_multi30k(tmp_path / "data") == folder      # the URL from the env
    assert sorted(mirror.requests) == sorted(
        f"/data/task1/raw/{stem}.{lang}.gz" for stem in data.MULTI30K_SPLITS.values()
        for lang in ("en", "de") if (stem, lang) != ("train", "en"))
    assert sorted(p.name for p in folder.iterdir()) == sorted(multi30k_files().values())
    assert (folder / "test.tgt.gz").read_bytes() == \
        (mirror.folder / "test_2016_flickr.de.gz").read_bytes()
    valid = load_corpus("multi30k-en-de", "valid", root=tmp_path / "data")
    assert valid.src[0] == "valid en sentence 0 ." and valid.tgt[4] == "valid de sentence 4 ."
    assert gzip.decompress((folder / "train.src.gz").read_bytes()) == b"already here\n"


def test_a_damaged_download_is_refused_in_one_line_and_not_kept(tmp_path, mirror):
    served = mirror.folder / "val.de.gz"
    body = bytearray(served.read_bytes())
    body[-5] ^= 0xFF                                  # one flipped byte in the gzip trailer
    served.write_bytes(bytes(body))
    with pytest.raises(ValueError) as err:
        data.download_multi30k(tmp_path)
    message = str(err.value)
    assert message == (f"{mirror.url}/val.de.gz is not Multi30k's valid.tgt.gz: its SHA-256 "
                       f"is {data.hashlib.sha256(body).hexdigest()}, not "
                       f"{mirror.sha256['valid.tgt.gz']} (a damaged or different file; "
                       "not kept)")
    left = sorted(p.name for p in (tmp_path / "multi30k-en-de").iterdir())
    assert left == ["train.src.gz", "train.tgt.gz", "valid.src.gz"]   # no partial file


def test_a_page_instead_of_a_file_is_refused(tmp_path, mirror):
    (mirror.folder / "train.en.gz").write_bytes(b"<html>rate limited</html>")
    with pytest.raises(ValueError, match=r"/train\.en\.gz did not return a gzip file$"):
        data.download_multi30k(tmp_path)
    assert list((tmp_path / "multi30k-en-de").iterdir()) == []


def test_a_failed_download_says_which_file_and_why_in_one_line(tmp_path, mirror):
    mirror.broken["train.de.gz"] = 503
    with pytest.raises(ConnectionError) as err:
        data.download_multi30k(tmp_path)
    assert str(err.value) == (f"could not download {mirror.url}/train.de.gz: HTTP 503 "
                              "Service Unavailable")
    assert [p.name for p in (tmp_path / "multi30k-en-de").iterdir()] == ["train.src.gz"]
    mirror.close()                                    # nothing listening any more
    with pytest.raises(ConnectionError, match=r"^could not download http://127\.0\.0\.1:\d+/"
                                              r"data/task1/raw/train\.de\.gz: .*refused"):
        data.download_multi30k(tmp_path, timeout=600)


def test_load_wmt14_without_datasets_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)   # makes `import datasets` fail
    with pytest.raises(ImportError, match="pip install datasets"):
        load_wmt14("train")


def test_load_wmt14_converts_rows(monkeypatch):
    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config, split):
            assert (name, config, split) == ("wmt14", "de-en", "validation")
            return {"translation": [{"en": "A house.", "de": "Ein Haus."},
                                    {"en": "", "de": "Leer."}]}

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
