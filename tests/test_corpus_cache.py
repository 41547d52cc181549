"""The test run's corpora on a reader's machine (tests/corpus_host.py): with no offline copy
beside the checkout, the run fetches them once, through the project's own fetch, into its
git-ignored test cache and serves them as it serves the copy; it skips the tests that need
them only when a host cannot be reached, says so in one line at the top of its report,
and under CI fails them instead.

Each test runs a pytest session in a copy of this checkout's tests with nothing beside it
(the package is the installed one), as on a reader's fresh clone.
"""
import gzip
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import processes
from corpus_host import CorpusHost, offline_files
from transformer.corpora import CORPORA, verify

REPO = Path(__file__).resolve().parents[1]
# three tests that read the corpora: the copy directly (a mark, the shared_data fixture),
# and through the local host that stands in for Multi30k's repository
NEED_CORPORA = [
    "tests/test_data.py::test_multi30k_sizes[valid-1014]",
    "tests/test_corpora.py::test_the_pinned_text_is_the_offline_copy_the_records_were_measured_on",
    "tests/test_corpora.py::test_fetch_puts_every_corpus_into_the_data_root_checked_by_hash"]
OURS = ("TRANSFORMER_TEST_CORPORA", "TRANSFORMER_DATA", "TRANSFORMER_MULTI30K_URL", "CI",
        "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")


@pytest.fixture
def clone(tmp_path) -> Path:
    """A checkout with nothing beside it: this one's tests and settings in a new folder."""
    clone = tmp_path / "reader" / "transformer"
    shutil.copytree(REPO / "tests", clone / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", clone)
    return clone


def session(clone: Path, *, url: str | None = None, ci: bool = False):
    """A pytest run of NEED_CORPORA in ``clone``, as a reader starts it (our corpus
    settings gone; ``url``: where Multi30k's repository is, else its real host); the
    completed process and its report's ``corpora:`` lines."""
    env = {k: v for k, v in os.environ.items() if k not in OURS}
    env["HOME"] = str(clone.parent / "home")                # HOME's caches empty
    (clone.parent / "home").mkdir(exist_ok=True)
    if url:
        env["TRANSFORMER_MULTI30K_URL"] = url
    if ci:
        env["CI"] = "true"
    done = processes.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
                          *NEED_CORPORA], cwd=clone, env=env, timeout=900)
    return done, [line for line in done.stdout.splitlines() if line.startswith("corpora: ")]


def upstream_shaped(path: Path) -> bytes:
    """The file as its upstream repository has it: the same text with upstream's
    whitespace (a double space, a no-break space, a trailing space), compressed anew."""
    lines = gzip.decompress(path.read_bytes()).decode().split("\n")
    lines[0] = lines[0].replace(" ", "  ", 1) + " "
    lines[1] = lines[1].replace(" ", "\u00a0", 1)
    return gzip.compress("\n".join(lines).encode())


def summary(done) -> str:
    return done.stdout.strip().splitlines()[-1].strip("= ")


def test_without_an_offline_copy_the_run_fetches_the_corpora_once_into_its_cache(
        clone, shared_data):
    files = offline_files("multi30k-en-de", shared_data)
    host = CorpusHost({"multi30k-en-de": files})             # stands in for the repository
    upstream = CORPORA["multi30k-en-de"].upstream
    host.damaged.update({upstream[ours]: upstream_shaped(path) for ours, path in files.items()})
    cache = clone / ".cache" / "test-corpora"
    try:
        first, header = session(clone, url=host.url("multi30k-en-de"))
        assert first.returncode == 0 and "3 passed" in summary(first), first.stdout[-3000:]
        assert header == [f"corpora: fetched from their hosts into {cache} (the test cache; "
                          f"fetched once)"], first.stdout[:2000]
        assert sorted(host.requests) == sorted(f"/multi30k-en-de/{n}" for n in upstream.values())
        assert verify("multi30k-en-de", cache / "multi30k-en-de") == []    # as pinned
        assert verify("tatoeba-en-de", cache / "tatoeba-en-de") == []      # from the package

        second, header = session(clone, url=host.url("multi30k-en-de"))
        assert second.returncode == 0 and "3 passed" in summary(second), second.stdout[-3000:]
        assert header == [f"corpora: cached in {cache} (the test cache; fetched once)"]
        assert len(host.requests) == 6                                      # not again
    finally:
        host.close()


def test_the_test_cache_is_ignored_by_git():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", ".cache/test-corpora/multi30k-en-de"],
                             cwd=REPO, timeout=60)
    assert ignored.returncode == 0


def reachable(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=30).close()
        return True
    except OSError:
        return False


def test_against_the_real_hosts_the_run_fetches_or_says_in_one_line_why_it_skips(clone):
    """Multi30k's real host: where it can be reached (a reader's machine) the run fetches
    from it and passes; where it cannot (our machines, CI), the tests that need the
    corpora are skipped, with the reason, and the first lines of the report say so."""
    c = CORPORA["multi30k-en-de"]
    done, header = session(clone)
    if reachable(f"{c.url}/{c.upstream['valid.src.gz']}"):
        assert done.returncode == 0 and "3 passed" in summary(done), done.stdout[-3000:]
        assert header[0].startswith("corpora: fetched from their hosts into"), header
        return
    assert done.returncode == 0 and summary(done).startswith("3 skipped"), done.stdout[-3000:]
    assert len(header) == 1, done.stdout[:2000]
    assert header[0].startswith("corpora: the corpora's hosts cannot be reached (could not "
                                f"download {c.url}/")
    assert header[0].endswith("); the tests that need them are skipped")
    why = header[0].removeprefix("corpora: ").removesuffix("; the tests that need them are "
                                                           "skipped")
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED [1] ")]
    assert len(skips) == 3 and all(line.endswith(f": {why}") for line in skips), skips


def test_under_ci_a_host_that_cannot_be_reached_fails_the_tests_that_need_corpora(clone):
    done, header = session(clone, url="http://127.0.0.1:9/multi30k-en-de", ci=True)  # refused
    assert done.returncode == 1 and "skipped" not in summary(done), done.stdout[-3000:]
    assert "1 failed" in summary(done) and "2 errors" in summary(done), summary(done)
    assert header == ["corpora: the corpora's hosts cannot be reached (could not download "
                      "http://127.0.0.1:9/multi30k-en-de/train.en.gz: [Errno 111] Connection "
                      "refused); CI is set, so the tests that need them fail"]
