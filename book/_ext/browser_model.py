"""The book's trained model in the reader's browser: vendor the runtime, export the model.

* onnxruntime-web (the WebAssembly build, run on one thread): fetched once with ``npm pack
  onnxruntime-web@<version>`` into ``.cache/onnxruntime-web/`` (git-ignored) unless
  ``ORT_WEB_DIR`` names its ``dist`` folder; ``ort.wasm.min.js`` and the SIMD WebAssembly
  module it loads are copied to ``_static/ort/``. Without npm and without a cache this
  warns (an error under ``-W``): the page would have no runtime.
* The page's code goes to ``_static``: ``static/browser_model.js`` (runtime, model and
  search loops; the page loads it, and starts it again as the Web Worker that translates),
  ``static/bpe.js`` (the BPE encoder, which the worker imports), ``static/cached_fetch.js``
  (every download, cached and checked; the training panel's worker uses it too) and
  ``static/translator.js`` (the widget). They load only on a page that holds the widget's
  element ``<div id="live-translator">``, which also gets the list of the files the
  translator downloads (``data-files``: size and SHA-256 of each, the keys of the
  browser's cache) and their total (``data-bytes``, the true total the button
  announces). The runtime and the model load only when the reader asks.
* The model: when the build has finished, the run chapters 7-9 use (``cached_run`` of
  ``book_run_config``, already trained by chapter 7) is exported with
  :func:`transformer.tools.export.export_model` into ``_static/model/``, its weight matrices
  stored as ``PAGE_WEIGHTS`` (``benchmarks/book/weight_forms.py`` measures what that changes).

Enabled from ``_config.yml``: ``sphinx: local_extensions: {browser_model: book/_ext}``.
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import sys
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

ORT_VERSION = "1.30.0"
ORT_FILES = ["ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]
STAGE = "_browser_static"
HERE = Path(__file__).resolve().parent
WIDGET = 'id="live-translator"'
MODEL_FILES = ("manifest.json", "encoder.onnx", "decoder.onnx", "weights.bin")  # the page's
# how the page's model stores its weight matrices: fp16 kept the translations of a tiny-preset
# model (greedy ids, BLEU), int8 did not (benchmarks/book/weight_forms.py measures both)
PAGE_WEIGHTS = "fp16"
PAGE_CODE = ("cached_fetch.js", "bpe.js", "browser_model.js", "translator.js", "translator.css")


def _ort_dist(srcdir: Path) -> Path | None:
    """onnxruntime-web's ``dist`` folder: $ORT_WEB_DIR, the cache, or a fresh npm pack."""
    from npm_cache import npm_package
    env = os.environ.get("ORT_WEB_DIR")
    if env:
        return Path(env) if all((Path(env) / f).is_file() for f in ORT_FILES) else None
    wanted = {f"package/dist/{f}" for f in ORT_FILES} | {"package/package.json"}
    package = npm_package(srcdir, "onnxruntime-web", ORT_VERSION, keep=wanted.__contains__,
                          ready=lambda p: all((p / "dist" / f).is_file() for f in ORT_FILES))
    return None if package is None else package / "dist"


def copy_page_files(srcdir: Path, static: Path) -> bool:
    """The page's code into ``static`` and onnxruntime-web into ``static/ort``; False
    when no onnxruntime-web can be found (the page's code is copied all the same)."""
    (static / "ort").mkdir(parents=True, exist_ok=True)
    for name in PAGE_CODE:
        shutil.copy2(HERE / "static" / name, static / name)
    dist = _ort_dist(srcdir)
    if dist is None:
        return False
    for name in ORT_FILES:
        shutil.copy2(dist / name, static / "ort" / name)
    (static / "ort" / "NOTICE.txt").write_text(
        f"onnxruntime-web {ORT_VERSION} (https://github.com/microsoft/onnxruntime), "
        f"MIT License, Copyright (c) Microsoft Corporation. Copied from the npm package.\n")
    return True


def _stage(app, config) -> None:
    from npm_cache import stage_static
    stage_static(app, config, STAGE, copy_page_files, "browser_model: no onnxruntime-web "
                 "found (install npm or set ORT_WEB_DIR); the in-page translator will not run")


def _page(app, pagename, templatename, context, doctree) -> None:
    """The widget's scripts and style on the page that holds it, and its download size."""
    body = context.get("body", "")
    if WIDGET not in body:
        return
    app.add_js_file("cached_fetch.js", priority=599)      # the download path it uses
    app.add_js_file("browser_model.js", priority=600)
    app.add_js_file("translator.js", priority=600, defer="defer")
    app.add_css_file("translator.css")
    # the files are known once the model is exported, after the pages: _fill_size writes them
    context["body"] = body.replace(WIDGET, f'{WIDGET} data-bytes="" data-files=""', 1)


def _export_model(app, exception) -> None:
    """Export the book's trained model into ``_static/model`` once the build is done."""
    if exception is not None or app.builder.format != "html":
        return
    sys.path.insert(0, str(Path(app.srcdir) / "book"))
    try:
        from transformer.tools.export import export_model
        from transformer.inference import load_model
        from transformer_book import viz
        from transformer_book.runs import book_run_config, cached_run
        run = cached_run(book_run_config(viz.quick()))
        model, tokenizer = load_model(run / "average.pt")
        out = Path(app.outdir) / "_static" / "model"
        export_model(model, tokenizer, out, source=f"{run.name}/average.pt",
                     weights=PAGE_WEIGHTS)
    finally:
        sys.path.pop(0)
    files = download_list(Path(app.outdir) / "_static")
    sizes = {group: sum(f["bytes"] for f in listed.values()) for group, listed in files.items()}
    logger.info(f"browser_model: exported {run}/average.pt into {out} ({PAGE_WEIGHTS} weights, "
                f"{sizes['model'] / 2**20:.1f} MiB, and the runtime's "
                f"{sizes['ort'] / 2**20:.1f} MiB for the page to download)")
    _fill_size(Path(app.outdir), files)


def download_list(static: Path) -> dict:
    """What the translator downloads, under ``static``: ``{"model": {name: {"bytes",
    "sha256"}}, "ort": {...}}`` (the model's files and the runtime's, read from disk)."""
    def entry(path: Path) -> dict:
        data = path.read_bytes()
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return {"model": {name: entry(static / "model" / name) for name in MODEL_FILES},
            "ort": {name: entry(static / "ort" / name) for name in ORT_FILES
                    if (static / "ort" / name).is_file()}}


def widget_attributes(files: dict) -> str:
    """The widget's ``data-bytes`` and ``data-files`` for :func:`download_list`'s ``files``."""
    total = sum(f["bytes"] for listed in files.values() for f in listed.values())
    return (f'data-bytes="{total}" '
            f'data-files="{html.escape(json.dumps(files, separators=(",", ":")), quote=True)}"')


def _fill_size(outdir: Path, files: dict) -> None:
    """Write the download list into the pages that hold the widget (they were written
    before the model existed)."""
    attributes = widget_attributes(files)
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if f'{WIDGET} data-bytes="' in text:
            page.write_text(re.sub(rf'{WIDGET} data-bytes="\d*" data-files="[^"]*"',
                                   lambda _: f"{WIDGET} {attributes}", text), encoding="utf-8")


def setup(app):
    app.connect("config-inited", _stage, priority=900)
    app.connect("html-page-context", _page, priority=900)
    app.connect("build-finished", _export_model)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
