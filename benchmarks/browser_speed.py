"""How fast the book's model translates in the reader's browser, next to the Python CLI.

Exports a checkpoint as the book build does (``transformer.tools.export``), serves it with the
page's code (book/_ext/static) and onnxruntime-web on 127.0.0.1, and drives headless
Chromium (Debian's, through Playwright): the download size, the time from the button to a
ready model, and the time to translate one 15-word test sentence with greedy search and
with beam 4 (median of ``--repeats`` after one warm-up). Then the same sentence through
``python -m transformer translate`` (wall time of the command, start-up included) and
through ``transformer.decoding.translate`` in this process (torch, ``--threads``).

    python benchmarks/browser_speed.py --checkpoint runs/small/average.pt

Without ``--checkpoint`` it takes the book's model (chapter 7's cached run; trained first
if the cache lacks it, 7-12 minutes).
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "book"))
sys.path.insert(0, str(REPO / "book" / "_ext"))
from record import add_option, save  # noqa: E402  (benchmarks/record.py)

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="../_static/translator.css">
<script src="../_static/plotly.min.js"></script><script src="../_static/bpe.js"></script>
<script src="../_static/translator.js" defer></script></head><body>
<div id="live-translator" class="live-translator" data-model="../_static/model/"
 data-ort="../_static/ort/"></div></body></html>"""


def fifteen_word_sentence() -> str:
    from transformer.data import load_corpus
    test = load_corpus("multi30k-en-de", "test")
    return next(s for s in test.src if len(s.split()) == 15)


def stage(checkpoint: Path, root: Path) -> dict:
    import plotly
    from browser_model import copy_page_files
    from transformer.tools.export import export_checkpoint
    static = root / "_static"
    if not copy_page_files(REPO, static):
        raise SystemExit("no onnxruntime-web: needs npm (or ORT_WEB_DIR)")
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static)
    (root / "book").mkdir()
    (root / "book" / "page.html").write_text(PAGE)
    return export_checkpoint(checkpoint, static / "model")


def in_browser(root: Path, sentence: str, repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/book/page.html")
            start = time.perf_counter()
            page.click("button.lt-load")
            page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=300_000)
            ready = time.perf_counter() - start
            if page.query_selector(".lt-error"):
                raise SystemExit(page.text_content(".lt-status"))
            times = {"greedy": [], "beam": []}
            for i in range(repeats + 1):
                r = page.evaluate("""async (s) => { const m = window.liveTranslator.model;
                    const src = m.sourceIds(s); const out = {};
                    let t = performance.now(); out.greedy = await m.greedy(src);
                    out.greedy_ms = performance.now() - t;
                    t = performance.now(); out.beam = await m.beam(src);
                    out.beam_ms = performance.now() - t;
                    out.text = m.detokenize(out.beam); return out; }""", sentence)
                if i:                                    # the first run warms up
                    times["greedy"].append(r["greedy_ms"])
                    times["beam"].append(r["beam_ms"])
            version = browser.version
            browser.close()
    finally:
        server.shutdown()
    return {"ready_s": ready, "greedy_ms": statistics.median(times["greedy"]),
            "beam_ms": statistics.median(times["beam"]), "beam_text": r["text"],
            "chromium": version}


def in_python(checkpoint: Path, sentence: str, repeats: int, threads: int) -> dict:
    import torch
    from transformer.decoding import translate
    from transformer.inference import load_model
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "transformer", "translate", str(checkpoint),
                          "--beam", "4", "--threads", str(threads)], input=sentence + "\n",
                         capture_output=True, text=True, check=True)
    cli_s = time.perf_counter() - start
    torch.set_num_threads(threads)
    model, tokenizer = load_model(checkpoint)
    times = {1: [], 4: []}
    for i in range(repeats + 1):
        for beam in (1, 4):
            t = time.perf_counter()
            out = translate(model, tokenizer, [sentence], beam_size=beam)
            if i:
                times[beam].append((time.perf_counter() - t) * 1000)
    return {"cli_s": cli_s, "cli_text": run.stdout.strip(), "greedy_ms": statistics.median(times[1]),
            "beam_ms": statistics.median(times[4]), "beam_text": out[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="default: the book's cached model")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (Python side)")
    add_option(parser, "browser_speed")
    args = parser.parse_args()
    checkpoint = args.checkpoint
    if checkpoint is None:
        from transformer_book.runs import book_run_config, cached_run
        checkpoint = cached_run(book_run_config()) / "average.pt"
    sentence = fifteen_word_sentence()
    with tempfile.TemporaryDirectory() as tmp:
        manifest = stage(checkpoint, Path(tmp))
        files = manifest["files"]
        download = sum(files[f]["bytes"] for f in ("encoder.onnx", "decoder.onnx", "weights.bin"))
        from browser_model import ORT_FILES
        runtime = sum((Path(tmp) / "_static" / "ort" / f).stat().st_size for f in ORT_FILES)
        browser = in_browser(Path(tmp), sentence, args.repeats)
    python = in_python(checkpoint, sentence, args.repeats, args.threads)
    from transformer.tools.provenance import cpu_name
    model_name = cpu_name()
    print(json.dumps({"sentence": sentence, "checkpoint": str(checkpoint),
                      "model_download_bytes": download, "runtime_bytes": runtime,
                      "browser": browser, "python": python, "cpu": model_name}, indent=1,
                     ensure_ascii=False))
    print(f"\nmodel download {download / 1e6:.1f} MB ({download / 2**20:.1f} MiB); runtime "
          f"{runtime / 1e6:.1f} MB; ready after the click in {browser['ready_s']:.1f} s")
    print(f"15-word sentence, in Chromium ({browser['chromium']}, WebAssembly, 1 thread): greedy "
          f"{browser['greedy_ms']:.0f} ms, beam 4 {browser['beam_ms']:.0f} ms")
    print(f"same sentence in Python (torch, {args.threads} thread(s), KV cache): greedy "
          f"{python['greedy_ms']:.0f} ms, beam 4 {python['beam_ms']:.0f} ms; the CLI command "
          f"`python -m transformer translate --beam 4` {python['cli_s']:.1f} s with start-up")
    print(f"same beam-4 output: {browser['beam_text'] == python['beam_text']}")
    save(args.record, "the model of --checkpoint in headless Chromium: download, time to a "
         "ready model, and one 15-word sentence; then the same in Python",
         {"checkpoint": str(checkpoint), "sentence": sentence,
          "model_download_mb": round(download / 1e6, 1), "runtime_download_mb": round(runtime / 1e6, 1),
          "ready_s": round(browser["ready_s"], 1),
          "browser_ms": {"greedy": round(browser["greedy_ms"]), "beam4": round(browser["beam_ms"])},
          "python_ms": {"greedy": round(python["greedy_ms"]), "beam4": round(python["beam_ms"])},
          "cli_translate_s": round(python["cli_s"], 1),
          "same_beam4_output": browser["beam_text"] == python["beam_text"]},
         browser=f"Chromium {browser['chromium']}", threads=args.threads)


if __name__ == "__main__":
    main()
