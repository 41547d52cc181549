"""A Transformer trained in the reader's browser: chapter 4's training panel.

* TensorFlow.js (the union bundle ``@tensorflow/tfjs``, whose ``tf.es2017.min.js`` has the
  gradients and the optimizers, and ``@tensorflow/tfjs-backend-wasm``, one thread: a
  static site cannot send the cross-origin isolation headers that threads need) is
  fetched once with ``npm pack`` into ``.cache/`` (git-ignored) and copied to
  ``_static/tfjs/``; never from a CDN.
* The panel's code goes to ``_static``: ``static/page_training.js`` (the panel),
  ``static/page_training.css``, ``static/train_worker.js`` (the Web Worker that trains)
  ``static/train_model.js`` (the package's plain model in TensorFlow.js) and
  ``static/cached_fetch.js`` (the translator's download path, which the worker imports).
* Chapter 9's translator (``<div id="live-translator">``, book/_ext/browser_model.py) also
  gets ``static/explorer_files.js``: the reader's own exported model, from a file picker
  or a dropped folder, read in the page.
* A page that holds ``<div id="train-panel">`` gets one small inline script: it shows a
  button with the size of the download and loads the panel's code and the library only
  when the reader presses it. The element gets ``data-static`` (the path to ``_static``),
  ``data-files`` (each library file's size and SHA-256: the keys of the browser's cache)
  and ``data-bytes`` (what the panel downloads, its code included).

Enabled from ``_config.yml``: ``sphinx: local_extensions: {page_training: book/_ext}``.
"""
from __future__ import annotations

import hashlib
import html
import json
import shutil
from pathlib import Path

TFJS_VERSION = "4.22.0"
# package -> its dist files the page uses (the two WebAssembly modules: SIMD or not)
TFJS_FILES = {"@tensorflow/tfjs": ["tf.es2017.min.js"],
              "@tensorflow/tfjs-backend-wasm": ["tf-backend-wasm.es2017.min.js",
                                                "tfjs-backend-wasm-simd.wasm",
                                                "tfjs-backend-wasm.wasm"]}
PANEL_CODE = ("page_training.js", "page_training.css", "train_worker.js", "train_model.js",
              "cached_fetch.js")
# chapter 9's translator with the reader's own exported model (on the translator's page)
EXPLORER_CODE = ("explorer_files.js",)
TRANSLATOR = 'id="live-translator"'
STAGE = "_training_static"
HERE = Path(__file__).resolve().parent
PANEL = 'id="train-panel"'
# The one script the page itself carries: a button; the rest loads when it is pressed.
LOADER = """(function () {
  function mount(el) {
    var mib = (Number(el.dataset.bytes) / 1048576).toFixed(1);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "tp-open";
    button.textContent = "Open the training panel (downloads " + mib + " MiB: TensorFlow.js and the panel)";
    button.addEventListener("click", function () {
      button.disabled = true;
      button.textContent = "Loading the panel…";
      var css = document.createElement("link");
      css.rel = "stylesheet";
      css.href = el.dataset.static + "page_training.css";
      document.head.appendChild(css);
      var js = document.createElement("script");
      js.src = el.dataset.static + "page_training.js";
      js.onload = function () { window.PageTrainingPanel.mount(el, button); };
      js.onerror = function () { button.textContent = "The panel could not be loaded"; };
      document.head.appendChild(js);
    });
    el.appendChild(button);
  }
  function start() { document.querySelectorAll("#train-panel").forEach(mount); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();"""


def _tfjs_dists(srcdir: Path) -> dict[str, Path] | None:
    """Each TensorFlow.js package's ``dist`` folder in the npm cache (fetched if absent)."""
    from npm_cache import npm_package
    dists = {}
    for name, files in TFJS_FILES.items():
        wanted = {f"package/dist/{f}" for f in files} | {"package/package.json",
                                                          "package/LICENSE"}
        package = npm_package(srcdir, name, TFJS_VERSION, keep=wanted.__contains__,
                              ready=lambda p, fs=files: all((p / "dist" / f).is_file()
                                                            for f in fs))
        if package is None:
            return None
        dists[name] = package / "dist"
    return dists


def copy_panel_files(srcdir: Path, static: Path) -> bool:
    """The panel's code into ``static`` and TensorFlow.js into ``static/tfjs``; False when
    TensorFlow.js cannot be found (the panel's code is copied all the same)."""
    (static / "tfjs").mkdir(parents=True, exist_ok=True)
    for name in PANEL_CODE + EXPLORER_CODE:
        shutil.copy2(HERE / "static" / name, static / name)
    dists = _tfjs_dists(srcdir)
    if dists is None:
        return False
    for package, files in TFJS_FILES.items():
        for name in files:
            shutil.copy2(dists[package] / name, static / "tfjs" / name)
    (static / "tfjs" / "NOTICE.txt").write_text(
        f"TensorFlow.js {TFJS_VERSION} (@tensorflow/tfjs, @tensorflow/tfjs-backend-wasm; "
        f"https://github.com/tensorflow/tfjs), Apache License 2.0, Copyright Google LLC. "
        f"Copied from the npm packages.\n")
    return True


def download_list(static: Path) -> dict:
    """What the panel downloads: ``{"tfjs": {name: {"bytes", "sha256"}}, "panel": {...}}``.
    Of the two WebAssembly modules a browser fetches one (SIMD where it has it)."""
    def entry(path: Path) -> dict:
        data = path.read_bytes()
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return {"tfjs": {name: entry(static / "tfjs" / name)
                     for files in TFJS_FILES.values() for name in files
                     if (static / "tfjs" / name).is_file()},
            "panel": {name: entry(static / name) for name in PANEL_CODE}}


def download_bytes(files: dict) -> int:
    """The bytes a browser with WebAssembly SIMD downloads (not the plain module)."""
    return sum(f["bytes"] for group in files.values() for name, f in group.items()
               if name != "tfjs-backend-wasm.wasm")


def _stage(app, config) -> None:
    from npm_cache import stage_static
    stage_static(app, config, STAGE, copy_panel_files, "page_training: no TensorFlow.js "
                 "found (install npm); the training panel will not run")


def _page(app, pagename, templatename, context, doctree) -> None:
    """The loader on the page that holds the panel, and what the panel will download;
    explorer_files.js on the translator's page (after translator.js, which it extends)."""
    body = context.get("body", "")
    if TRANSLATOR in body:
        app.add_js_file("explorer_files.js", priority=700, defer="defer")
    if PANEL not in body:
        return
    files = download_list(Path(app.outdir).parent / STAGE)
    app.add_js_file(None, body=LOADER)
    static = context["pathto"]("_static/", 1)
    attributes = (f'data-static="{html.escape(static)}" data-bytes="{download_bytes(files)}" '
                  f'data-files="{html.escape(json.dumps(files, separators=(",", ":")))}"')
    context["body"] = body.replace(PANEL, f"{PANEL} {attributes}", 1)


def setup(app):
    app.connect("config-inited", _stage, priority=900)
    app.connect("html-page-context", _page, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
