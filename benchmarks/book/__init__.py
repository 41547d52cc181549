"""The book and its page: the build, the book's model, the model in the reader's browser
(``python -m benchmarks.book.NAME --help``). What the page benchmarks share: the book's
Sphinx extensions loaded as Sphinx loads them, and a server that counts what it sends."""
from __future__ import annotations

import http.server
import importlib.machinery
import importlib.util
import os
import sys
from urllib.parse import urlparse

from benchmarks import REPO


def sphinx_extension(name: str):
    """The book's Sphinx extension ``book/_ext/NAME.py``. The extensions are no package
    (Sphinx imports each by name from ``book/_ext``, and they import each other so): it
    is loaded under its own name, as Sphinx loads it."""
    if name not in sys.modules:
        spec = importlib.machinery.PathFinder.find_spec(name, [str(REPO / "book" / "_ext")])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class Served(http.server.SimpleHTTPRequestHandler):
    """Counts the body bytes sent for each path; no-cache, as the tests' server."""
    sent: dict[str, int] = {}

    def log_message(self, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def copyfile(self, source, outputfile):
        path = urlparse(self.path).path
        self.sent[path] = self.sent.get(path, 0) + os.fstat(source.fileno()).st_size
        super().copyfile(source, outputfile)
