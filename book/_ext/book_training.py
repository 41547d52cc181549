"""A Transformer trained in the reader's browser: chapter 4's training panel.

* TensorFlow.js (the union bundle ``@tensorflow/tfjs``, whose ``tf.es2017.min.js`` has the
  gradients and the optimizers, and ``@tensorflow/tfjs-backend-wasm``, one thread: a
  static site cannot send the cross-origin isolation headers that threads need) is
  fetched once with ``npm pack`` into ``.cache/`` (git-ignored) and copied to
  ``_static/tfjs/``; never from a CDN.
* The panel's code (``static/training``, ES modules, beside the shared ``static/lib`` that
  ``page_code`` stages) goes to ``_static/book/``. A page that holds ``<div id="train-panel">`` loads ``loader.js``
  alone: a button with the size of the download, which loads ``panel.js`` (the panel),
  its stylesheet and its worker (``worker.js``, with ``model.js``, the package's plain
  model in TensorFlow.js) and the library only when the reader presses it. The element
  gets ``data-static`` (the path to ``_static``), ``data-files`` (each library file's size,
  SHA-256 and part: the keys of the browser's cache; and the panel's code) and
  ``data-bytes`` (what pressing the button downloads).

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_training: book/_ext}``.
"""
from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

TFJS_VERSION = "4.22.0"
# package -> its dist files the page uses, by the part the worker asks for (the two
# WebAssembly modules: SIMD or not)
TFJS_FILES = {"@tensorflow/tfjs": {"library": "tf.es2017.min.js"},
              "@tensorflow/tfjs-backend-wasm": {"backend": "tf-backend-wasm.es2017.min.js",
                                                "wasm-simd": "tfjs-backend-wasm-simd.wasm",
                                                "wasm": "tfjs-backend-wasm.wasm"}}
PANEL = 'id="train-panel"'
LOADER, PANEL_ENTRY, WORKER = "training/loader.js", "training/panel.js", "training/worker.js"
STYLE = "training/panel.css"


def _tfjs_dists(srcdir: Path) -> dict[str, Path] | None:
    """Each TensorFlow.js package's ``dist`` folder in the npm cache (fetched if absent)."""
    from npm_cache import npm_package
    dists = {}
    for name, files in TFJS_FILES.items():
        wanted = {f"package/dist/{f}" for f in files.values()} | {"package/package.json",
                                                                   "package/LICENSE"}
        package = npm_package(srcdir, name, TFJS_VERSION, keep=wanted.__contains__,
                              ready=lambda p, fs=files: all((p / "dist" / f).is_file()
                                                            for f in fs.values()))
        if package is None:
            return None
        dists[name] = package / "dist"
    return dists


def copy_tfjs(srcdir: Path, static: Path) -> bool:
    """TensorFlow.js into ``static/tfjs``; False when it cannot be found."""
    (static / "tfjs").mkdir(parents=True, exist_ok=True)
    dists = _tfjs_dists(srcdir)
    if dists is None:
        return False
    for package, files in TFJS_FILES.items():
        for name in files.values():
            shutil.copy2(dists[package] / name, static / "tfjs" / name)
    (static / "tfjs" / "NOTICE.txt").write_text(
        f"TensorFlow.js {TFJS_VERSION} (@tensorflow/tfjs, @tensorflow/tfjs-backend-wasm; "
        f"https://github.com/tensorflow/tfjs), Apache License 2.0, Copyright Google LLC. "
        f"Copied from the npm packages.\n")
    return True


def download_list(static: Path, figures: bool = False) -> dict:
    """What the panel downloads: ``{"tfjs": {name: {"bytes", "sha256", "part"}}, "code":
    {...}}``, the code being what pressing the button fetches: the panel's modules the
    page has not loaded (its loader's, and with ``figures`` the figures' modules, which a
    page with figures loads: ``book_figures.has_figures``), its stylesheet, and its
    worker's modules (the worker loads its own). Of the two WebAssembly modules a browser
    fetches one (SIMD where it has it)."""
    from book_figures import FIGURES_ENTRY
    from page_code import code_entries, module_graph
    loaded = set(module_graph(LOADER)) | set(module_graph(FIGURES_ENTRY) if figures else ())
    page = [m for m in module_graph(PANEL_ENTRY) if m not in loaded] + [STYLE]
    return {"tfjs": {name: _entry(static / "tfjs" / name, part)
                     for files in TFJS_FILES.values() for part, name in files.items()
                     if (static / "tfjs" / name).is_file()},
            "code": code_entries(page),
            # the worker fetches its modules itself, those the page has among them too
            "worker": code_entries(module_graph(WORKER))}


def _entry(path: Path, part: str) -> dict:
    from page_code import file_entry
    return file_entry(path, part=part)


def download_bytes(files: dict) -> int:
    """The bytes a browser with WebAssembly SIMD downloads (not the plain module)."""
    return sum(f["bytes"] for group in files.values() for f in group.values()
               if f.get("part") != "wasm")


def _page(app, pagename, templatename, context, doctree) -> None:
    """The loader on the page that holds the panel, and what the panel will download."""
    body = context.get("body", "")
    if PANEL not in body:
        return
    from book_figures import has_figures
    from page_code import staged
    files = download_list(staged(app, "training"), figures=has_figures(body))
    app.add_js_file(f"book/{LOADER}", type="module")
    static = context["pathto"]("_static/", 1)
    attributes = (f'data-static="{html.escape(static)}" data-bytes="{download_bytes(files)}" '
                  f'data-files="{html.escape(json.dumps(files, separators=(",", ":")))}"')
    context["body"] = body.replace(PANEL, f"{PANEL} {attributes}", 1)


def setup(app):
    from page_code import serve
    app.connect("html-page-context", _page, priority=900)
    return serve(app, "training", copy_tfjs, "book_training: no TensorFlow.js found "
                 "(install npm); the training panel will not run")
