"""The tests' one local HTTP server: a threaded server on 127.0.0.1, on a free port, until
:meth:`LocalHost.close`. It serves the built site (``tests/conftest.py``'s ``base_url``), the
corpora's stand-in host (``tests/corpus_host.py``) and the result records' stand-in host
(``tests/record_host.py``); each hands it its request handler, a subclass of
:class:`QuietHandler` (answers written by hand) or of :class:`StaticFiles` (a folder)."""
from __future__ import annotations

import functools
import http.server
import threading


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A handler that logs nothing (the test run's output is pytest's)."""

    def log_message(self, *args):
        pass

    def send_body(self, body: bytes, upto: int | None = None):
        """Answer 200 with ``body``'s length, then send its first ``upto`` bytes (all by
        default: fewer stands in for a connection closed mid-file)."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) if upto is None else upto])


class StaticFiles(http.server.SimpleHTTPRequestHandler):
    """Serves the folder given as ``directory`` (``LocalHost.static``), logging nothing."""

    def log_message(self, *args):
        pass


class LocalHost:
    """Serves with ``handler`` (a request handler class, or a callable making one) on
    127.0.0.1 at a free port, each request in its own thread, until :meth:`close`; also a
    context manager."""

    def __init__(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @classmethod
    def static(cls, folder, handler=StaticFiles) -> LocalHost:
        """Serves the files under ``folder`` with ``handler`` (a :class:`StaticFiles`)."""
        return cls(functools.partial(handler, directory=str(folder)))

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LocalHost:
        return self

    def __exit__(self, *exc):
        self.close()
