"""How long chapter 4's training panel takes to learn reversal in headless Chromium.

Lays out the panel as the book's build does (``book/_ext/book_training.py``: the panel's
code, TensorFlow.js from the npm cache, the page's loader), serves it on 127.0.0.1
(``Cache-Control: no-cache``) and drives Debian's Chromium through Playwright as a reader
does: open the panel (the bytes the server sent, raw and as gzip would send them; the time
to a ready panel), press Train with the panel's starting settings, and read what the
panel reports: the step and the seconds at which the sequence accuracy on 500 held-out
sequences first reached 99%. ``--repeats`` trainings (the same seed, so the same steps;
the time is their median). During the first, the page's frames are measured beside a
control page with a plain busy Worker at the same time (``benchmarks.book.Frames``): the
longest gap between two frames, the gaps over 100 ms the control did not have, the longest
main-thread task. The machine's load average is kept beside the figures: time it on a
quiet machine.

    python -m benchmarks.book.page_training --record book/results/page_training.json
"""
from __future__ import annotations

import argparse
import functools
import gzip
import html
import http.server
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import REPO
from benchmarks.book import Frames, Served, sphinx_extension
from benchmarks.record import add_option, save

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<script type="module" src="../_static/book/{loader}"></script></head><body>
<div id="train-panel" data-static="../_static/" data-bytes="{size}" data-files="{files}"></div>
</body></html>"""


def stage(root: Path) -> dict:
    """The panel's page, its code and TensorFlow.js under ``root``, as the build lays them
    out; returns the download list (book/_ext/book_training.py's ``download_list``)."""
    extension = (sphinx_extension("npm_cache") and sphinx_extension("page_code")
                 and sphinx_extension("book_training"))
    LOADER, copy_tfjs = extension.LOADER, extension.copy_tfjs
    download_bytes, download_list = extension.download_bytes, extension.download_list
    static = root / "_static"
    sphinx_extension("page_code").copy_code(static, "lib", "training")
    if not copy_tfjs(REPO, static):
        raise SystemExit("no TensorFlow.js: needs npm")
    files = download_list(static)
    (root / "book").mkdir()
    (root / "book" / "page.html").write_text(PAGE.format(
        loader=LOADER, size=download_bytes(files),
        files=html.escape(json.dumps(files, separators=(",", ":")))))
    return files


def in_browser(root: Path, repeats: int) -> dict:
    from playwright.sync_api import sync_playwright
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Served, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    runs = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/book/page.html")
            start = time.perf_counter()
            page.click("button.tp-open")
            page.wait_for_function("() => window.attentionBook.training && !document.querySelector("
                                   "'.tp-train').disabled || document.querySelector('.tp-error')",
                                   timeout=300_000)
            ready_s = time.perf_counter() - start
            if page.query_selector(".tp-error"):
                raise SystemExit(page.text_content(".tp-status"))
            sent = {p: n for p, n in Served.sent.items() if "/_static/" in p}
            backend = page.evaluate("() => window.attentionBook.training.backend")
            settings = page.evaluate("() => window.attentionBook.training.settings()")
            frames = None
            for i in range(repeats):
                page.evaluate("() => { window.attentionBook.training.result = null; }")
                if i == 0:
                    page.locator(".tp-train").scroll_into_view_if_needed()   # no scrolling timed
                    watch = Frames(browser, page, f"http://127.0.0.1:{server.server_port}/")
                page.click(".tp-train")
                page.wait_for_function("() => window.attentionBook.training.result || "
                                       "document.querySelector('.tp-error')", timeout=600_000)
                if i == 0:
                    page.wait_for_timeout(300)                   # the last maps drawn
                    frames = watch.stop()
                r = page.evaluate("() => window.attentionBook.training.result")
                if not r or not r["reached"]:
                    raise SystemExit(f"99% not reached: {page.text_content('.tp-status')}")
                runs.append(r)
            version = browser.version
            browser.close()
    finally:
        server.shutdown()
    return {"runs": runs, "sent": sent, "ready_s": ready_s, "backend": backend,
            "settings": settings, "frames": frames, "chromium": version}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    add_option(parser, "page_training")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stage(root)
        got = in_browser(root, args.repeats)
        compressed = sum(len(gzip.compress((root / p.lstrip("/")).read_bytes()))
                         for p in got["sent"])
    runs = got["runs"]
    seconds = statistics.median(r["reached"]["seconds"] for r in runs)
    figures = {
        "task": "reverse 8 symbols of 10",
        "target_sequence_accuracy": got["settings"]["target"],
        "settings": got["settings"],
        "parameters": runs[0]["parameters"],
        "steps_to_target": runs[0]["reached"]["step"],
        "seconds_to_target": round(seconds, 2),
        "seconds_each": [round(r["reached"]["seconds"], 2) for r in runs],
        "accuracy_at_stop": runs[0]["accuracy"],
        "download_bytes": sum(got["sent"].values()),
        "download_bytes_gzip": compressed,
        "downloaded": sorted(got["sent"]),
        "panel_ready_s": round(got["ready_s"], 2),
        "frames_while_training": got["frames"],
        "tfjs": got["backend"],
        "browser": f"Chromium {got['chromium']} (headless, Playwright)",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(figures, indent=1))
    f = got["frames"]
    print(f"99% after {figures['steps_to_target']} steps in {seconds:.1f} s; the page's frames "
          f"while it trained: {f['frames']} in {f['seconds']:.1f} s, longest gap "
          f"{f['longest_gap_ms']} ms ({f['gaps_over_100_ms']} over 100 ms, "
          f"{f['gaps_over_100_ms_not_in_control']} of them not in the control's), longest "
          f"main-thread task {f['longest_task_ms']} ms; the control page beside a busy Worker: "
          f"longest gap {f['control_longest_gap_ms']} ms")
    save(args.record, "chapter 4's training panel in headless Chromium: time and steps to "
         "99% sequence accuracy on reversal with its starting settings, and its download",
         figures)


if __name__ == "__main__":
    main()
