"""A reader's fresh machine, for the whole test run: corpora come from their hosts.

The tests that read a corpus read an offline copy of the corpora (:data:`OFFLINE`, the
``shared_data`` fixture), found in this order:

* ``$TRANSFORMER_TEST_CORPORA``, where a developer put one;
* ``../shared/data`` beside the checkout (our machines and CI, which cannot reach the
  corpora's hosts, hold one there);
* else the test cache, ``.cache/test-corpora/`` (git-ignored): the first run on a reader's
  machine fetches the corpora into it through the project's own fetch
  (:func:`transformer.corpora.fetch`, from their real hosts, checked by hash), once;
  later runs reuse it. Only when a host cannot be reached are the tests that need the
  corpora skipped, and the run says so in the first lines of its report
  (:func:`report`, ``pytest_report_header``); under CI (``CI`` set) they fail instead.

The product never names the offline copy. Instead, :func:`rehearse_a_fresh_machine`
(called by ``tests/conftest.py`` and ``book/conftest.py``) makes every test, chapter and
book build of a run meet what a reader's machine meets:

* ``$TRANSFORMER_DATA`` is a new, empty folder, so each corpus is fetched on its first use
  by :mod:`transformer.corpora`, checked by hash, as on a reader's machine;
* :class:`CorpusHost`, a local HTTP server (``tests/local_host.py``), stands in for Multi30k's
  repository (``$TRANSFORMER_MULTI30K_URL``), serving the offline copy's files under the
  upstream names; Tatoeba comes from the copy shipped inside the package.

A developer who sets ``TRANSFORMER_DATA`` keeps it (no rehearsal).
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from local_host import LocalHost, QuietHandler

REPO = Path(__file__).resolve().parents[1]
BESIDE = REPO.parent / "shared" / "data"
CACHE = REPO / ".cache" / "test-corpora"
NEEDED = ("multi30k-en-de", "tatoeba-en-de")          # what the tests read of the copy


def _offline() -> Path:
    if os.environ.get("TRANSFORMER_TEST_CORPORA"):
        return Path(os.environ["TRANSFORMER_TEST_CORPORA"])
    return BESIDE if (BESIDE / "multi30k-en-de").is_dir() else CACHE


OFFLINE = _offline()
_rehearsal: dict = {}
_corpora: dict = {}


class CorpusHost:
    """Serves the files of ``corpora`` (corpus name -> our file name -> path) under each
    corpus's upstream names (``transformer.corpora.CORPORA[name].upstream``) at
    ``url(name)``. ``requests`` lists the paths asked for; ``broken`` maps an upstream
    file name to an HTTP status to answer with, ``damaged`` to bytes to serve instead,
    and ``cut`` to a byte count after which the connection is closed mid-file."""

    def __init__(self, corpora: dict[str, dict[str, Path]]):
        from transformer.corpora import CORPORA
        self.files = {f"/{name}/{CORPORA[name].upstream.get(ours, ours)}": path
                      for name, files in corpora.items() for ours, path in files.items()}
        self.requests: list[str] = []
        self.broken: dict[str, int] = {}
        self.damaged: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        host = self

        class Handler(QuietHandler):
            def do_GET(self):
                host.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                if name in host.broken or self.path not in host.files:
                    self.send_error(host.broken.get(name, 404))
                    return
                self.send_body(host.damaged.get(name) or host.files[self.path].read_bytes(),
                               upto=host.cut.get(name))

        self.local = LocalHost(Handler)

    def url(self, name: str) -> str:
        return f"{self.local.url}/{name}"

    def close(self):
        self.local.close()


def offline_files(name: str, root: Path = OFFLINE) -> dict[str, Path]:
    """Our file name -> path of corpus ``name``'s files in the offline copy."""
    from transformer.corpora import CORPORA
    return {filename: root / name / filename for filename in CORPORA[name].sha256}


def multi30k_host() -> CorpusHost:
    """A host serving the offline copy's Multi30k under the upstream names."""
    return CorpusHost({"multi30k-en-de": offline_files("multi30k-en-de")})


def missing() -> str | None:
    """None once the offline copy holds the corpora the tests read (fetched into the test
    cache first where that is where it is: once, see above); else one line saying why not.
    The answer is kept for the rest of the run."""
    if "missing" not in _corpora:
        _corpora["missing"] = _ready(OFFLINE)
    return _corpora["missing"]


def skipped() -> bool:
    """Whether the tests that need the corpora skip for want of them: outside CI, where a
    host cannot be reached (or a copy named by ``$TRANSFORMER_TEST_CORPORA`` is absent);
    a host that answers with something else than the corpus fails them, as CI does."""
    return missing() is not None and _corpora.get("skip", False) and not os.environ.get("CI")


def _ready(root: Path) -> str | None:
    if root != CACHE:
        if (root / "multi30k-en-de").is_dir():
            return None
        _corpora["skip"] = True                  # a copy named but absent
        return f"offline corpora not found at {root} (set TRANSFORMER_TEST_CORPORA)"
    from transformer.corpora import fetch
    from transformer.errors import InputError
    try:
        for name in NEEDED:
            if not (root / name).is_dir():
                _corpora["fetched"] = True
            fetch(name, root, timeout=30, progress=False)
    except ConnectionError as e:                 # no network, or the host is down
        _corpora["skip"] = True
        return f"the corpora's hosts cannot be reached ({e})"
    except (InputError, OSError) as e:           # reached, but not the corpus: fail loudly
        return f"fetching the corpora into {root} failed: {e}"
    return None


def report() -> str:
    """One line for the top of a test run: where the corpora come from, or why the tests
    that need them are skipped (or fail, under CI)."""
    why = missing()
    if why is None:
        if OFFLINE == CACHE:
            how = "fetched from their hosts into" if _corpora.get("fetched") else "cached in"
            return f"corpora: {how} {CACHE} (the test cache; fetched once)"
        return f"corpora: the offline copy at {OFFLINE}"
    if skipped():
        return f"corpora: {why}; the tests that need them are skipped"
    if _corpora.get("skip"):
        return f"corpora: {why}; CI is set, so the tests that need them fail"
    return f"corpora: {why}; the tests that need them fail"


def needs_corpora():
    """A mark for tests that read the offline copy directly (:data:`OFFLINE`): skipped
    with :func:`missing`'s reason when the hosts cannot be reached, except under CI."""
    import pytest
    return pytest.mark.skipif(skipped(), reason=missing() or "")


def rehearse_a_fresh_machine() -> None:
    """Point this process (and what it starts) at an empty data root and a local Multi30k
    host serving the offline copy, unless ``TRANSFORMER_DATA`` is set or the corpora
    cannot be had (see above)."""
    if _rehearsal or os.environ.get("TRANSFORMER_DATA") or missing() is not None:
        return
    host = multi30k_host()
    root = tempfile.mkdtemp(prefix="transformer-data-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    os.environ["TRANSFORMER_DATA"] = root
    os.environ["TRANSFORMER_MULTI30K_URL"] = host.url("multi30k-en-de")
    _rehearsal.update(host=host, root=root)
