"""A stand-in for the repository's raw files, where a machine without a checkout (Colab, a
``pip install``) fetches the result records (``transformer.measuring.records``): a local HTTP
server (``tests/local_host.py``) that serves a folder's ``NAME.json`` files as
``/book/results/NAME.json``, as ``raw.githubusercontent.com/<owner>/<repo>/<branch>``
does. The records' reader goes to it where ``$TRANSFORMER_RECORDS_URL`` is :attr:`url`;
only the tests set that.
"""
from __future__ import annotations

from pathlib import Path

from local_host import LocalHost, QuietHandler

PREFIX = "/book/results/"


class RecordHost:
    """Serves ``folder/NAME.json`` at ``url + /book/results/NAME.json``; ``requests``
    lists the paths asked for, and ``broken`` maps a record's name to an HTTP status to
    answer with."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.requests: list[str] = []
        self.broken: dict[str, int] = {}
        host = self

        class Handler(QuietHandler):
            def do_GET(self):
                host.requests.append(self.path)
                name = self.path.removeprefix(PREFIX).removesuffix(".json")
                path = host.folder / f"{name}.json"
                if (name in host.broken or not self.path.startswith(PREFIX)
                        or "/" in name or not path.is_file()):
                    self.send_error(host.broken.get(name, 404))
                    return
                self.send_body(path.read_bytes())

        self.local = LocalHost(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()
