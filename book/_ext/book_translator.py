"""Chapter 9's translator and explorer: the book's trained model in the reader's browser.

* onnxruntime-web (the WebAssembly build, run on one thread): fetched once with ``npm pack
  onnxruntime-web@<version>`` into ``.cache/onnxruntime-web/`` (git-ignored) unless
  ``ORT_WEB_DIR`` names its ``dist`` folder; its ES module, the loader module and the SIMD
  WebAssembly (:data:`ORT_FILES`, by the part the page asks for) are copied to
  ``_static/ort/``. Without npm and without a cache this warns (an error under ``-W``):
  the page would have no runtime.
* The page's code (``static/translator``, ES modules, beside the shared ``static/lib`` that
  ``page_code`` stages) goes to ``_static/book/``: ``widget.js`` (the widget, and ``own_model.js``, the reader's own
  exported model) loads on a page that holds ``<div id="live-translator">``; its worker
  (``worker.js``: the runtime, the model, the search) starts when the reader asks.
* The model: when the build has finished, the run chapters 7-9 use (``cached_run`` of
  ``book_run_config``, already trained by chapter 7) is exported with
  :func:`transformer.tools.export.export_model` into ``_static/model/``, its weight matrices
  stored as ``PAGE_WEIGHTS`` (``benchmarks/book/weight_forms.py`` measures what that
  changes). Its ``manifest.json`` (:mod:`transformer.tools.manifest`) says which files the
  page downloads; the widget's element then gets ``data-files`` (each file the translator
  downloads: the model's, the runtime's and the worker's code, with size and SHA-256, the
  keys of the browser's cache), ``data-bytes`` (their total, which the button announces)
  and ``data-format`` (the manifest format the page reads).

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_translator: book/_ext}``.
"""
from __future__ import annotations

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
# the runtime's files by the part the page asks for (static/translator/session.js)
ORT_FILES = {"script": "ort.wasm.min.mjs", "module": "ort-wasm-simd-threaded.mjs",
             "wasm": "ort-wasm-simd-threaded.wasm"}
WIDGET = 'id="live-translator"'
ENTRY, WORKER = "translator/widget.js", "translator/worker.js"
# how the page's model stores its weight matrices: fp16 kept the translations of a tiny-preset
# model (greedy ids, BLEU), int8 did not (benchmarks/book/weight_forms.py measures both)
PAGE_WEIGHTS = "fp16"


def _ort_dist(srcdir: Path) -> Path | None:
    """onnxruntime-web's ``dist`` folder: $ORT_WEB_DIR, the cache, or a fresh npm pack."""
    from npm_cache import npm_package
    files = ORT_FILES.values()
    env = os.environ.get("ORT_WEB_DIR")
    if env:
        return Path(env) if all((Path(env) / f).is_file() for f in files) else None
    wanted = {f"package/dist/{f}" for f in files} | {"package/package.json"}
    package = npm_package(srcdir, "onnxruntime-web", ORT_VERSION, keep=wanted.__contains__,
                          ready=lambda p: all((p / "dist" / f).is_file() for f in files))
    return None if package is None else package / "dist"


def copy_runtime(srcdir: Path, static: Path) -> bool:
    """onnxruntime-web into ``static/ort``; False when it cannot be found."""
    (static / "ort").mkdir(parents=True, exist_ok=True)
    dist = _ort_dist(srcdir)
    if dist is None:
        return False
    for name in ORT_FILES.values():
        shutil.copy2(dist / name, static / "ort" / name)
    (static / "ort" / "NOTICE.txt").write_text(
        f"onnxruntime-web {ORT_VERSION} (https://github.com/microsoft/onnxruntime), "
        f"MIT License, Copyright (c) Microsoft Corporation. Copied from the npm package.\n")
    return True


def _page(app, pagename, templatename, context, doctree) -> None:
    """The widget's module and style on the page that holds it."""
    body = context.get("body", "")
    if WIDGET not in body:
        return
    app.add_js_file(f"book/{ENTRY}", type="module")
    app.add_css_file("book/translator/translator.css")
    # the files are known once the model is exported, after the pages: _fill_size writes them
    context["body"] = body.replace(WIDGET, f'{WIDGET} data-bytes="" data-files="" data-format=""', 1)


def _export_model(app, exception) -> None:
    """Export the book's trained model into ``_static/model`` once the build is done."""
    if exception is not None or app.builder.format != "html":
        return
    sys.path.insert(0, str(Path(app.srcdir) / "book"))
    try:
        from transformer.tools.export import export_model
        from transformer.inference import load_model
        from transformer.training.cache import cached_run
        from transformer_book import viz
        from transformer_book.runs import book_run_config
        run = cached_run(book_run_config(viz.quick()))
        model, tokenizer = load_model(run / "average.pt")
        out = Path(app.outdir) / "_static" / "model"
        export_model(model, tokenizer, out, source=f"{run.name}/average.pt",
                     weights=PAGE_WEIGHTS)
    finally:
        sys.path.pop(0)
    files = download_list(Path(app.outdir) / "_static")
    sizes = {group: sum(f["bytes"] for f in listed.values()) for group, listed in files.items()}
    logger.info(f"book_translator: exported {run}/average.pt into {out} ({PAGE_WEIGHTS} weights, "
                f"{sizes['model'] / 2**20:.1f} MiB, the runtime's {sizes['runtime'] / 2**20:.1f} "
                f"MiB and {sizes['code'] / 1024:.0f} KiB of code for the page to download)")
    _fill_size(Path(app.outdir), files)


def download_list(static: Path) -> dict:
    """What the translator downloads, under ``static``: ``{"model": {name: {"bytes",
    "sha256", "part"}}, "runtime": {...}, "code": {...}}``: the manifest and the files it
    says the page downloads, the runtime's files, and the worker's modules (read from
    disk)."""
    from page_code import code_entries, file_entry, module_graph
    from transformer.tools.manifest import MANIFEST, page_files, read_manifest
    manifest = read_manifest(static / "model")
    model = {MANIFEST: file_entry(static / "model" / MANIFEST)}
    model.update({name: file_entry(static / "model" / name, part=entry["part"])
                  for name, entry in page_files(manifest).items()})
    return {"model": model,
            "runtime": {name: file_entry(static / "ort" / name, part=part)
                        for part, name in ORT_FILES.items() if (static / "ort" / name).is_file()},
            "code": code_entries(module_graph(WORKER))}


def widget_attributes(files: dict) -> str:
    """The widget's ``data-bytes``, ``data-files`` and ``data-format``."""
    from transformer.tools.manifest import FORMAT
    total = sum(f["bytes"] for listed in files.values() for f in listed.values())
    return (f'data-bytes="{total}" '
            f'data-files="{html.escape(json.dumps(files, separators=(",", ":")), quote=True)}" '
            f'data-format="{FORMAT}"')


def _fill_size(outdir: Path, files: dict) -> None:
    """Write the download list into the pages that hold the widget (they were written
    before the model existed)."""
    attributes = widget_attributes(files)
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if f'{WIDGET} data-bytes="' in text:
            page.write_text(re.sub(rf'{WIDGET} data-bytes="\d*" data-files="[^"]*" data-format="\d*"',
                                   lambda _: f"{WIDGET} {attributes}", text), encoding="utf-8")


def setup(app):
    from page_code import serve
    app.connect("html-page-context", _page, priority=900)
    app.connect("build-finished", _export_model)
    return serve(app, "translator", copy_runtime, "book_translator: no onnxruntime-web found "
                 "(install npm or set ORT_WEB_DIR); the in-page translator will not run")
