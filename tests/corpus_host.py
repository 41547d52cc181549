"""A reader's fresh machine, for the whole test run: corpora come from their hosts.

Our machines and CI cannot reach the corpora's hosts; they hold an offline copy of the
corpora beside the checkout (``../shared/data``, or ``$TRANSFORMER_TEST_CORPORA``). The
product never names it. Instead, :func:`rehearse_a_fresh_machine` (called by
``tests/conftest.py`` and ``book/conftest.py``) makes every test, chapter and book build
of a run meet what a reader's machine meets:

* ``$TRANSFORMER_DATA`` is a new, empty folder, so each corpus is fetched on its first use
  by :mod:`transformer.corpora`, checked by hash, as on a reader's machine;
* :class:`CorpusHost`, a local HTTP server (127.0.0.1), stands in for Multi30k's
  repository (``$TRANSFORMER_MULTI30K_URL``), serving the offline copy's files under the
  upstream names; Tatoeba comes from the copy shipped inside the package.

A developer who sets ``TRANSFORMER_DATA`` keeps it (no rehearsal). Tests that read the
offline copy itself take the ``shared_data`` fixture (:data:`OFFLINE`).
"""
from __future__ import annotations

import atexit
import http.server
import os
import shutil
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OFFLINE = Path(os.environ.get("TRANSFORMER_TEST_CORPORA") or REPO.parent / "shared" / "data")
_rehearsal: dict = {}


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

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                host.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                if name in host.broken or self.path not in host.files:
                    self.send_error(host.broken.get(name, 404))
                    return
                body = host.damaged.get(name) or host.files[self.path].read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:host.cut.get(name, len(body))])

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{name}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def offline_files(name: str, root: Path = OFFLINE) -> dict[str, Path]:
    """Our file name -> path of corpus ``name``'s files in the offline copy."""
    from transformer.corpora import CORPORA
    return {filename: root / name / filename for filename in CORPORA[name].sha256}


def multi30k_host() -> CorpusHost:
    """A host serving the offline copy's Multi30k under the upstream names."""
    return CorpusHost({"multi30k-en-de": offline_files("multi30k-en-de")})


def rehearse_a_fresh_machine() -> None:
    """Point this process (and what it starts) at an empty data root and a local Multi30k
    host, unless ``TRANSFORMER_DATA`` is set or there is no offline copy (see above)."""
    if _rehearsal or os.environ.get("TRANSFORMER_DATA") or \
            not (OFFLINE / "multi30k-en-de").is_dir():
        return
    host = multi30k_host()
    root = tempfile.mkdtemp(prefix="transformer-data-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    os.environ["TRANSFORMER_DATA"] = root
    os.environ["TRANSFORMER_MULTI30K_URL"] = host.url("multi30k-en-de")
    _rehearsal.update(host=host, root=root)
