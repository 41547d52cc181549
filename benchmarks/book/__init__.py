"""The book and its page: the build, the book's model, the model in the reader's browser
(``python -m benchmarks.book.NAME --help``). What the page benchmarks share: the book's
Sphinx extensions loaded as Sphinx loads them, a server that counts what it sends, and the
page's frames measured beside a control page (``Frames``)."""
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


# ------------------------------------------------ the page's frames, beside a control page
# What the tests no longer time (the suite asserts no durations, tests/test_suite.py): how
# long a page's frames wait while its Worker works. requestAnimationFrame times and the
# main thread's long tasks ([start, duration]), in ms since the epoch (performance.timeOrigin
# + t: two pages' times compare), until window.frames_stop_ is set.
RECORD_FRAMES = """() => { window.frames_ = new Promise((resolve) => {
    const frames = [], tasks = [];
    const observer = new PerformanceObserver((l) => l.getEntries().forEach(
      (e) => tasks.push([performance.timeOrigin + e.startTime, e.duration])));
    observer.observe({type: 'longtask'});
    window.frames_stop_ = false;
    const frame = (t) => {
      frames.push(performance.timeOrigin + t);
      if (!window.frames_stop_) return requestAnimationFrame(frame);
      observer.disconnect();
      resolve({frames, tasks});
    };
    requestAnimationFrame(frame);
  }); }"""
STOP_FRAMES = "() => { window.frames_stop_ = true; return window.frames_; }"
BUSY_WORKER = ("() => { window.busy_ = new Worker(URL.createObjectURL(new Blob(["
               "'for (;;) {}'], {type: 'text/javascript'}))); }")
LONG_GAP_MS = 100


class Frames:
    """The frames of ``page`` while it works, measured at the same time as those of a
    control: another page (its own renderer process, opened at ``control_url``) beside a
    plain busy Worker, the load a working Worker puts on the machine without the page's
    own drawing. What the machine's other work does to frames, it does to both::

        frames = Frames(browser, page, url)
        ...the page works...
        figures = frames.stop()
    """

    def __init__(self, browser, page, control_url: str):
        self.page, self.control = page, browser.new_page()
        self.control.goto(control_url)
        self.control.evaluate(BUSY_WORKER)
        self.control.evaluate(RECORD_FRAMES)
        self.page.evaluate(RECORD_FRAMES)

    def stop(self) -> dict:
        measured = self.page.evaluate(STOP_FRAMES)
        beside = self.control.evaluate(STOP_FRAMES)
        self.control.evaluate("() => window.busy_.terminate()")
        self.control.close()
        return frame_figures(measured, beside)


def frame_figures(measured: dict, control: dict) -> dict:
    """The page's frames and long tasks against the control's: its longest gap between two
    frames, its gaps over ``LONG_GAP_MS`` and those of them the control page did not have
    at the same moment (a gap as long, within 50 ms, overlapping: the machine's, not the
    page's), its longest main-thread task, and the control's longest gap."""
    def gaps(frames):
        return list(zip(frames, frames[1:]))

    ours, theirs = gaps(measured["frames"]), gaps(control["frames"])

    def the_machines(start, end):
        return any(min(end, b) - max(start, a) > 0 and (b - a) >= (end - start) - 50
                   for a, b in theirs)

    long = [(a, b) for a, b in ours if b - a > LONG_GAP_MS]
    frames = measured["frames"]
    return {"frames": len(frames),
            "seconds": round((frames[-1] - frames[0]) / 1000, 2) if frames else 0,
            "longest_gap_ms": round(max((b - a for a, b in ours), default=0)),
            f"gaps_over_{LONG_GAP_MS}_ms": len(long),
            f"gaps_over_{LONG_GAP_MS}_ms_not_in_control": sum(not the_machines(a, b) for a, b in long),
            "longest_task_ms": round(max((d for _, d in measured["tasks"]), default=0)),
            "control_frames": len(control["frames"]),
            "control_longest_gap_ms": round(max((b - a for a, b in theirs), default=0))}
