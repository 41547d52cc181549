"""Ctrl-C where a command writes its output: held back while a finished piece is written
and counted, so what a stopped command reports is what its output holds."""
from __future__ import annotations

import contextlib
import signal
import threading


class CtrlCBetweenLines:
    """Ctrl-C held back while a finished translation is written and counted, and once all
    are written, so the count a stopped ``translate`` reports is the lines in its output,
    wherever the signal lands (between writing a line and counting it, the count would
    be one short). Elsewhere, in the decoding, Ctrl-C stops at once.
    Installed only in the main thread and where Ctrl-C raises KeyboardInterrupt (not where
    it is ignored, as in a background job)."""

    def __init__(self):
        self.holding = self.pending = False
        self.previous = None

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)

    def restore(self) -> None:
        previous, self.previous = self.previous, None
        if previous is not None:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum, frame):
        if self.holding:
            self.pending = True
        else:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self):
        """A block Ctrl-C does not cut: a Ctrl-C within it is raised when it ends."""
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt
