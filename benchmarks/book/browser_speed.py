"""How fast the book's model translates in the reader's browser, next to the Python CLI.

Exports a checkpoint as the book build does (``transformer.tools.export``, the page's weight
form), serves it with the page's code (book/_ext/static) and onnxruntime-web on 127.0.0.1
(``Cache-Control: no-cache``, so only the page's own cache avoids the network), and
drives headless Chromium (Debian's, through Playwright) through the page as a reader
does: the bytes the server sent for the model and the runtime, the time from the button
to a ready model, and the time to translate one 15-word test sentence with greedy search
and with beam 4, as the page reports them (median of ``--repeats`` after one warm-up);
then the page's frames while it translates a 200-token input (its longest gap between two
frames and its longest main-thread task, beside a control page with a plain busy Worker
measured at the same time: ``benchmarks.book.Frames``) and while it translates a
255-token one and draws its map (the longest task: the map's drawing); then the page
loaded again, and the bytes that second visit downloaded. Then the same
sentence through ``python -m transformer translate`` (wall time of the command, start-up
included) and through ``transformer.translation.translate`` in this process (torch,
``--threads``). ``--record PATH`` keeps the result there under ``--label``, with its
provenance.

    python -m benchmarks.book.browser_speed --label after --record book/results/browser_speed.json
    python -m benchmarks.book.browser_speed --code-from REV --weights fp32 --label before \\
        --checkpoint OLD/average.pt --record book/results/browser_speed.json

``--code-from REV`` serves the page's code (its ES modules, ``book/_ext/static/lib`` and
``translator/``) as it was at git revision ``REV``; a revision from before those modules
is refused. (The record's "before", the page's code of ec7b39e, was measured by this
script as it was at the commit its provenance names.) Without
``--checkpoint`` it takes the book's model (chapter 7's cached run; trained first if the
cache lacks it).
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from benchmarks import REPO
from benchmarks.book import Frames, Served, sphinx_extension
from benchmarks.record import add_option
from transformer.measuring.timing import Stopwatch

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="../_static/{style}">
<script src="../_static/plotly.min.js"></script>{scripts}</head><body>
<div id="live-translator" class="live-translator" data-model="../_static/model/"
 data-ort="../_static/ort/" {attributes}></div></body></html>"""


def page_build():
    """``book/_ext/book_translator.py``: the book's Sphinx extension that lays out the page's
    model and code (it imports ``npm_cache``, loaded first)."""
    return (sphinx_extension("npm_cache") and sphinx_extension("page_code")
            and sphinx_extension("book_translator"))


def test_sentences() -> list[str]:
    from transformer.data import load_corpus
    return load_corpus("multi30k-en-de", "test").src


def fifteen_word_sentence() -> str:
    return next(s for s in test_sentences() if len(s.split()) == 15)


def encoded(page, text: str) -> int:
    """How many pieces the page's encoder (its worker's) makes of ``text``."""
    done = page.evaluate("(t) => window.attentionBook.translator.ask('encode', {sentences: [t]})", text)
    return len(done["ids"][0])


def long_input(page, sentences: list[str], tokens: int) -> str:
    """Test sentences joined, cut and padded with " a" until the page's encoder makes
    exactly ``tokens`` pieces of them (as tests/test_browser_model.py's)."""
    words = " ".join(sentences).split()
    low, high = 0, tokens                    # a word makes one piece or more
    while low < high:                        # the most words within ``tokens`` pieces
        mid = (low + high + 1) // 2
        low, high = (mid, high) if encoded(page, " ".join(words[:mid])) <= tokens else (low, mid - 1)
    text = " ".join(words[:low])
    while encoded(page, text) < tokens:
        text += " a"
    return text


def responsiveness(browser, page, control_url: str, sentences: list[str]) -> dict:
    """The page's frames while it translates a 200-token input (from the click until the
    translations are shown), and while it translates a 255-token one and draws its map
    (until the map is drawn), each beside a control page measured at the same time."""
    figures = {}
    for name, tokens, done in (
            ("while_translating", 200, "document.querySelector('.lt-output .lt-text')"),
            ("while_drawing_a_long_map", 255, "window.attentionBook.translator.drawn")):
        text = long_input(page, sentences[100:], tokens)
        page.fill("input.lt-input", text)
        page.evaluate("() => { document.querySelector('.lt-output').replaceChildren();"
                      " window.attentionBook.translator.drawn = false; }")
        frames = Frames(browser, page, control_url)
        page.click("button.lt-go")
        page.wait_for_function(f"() => {done} || document.querySelector('.lt-error')",
                               timeout=600_000)
        page.wait_for_timeout(300)               # the observer reports a task after it
        figures[name] = {"tokens": tokens, **frames.stop()}
        if page.query_selector(".lt-error"):
            raise SystemExit(page.text_content(".lt-status"))
        page.wait_for_function("() => window.attentionBook.translator.drawn", timeout=600_000)
    return figures


