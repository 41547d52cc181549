"""The package's import graph, read from its source without importing it: which of the
``transformer`` modules a module imports (:func:`module_imports`, imports inside
functions and relative ones included) and where a module's file is (:func:`module_file`).

The run cache keys a run by the code its trainer imports
(:func:`transformer.training.cache.training_modules`); ``tests/test_imports.py`` holds the
package's layers and its lack of circles with it.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]          # transformer/


def module_file(name: str) -> Path | None:
    """The file of module ``transformer.x.y`` under :data:`PACKAGE`, or None."""
    parts = name.split(".")[1:]
    for path in (PACKAGE.joinpath(*parts).with_suffix(".py"),
                 PACKAGE.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def module_imports(name: str, path: Path) -> set[str]:
    """The ``transformer`` modules that module ``name`` imports, at any depth of its code
    (imports inside functions too), with each package's ``__init__`` on the way."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] == "transformer":
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in found if module_file(m) is not None}
