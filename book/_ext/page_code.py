"""The page's code (``static/``): ES modules, staged under ``_static/book/``.

``static/lib`` holds the modules the widgets share (the worker client, DOM helpers, the
phone breakpoint and layout, the WebAssembly check, the cached download, the one
namespace); each widget has its folder (``translator``, ``training``, ``figures``,
``search``, ``moved``, ``theme``). This module is a Sphinx extension too: it stages
``lib`` once, and each widget's extension, named after its folder (``book_translator``
stages ``translator``), stages that folder with one call in its ``setup``, :func:`serve`
(which loads this extension first). What a page downloads when
a reader asks for a widget's worker is the worker's module graph (:func:`module_graph`),
read from the modules' own ``import`` lines, so no file list is written by hand.
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
SERVED = "book"                          # the modules' folder under _static
SHARED = "lib"
# what each of the book's extensions tells Sphinx of itself
METADATA = {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
# a static import or re-export: `import {a} from "./x.js";`, `export {b} from "../lib/y.js";`
IMPORT = re.compile(r'^\s*(?:import|export)\s[^;]*?\bfrom\s*"([^"]+)"|^\s*import\s*"([^"]+)"',
                    re.M | re.S)


def copy_code(root: Path, *folders: str) -> None:
    """``static/<folder>`` for each folder into the ``book`` folder of ``root`` (a future
    ``_static``): ``lib`` only if named."""
    for folder in folders:
        shutil.copytree(STATIC / folder, root / SERVED / folder, dirs_exist_ok=True)


def staged(app, folder: str) -> Path:
    """Where :func:`stage` lays out ``folder``'s files, beside the build's output."""
    return Path(app.outdir).parent / f"_static_{folder}"


def stage(app, config, folder: str, vendor=None, missing: str = "") -> bool:
    """``static/<folder>`` made anew under :func:`staged` (as ``book/<folder>``), with what
    ``vendor(srcdir, stage)`` adds there (a library from npm), and added to
    ``html_static_path``. ``vendor`` returns False when what it copies cannot be found:
    ``missing`` is then logged as a warning; returns what ``vendor`` returned."""
    root = staged(app, folder)
    shutil.rmtree(root, ignore_errors=True)
    copy_code(root, folder)
    found = vendor is None or vendor(Path(app.srcdir), root)
    if not found:
        logger.warning(missing)
    config.html_static_path = list(config.html_static_path) + [str(root)]
    return found


def serve(app, folder: str, vendor=None, missing: str = "") -> dict:
    """An extension's ``setup`` part that serves ``static/<folder>``: this extension (the
    shared ``lib``) first, then :func:`stage` of ``folder`` once the configuration is read;
    returns the extension's metadata."""
    app.setup_extension(__name__)
    app.connect("config-inited", functools.partial(stage, folder=folder, vendor=vendor,
                                                   missing=missing), priority=900)
    return METADATA


def module_graph(entry: str) -> list[str]:
    """``entry`` (a path under ``static/``, ``"translator/worker.js"``) and every module it
    imports statically, at any depth: the files a browser fetches to run it, as paths
    under ``static/`` (dynamic ``import()`` is left out: it loads later, if at all)."""
    seen, todo = [], [entry]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        text = (STATIC / name).read_text(encoding="utf-8")
        for match in IMPORT.finditer(text):
            target = match.group(1) or match.group(2)
            if target.startswith("."):
                todo.append((Path(name).parent / target).as_posix())
    return [_normal(p) for p in seen]


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def file_entry(path: Path, **extra) -> dict:
    """A download list's entry of ``path``: its size and SHA-256 (and ``extra``)."""
    data = Path(path).read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), **extra}


def code_entries(names) -> dict:
    """``{"book/<name>": entry}`` of modules under ``static/`` (as served under _static)."""
    return {f"{SERVED}/{name}": file_entry(STATIC / name) for name in names}


def setup(app):
    app.connect("config-inited", functools.partial(stage, folder=SHARED), priority=900)
    return METADATA
