"""The page's code (``static/``): ES modules, staged under ``_static/book/`` by the
extension of the widget that uses them.

``static/lib`` holds the modules the widgets share (the worker client, DOM helpers, the
phone breakpoint and layout, the WebAssembly check, the cached download, the one
namespace); each widget has its folder (``translator``, ``training``, ``figures``,
``search``). An extension stages ``lib`` and its own folders (:func:`copy_code`); what a
page downloads when a reader asks for a widget's worker is the worker's module graph
(:func:`module_graph`), read from the modules' own ``import`` lines, so no file list is
written by hand.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
SERVED = "book"                          # the modules' folder under _static
SHARED = "lib"
# a static import or re-export: `import {a} from "./x.js";`, `export {b} from "../lib/y.js";`
IMPORT = re.compile(r'^\s*(?:import|export)\s[^;]*?\bfrom\s*"([^"]+)"|^\s*import\s*"([^"]+)"',
                    re.M | re.S)


def copy_code(stage: Path, *folders: str) -> None:
    """``static/lib`` and ``static/<folder>`` for each folder into ``stage/book/``."""
    for folder in (SHARED, *folders):
        shutil.copytree(STATIC / folder, stage / SERVED / folder, dirs_exist_ok=True)


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