def code_of_revision(rev: str, served: Path) -> None:
    """The page's modules (``book/_ext/static/lib`` and ``translator/``) of git revision
    ``rev`` in place of this tree's under ``served``; SystemExit, in one line, for a
    revision that has no such modules."""
    import io
    import tarfile
    folders = [f"book/_ext/static/{name}" for name in ("lib", "translator")]
    entry = f"book/_ext/static/{page_build().ENTRY}"
    if subprocess.run(["git", "cat-file", "-e", f"{rev}:{entry}"], cwd=REPO,
                      capture_output=True).returncode:
        raise SystemExit(f"--code-from {rev}: that revision has no {entry} (the page's "
                         f"code before its ES modules), which this benchmark does not serve")
    archive = subprocess.run(["git", "archive", "--format=tar", rev, *folders], cwd=REPO,
                             capture_output=True, check=True).stdout
    for name in ("lib", "translator"):
        shutil.rmtree(served / name, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                target = served / Path(member.name).relative_to("book/_ext/static")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())


def stage(checkpoint: Path, root: Path, weights: str, code_from: str | None = None) -> dict:
    """The page, its code, the runtime and the model, as the book's build lays them out;
    ``code_from``: the page's code (book/_ext/static) of that git revision instead."""
    import plotly
    from transformer.tools.export import export_checkpoint
    build = page_build()
    static = root / "_static"
    sphinx_extension("page_code").copy_code(static, "lib", "translator")
    if not build.copy_runtime(REPO, static):
        raise SystemExit("no onnxruntime-web: needs npm (or ORT_WEB_DIR)")
    if code_from:
        code_of_revision(code_from, static / "book")
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static)
    export_checkpoint(checkpoint, static / "model", weights=weights)
    files = build.download_list(static)
    scripts = f'<script type="module" src="../_static/book/{build.ENTRY}"></script>'
    style = "book/translator/translator.css"
    (root / "book").mkdir()
    page = PAGE.format(scripts=scripts, style=style, attributes=build.widget_attributes(files))
    (root / "book" / "page.html").write_text(page)
    return files


def downloaded(sent: dict, before: dict) -> int:
    """Bytes of the model and the runtime sent since ``before``."""
    return sum(n - before.get(p, 0) for p, n in sent.items()
               if "/_static/model/" in p or "/_static/ort/" in p)


def in_browser(root: Path, sentence: str, repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Served, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def load(page) -> float:
        with Stopwatch() as watch:
            page.click("button.lt-load")
            page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=300_000)
        if page.query_selector(".lt-error"):
            raise SystemExit(page.text_content(".lt-status"))
        return watch.seconds

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/book/page.html")
            ready = load(page)
            first = downloaded(Served.sent, {})
            times = {"greedy": [], "beam": []}
            for i in range(repeats + 1):
                page.fill("input.lt-input", sentence)
                page.evaluate("() => { window.attentionBook.translator.result = null; }")
                page.click("button.lt-go")           # as a reader does; the page times it
                page.wait_for_function(
                    "() => window.attentionBook.translator.result && window.attentionBook.translator.maps "
                    "&& !document.querySelector('button.lt-go').disabled "
                    "|| document.querySelector('.lt-error')", timeout=300_000)
                r = page.evaluate("() => window.attentionBook.translator.result")
                if r is None:
                    raise SystemExit(page.text_content(".lt-status"))
                if i:                                    # the first run warms up
                    times["greedy"].append(r["greedy"]["ms"])
                    times["beam"].append(r["beam"]["ms"])
            # the page's code of an older revision may lack what this drives (its worker's
            # encoder, the map's `drawn`): then its frames are not measured
            if page.evaluate("() => !!(window.attentionBook && window.attentionBook.translator"
                             " && window.attentionBook.translator.ask"
                             " && 'drawn' in window.attentionBook.translator)"):
                frames = responsiveness(browser, page, f"http://127.0.0.1:{server.server_port}/",
                                        test_sentences())
            else:
                frames = None
            before = dict(Served.sent)
            page.reload(wait_until="load")
            ready_again = load(page)
            again = downloaded(Served.sent, before)
            version = browser.version
            browser.close()
    finally:
        server.shutdown()
    return {"downloaded_bytes": first, "ready_s": ready, "second_visit_downloaded_bytes": again,
            "second_visit_ready_s": ready_again, "greedy_ms": statistics.median(times["greedy"]),
            "beam_ms": statistics.median(times["beam"]), "beam_text": r["beam"]["text"],
            "frames": frames, "chromium": version}


