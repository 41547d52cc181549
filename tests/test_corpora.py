"""transformer.corpora: every corpus fetched by the project, checked by hash, all or
nothing; the data root's one rule; a reader's fresh clone fetching what the book needs."""
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corpus_host import multi30k_host, offline_files
from transformer import corpora, data
from transformer.corpora import (CORPORA, FileCorpus, data_dir, fetch, fetching,
                                 normalised_text, verify)
from transformer.data import load_corpus

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def host(shared_data):
    served = multi30k_host()
    yield served
    served.close()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ------------------------------------------------------------------ the data root
def test_the_data_root_is_the_argument_then_the_environment_then_the_home_cache(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_DATA", str(tmp_path / "env"))
    assert data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert not hasattr(data, "data_dir")                # one rule, one home
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv("TRANSFORMER_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "shared" / "data").mkdir(parents=True)    # a folder beside means nothing
    monkeypatch.chdir(tmp_path)
    assert data_dir() == tmp_path / "home" / ".cache" / "transformer" / "data"


def test_no_path_of_our_machines_is_in_the_package():
    package = REPO / "transformer"
    for path in package.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".txt", ".md", ".json", ".cfg", ""):
            text = path.read_text(errors="replace")
            for needle in ("shared/data", "../shared", "shared\" / \"data"):
                assert needle not in text, f"{path.relative_to(REPO)} names {needle}"


# ------------------------------------------------------------------ what is pinned
def test_each_corpus_is_pinned_file_by_file_with_its_source_and_licence():
    for c in CORPORA.values():
        assert c.licence and c.attribution and c.title, c.name
        if not isinstance(c, FileCorpus):
            continue
        assert set(c.sha256) == set(corpora.FILES), c.name
        assert all(len(h) == 64 and int(h, 16) >= 0 for h in c.sha256.values())
        assert c.licence and c.attribution and c.title
        assert c.url is None or set(c.upstream) == set(c.sha256)
    assert CORPORA["tatoeba-en-de"].url is None          # shipped with the package
    assert not verify("tatoeba-en-de", corpora.SHIPPED / "tatoeba-en-de")


def test_the_pinned_text_is_the_offline_copy_the_records_were_measured_on(shared_data):
    for name in corpora.fetched_names():
        assert verify(name, shared_data / name) == [], name
    shipped = corpora.SHIPPED / "tatoeba-en-de"
    for filename in corpora.FILES:                       # byte for byte, not only the text
        assert (shipped / filename).read_bytes() == \
            (shared_data / "tatoeba-en-de" / filename).read_bytes()


def test_whitespace_is_normalised_as_the_records_read_it():
    raw = gzip.compress("\ufeffA  man\u00a0in a  hat. \r\nZwei\tHunde.\n\n".encode())
    assert normalised_text(raw, "x") == b"A man in a hat.\nZwei Hunde.\n\n"


# ------------------------------------------------------------------ fetching
def test_fetch_puts_every_corpus_into_the_data_root_checked_by_hash(tmp_path, host, shared_data):
    root = tmp_path / "data"
    multi30k = fetch("multi30k-en-de", root, url=host.url("multi30k-en-de"))
    tatoeba = fetch("tatoeba-en-de", root)
    assert multi30k == root / "multi30k-en-de" and tatoeba == root / "tatoeba-en-de"
    assert verify("multi30k-en-de", multi30k) == verify("tatoeba-en-de", tatoeba) == []
    upstream = sorted(f"/multi30k-en-de/{n}" for n in CORPORA["multi30k-en-de"].upstream.values())
    assert sorted(host.requests) == upstream
    assert "licence: non-commercial" in (multi30k / "_about.txt").read_text()
    assert "CC BY 2.0 FR" in (tatoeba / "NOTICE").read_text()
    assert listing(root) == ["multi30k-en-de", "tatoeba-en-de"]      # nothing else left
    for split in ("train", "valid", "test"):
        assert load_corpus("multi30k-en-de", split, root=root).src == \
            load_corpus("multi30k-en-de", split, root=shared_data).src
    fetch("multi30k-en-de", root, url=host.url("nowhere"))            # present: checked only
    assert len(host.requests) == 6


def test_a_damaged_download_fails_in_one_line_and_leaves_no_corpus(tmp_path, host):
    body = bytearray(offline_files("multi30k-en-de")["valid.tgt.gz"].read_bytes())
    body[len(body) // 2] ^= 0xFF
    host.damaged["val.de.gz"] = bytes(body)
    with pytest.raises(ValueError) as err:
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    message = str(err.value)
    assert "\n" not in message and "val.de.gz" in message and "not kept" in message
    assert listing(tmp_path) == []                        # no corpus, no partial folder


def test_a_partial_download_fails_in_one_line_and_leaves_no_corpus(tmp_path, host):
    host.cut["train.de.gz"] = 100_000                     # the connection drops mid-file
    size = offline_files("multi30k-en-de")["train.tgt.gz"].stat().st_size
    url = f"{host.url('multi30k-en-de')}/train.de.gz"
    with pytest.raises(ConnectionError) as err:
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    assert str(err.value) == (f"could not download {url}: the connection closed after "
                              f"100,000 of {size:,} bytes")        # the URL named once
    assert listing(tmp_path) == []


def test_a_truncated_file_or_a_page_instead_of_a_file_is_refused(tmp_path, host):
    whole = offline_files("multi30k-en-de")["test.src.gz"].read_bytes()
    host.damaged["test_2016_flickr.en.gz"] = whole[: len(whole) // 2]
    with pytest.raises(ValueError, match=r"test_2016_flickr\.en\.gz is not a complete gzip"):
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    host.damaged["test_2016_flickr.en.gz"] = b"<html>rate limited</html>"
    with pytest.raises(ValueError, match=r"not a complete gzip file"):
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    assert listing(tmp_path) == []


def test_an_unreachable_host_is_one_line(tmp_path, host):
    host.broken["train.en.gz"] = 503
    with pytest.raises(ConnectionError) as err:
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    assert str(err.value) == (f"could not download {host.url('multi30k-en-de')}/train.en.gz: "
                              "HTTP 503 Service Unavailable")
    host.close()
    with pytest.raises(ConnectionError, match=r"refused"):
        fetch("multi30k-en-de", tmp_path, url=host.url("multi30k-en-de"))
    assert listing(tmp_path) == []


def test_a_folder_that_is_not_the_corpus_is_refused_and_left_alone(tmp_path):
    folder = tmp_path / "tatoeba-en-de"
    shutil.copytree(corpora.SHIPPED / "tatoeba-en-de", folder)
    (folder / "valid.tgt.gz").write_bytes(gzip.compress(b"my own sentences\n"))
    with pytest.raises(ValueError, match=r"tatoeba-en-de exists but is not the project's "
                                         r"tatoeba-en-de: valid\.tgt\.gz missing or different"):
        fetch("tatoeba-en-de", tmp_path)
    assert gzip.decompress((folder / "valid.tgt.gz").read_bytes()) == b"my own sentences\n"


def test_first_use_fetches_a_missing_corpus_and_a_mixture_fetches_each_part(tmp_path, host,
                                                                             monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MULTI30K_URL", host.url("multi30k-en-de"))
    valid = load_corpus("multi30k-en-de*2+tatoeba-en-de", "valid", root=tmp_path)
    assert len(valid) == 1014 + 1674
    assert listing(tmp_path) == ["multi30k-en-de", "tatoeba-en-de"]
    assert data.corpus_folders("tatoeba-en-de", tmp_path) == [tmp_path / "tatoeba-en-de"]
    with pytest.raises(ValueError, match="unknown corpus 'wmt15'"):
        corpora.fetch("wmt15", tmp_path)
    with pytest.raises(ValueError, match="wmt14 is read from the Hugging Face hub"):
        corpora.fetch("wmt14", tmp_path)                 # in the registry, not of files
    assert "wmt14" in CORPORA and "wmt14" not in corpora.fetched_names()


def test_the_first_use_note_names_no_folder_of_this_machine(tmp_path, host, monkeypatch,
                                                            capsys):
    """What a chapter prints when it fetches (and so what a built page shows): the data root
    as ``~/...`` under the home folder, else no path at all."""
    monkeypatch.setenv("TRANSFORMER_MULTI30K_URL", host.url("multi30k-en-de"))
    load_corpus("multi30k-en-de", "valid", root=tmp_path)
    note = capsys.readouterr().err
    assert "multi30k-en-de is not in the data root" in note and str(tmp_path) not in note
    monkeypatch.setenv("HOME", str(tmp_path))
    assert corpora.shown_root(tmp_path / ".cache" / "data") == "~/.cache/data"


def test_the_fetch_command_says_one_line_and_exits_2(tmp_path, host):
    host.broken["val.en.gz"] = 404
    env = {**os.environ, "TRANSFORMER_MULTI30K_URL": host.url("multi30k-en-de")}
    done = subprocess.run([sys.executable, "-m", "transformer", "fetch", "multi30k-en-de",
                           "tatoeba-en-de", "--data-root", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: could not download {host.url('multi30k-en-de')}/val.en.gz: HTTP 404 Not Found"]
    assert listing(tmp_path) == []


# ------------------------------------------------------------------ a reader's fresh clone
def test_a_fresh_clone_fetches_what_the_book_recipe_trains_on(tmp_path, host):
    """No data folder beside the clone, HOME new and empty, no TRANSFORMER_DATA: training
    on the book's mixture fetches both corpora (Multi30k from the local host) into
    ~/.cache/transformer/data, each checked by hash."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    clone, home = tmp_path / "reader" / "transformer", tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRANSFORMER_DATA", "PYTHONPATH", "TRANSFORMER_CACHE")}
    env.update(HOME=str(home), TRANSFORMER_MULTI30K_URL=host.url("multi30k-en-de"),
               OMP_NUM_THREADS="1")
    from transformer.training.recipes import recipe
    done = subprocess.run([sys.executable, "-m", "transformer", "train", "--recipe", "quick",
                           "--corpus", recipe("book").corpus, "--max-updates", "1",
                           "--no-progress", "--out", str(tmp_path / "run")],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "transformer" not in {p.name for p in clone.parent.parent.iterdir()} - {"reader"}
    root = home / ".cache" / "transformer" / "data"
    assert listing(root) == ["multi30k-en-de", "tatoeba-en-de"]
    assert verify("multi30k-en-de", root / "multi30k-en-de") == []
    assert verify("tatoeba-en-de", root / "tatoeba-en-de") == []
    imported = subprocess.run([sys.executable, "-c", "import transformer; print(transformer.__file__)"],
                              cwd=clone, env=env, capture_output=True, text=True, check=True)
    assert Path(imported.stdout.strip()).is_relative_to(clone)   # the clone's code ran


def test_two_fetches_at_once_both_return_the_corpus(tmp_path, monkeypatch):
    # what torchrun's ranks do on first use: both fetch, the first to finish puts the
    # folder in place, and the other finds it there when it renames its own
    real_read, other = fetching._read, []

    def read_then_let_the_other_finish(source, names, timeout, bar):
        if names[1] == corpora.FILES[-1] and not other:
            other.append(None)
            other[0] = fetch("tatoeba-en-de", tmp_path)         # the other process, whole
        return real_read(source, names, timeout, bar)

    monkeypatch.setattr(fetching, "_read", read_then_let_the_other_finish)
    assert fetch("tatoeba-en-de", tmp_path) == other[0] == tmp_path / "tatoeba-en-de"
    assert verify("tatoeba-en-de", tmp_path / "tatoeba-en-de") == []
    assert listing(tmp_path) == ["tatoeba-en-de"]                # the loser's copy is gone


def _killed_fetch(root: Path) -> None:
    """A fetch of tatoeba-en-de into ``root`` killed (SIGKILL) after its second file."""
    code = ("import os, signal, sys\n"
            "from transformer.corpora import fetching\n"
            "real, calls = fetching.normalised_text, []\n"
            "def text(data, where):\n"
            "    calls.append(where)\n"
            "    if len(calls) == 3:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    return real(data, where)\n"
            "fetching.normalised_text = text\n"
            "fetching.fetch('tatoeba-en-de', sys.argv[1])\n")
    done = subprocess.run([sys.executable, "-c", code, str(root)], timeout=120)
    assert done.returncode == -9
    assert listing(root) and "tatoeba-en-de" not in listing(root)   # its hidden folder


def test_a_killed_fetch_leaves_nothing_once_a_fetch_has_run_since(tmp_path):
    _killed_fetch(tmp_path)
    fetch("tatoeba-en-de", tmp_path)                     # the retry, seconds later
    assert listing(tmp_path) == ["tatoeba-en-de"]
    _killed_fetch(tmp_path / "other")
    shutil.copytree(tmp_path / "tatoeba-en-de", tmp_path / "other" / "tatoeba-en-de")
    fetch("tatoeba-en-de", tmp_path / "other")           # the corpus is there already
    assert listing(tmp_path / "other") == ["tatoeba-en-de"]


def test_a_blank_data_root_setting_counts_as_unset(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for blank in ("", " ", "\t"):
        monkeypatch.setenv("TRANSFORMER_DATA", blank)
        assert data_dir() == tmp_path / "home" / ".cache" / "transformer" / "data"
        with pytest.raises(ValueError, match=r"^--data-root .* is blank"):
            data_dir(blank)
    env = {**os.environ, "TRANSFORMER_DATA": " ", "HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "transformer", "fetch", "tatoeba-en-de"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    home = tmp_path / "home" / ".cache" / "transformer" / "data" / "tatoeba-en-de"
    assert done.stdout == f"tatoeba-en-de: {home}\n"
    assert listing(tmp_path) == ["home"]                 # no folder named " " here


def test_a_killed_fetchs_temporary_folder_is_removed_by_a_later_fetch(tmp_path):
    import fcntl
    killed, running = (tmp_path / f".tatoeba-en-de.{tag}.tmp" for tag in ("0dead0", "0live0"))
    for folder in (killed, running):
        folder.mkdir()
        (folder / "train.src.gz").write_bytes(b"half a file")
    held = os.open(running, os.O_RDONLY)              # its writer still runs: it holds it
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        fetch("tatoeba-en-de", tmp_path)
        assert listing(tmp_path) == [running.name, "tatoeba-en-de"]
    finally:
        os.close(held)