def in_python(checkpoint: Path, sentence: str, repeats: int, threads: int) -> dict:
    import torch
    from transformer.translation import translate
    from transformer.inference import load_model
    with Stopwatch() as cli:
        run = subprocess.run([sys.executable, "-m", "transformer", "translate", str(checkpoint),
                              "--beam", "4", "--threads", str(threads)], input=sentence + "\n",
                             capture_output=True, text=True, check=True)
    cli_s = cli.seconds
    torch.set_num_threads(threads)
    model, tokenizer = load_model(checkpoint)
    times = {1: [], 4: []}
    for i in range(repeats + 1):
        for beam in (1, 4):
            with Stopwatch() as watch:
                out = translate(model, tokenizer, [sentence], beam_size=beam)
            if i:
                times[beam].append(watch.seconds * 1000)
    return {"cli_s": cli_s, "cli_text": run.stdout.strip(), "greedy_ms": statistics.median(times[1]),
            "beam_ms": statistics.median(times[4]), "beam_text": out[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="default: the book's cached model")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (Python side)")
    parser.add_argument("--weights", choices=["fp32", "fp16", "int8"],
                        help="the export's weight form (default: the book's, PAGE_WEIGHTS)")
    parser.add_argument("--code-from", metavar="REV",
                        help="serve the page's code of this git revision (default: this tree)")
    parser.add_argument("--label", default="after",
                        help="the run's entry in --record, beside its other labels")
    add_option(parser, "browser_speed")
    args = parser.parse_args()
    from transformer.measuring.provenance import provenance, write_record
    weights = args.weights or page_build().PAGE_WEIGHTS
    checkpoint = args.checkpoint
    if checkpoint is None:
        from transformer.training.cache import cached_run
        from transformer.training.recipes import recipe
        checkpoint = cached_run(recipe("book")) / "average.pt"     # the book's run
    sentence = fifteen_word_sentence()
    with tempfile.TemporaryDirectory() as tmp:
        files = stage(checkpoint, Path(tmp), weights, args.code_from)
        browser = in_browser(Path(tmp), sentence, args.repeats)
    python = in_python(checkpoint, sentence, args.repeats, args.threads)
    code = args.code_from or "this tree"
    entry = {"provenance": provenance(), "checkpoint": str(checkpoint), "weights": weights,
             "page_code": code, "sentence": sentence,
             "model_bytes": sum(f["bytes"] for f in files["model"].values()),
             "runtime_bytes": sum(f["bytes"] for f in files["ort"].values()),
             "browser": browser, "python": python}
    if args.record:
        path = Path(args.record)
        record = json.loads(path.read_text()) if path.is_file() else {"runs": {}}
        if set(record) != {"runs"}:
            raise SystemExit(f"{path}: not a browser_speed record (one key, 'runs'); name "
                             f"another --record")
        write_record(path, {"runs": {**record["runs"], args.label: entry}})
    print(json.dumps(entry, indent=1, ensure_ascii=False))
    print(f"\n{args.label} ({weights} weights, page code of {code}): the first visit downloaded "
          f"{browser['downloaded_bytes'] / 2**20:.2f} MiB and was ready after the click in "
          f"{browser['ready_s']:.1f} s; the second downloaded "
          f"{browser['second_visit_downloaded_bytes'] / 2**20:.2f} MiB")
    print(f"15-word sentence, in Chromium ({browser['chromium']}, WebAssembly, 1 thread): greedy "
          f"{browser['greedy_ms']:.0f} ms, beam 4 {browser['beam_ms']:.0f} ms")
    print(f"same sentence in Python (torch, {args.threads} thread(s), KV cache, fp32): greedy "
          f"{python['greedy_ms']:.0f} ms, beam 4 {python['beam_ms']:.0f} ms; the CLI command "
          f"`python -m transformer translate --beam 4` {python['cli_s']:.1f} s with start-up")
    print(f"same beam-4 output: {browser['beam_text'] == python['beam_text']}")
    for name, f in (browser["frames"] or {}).items():
        print(f"the page's frames {name.replace('_', ' ')} ({f['tokens']} tokens, {f['seconds']:.1f} s): "
              f"{f['frames']} frames, longest gap {f['longest_gap_ms']} ms "
              f"({f['gaps_over_100_ms']} over 100 ms, {f['gaps_over_100_ms_not_in_control']} of "
              f"them not in the control's), longest main-thread task {f['longest_task_ms']} ms; "
              f"the control page beside a busy Worker: longest gap {f['control_longest_gap_ms']} ms")


if __name__ == "__main__":
    main()
