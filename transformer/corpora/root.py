"""The data root: the one folder every reader and writer of corpora uses, and how a
message names it."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The data root, the one rule every reader and writer of corpora follows: ``path``
    (``--data-root``), else ``$TRANSFORMER_DATA`` (blank counts as unset), else
    ``~/.cache/transformer/data``."""
    if path is not None:
        if not str(path).strip():
            raise InputError(f"--data-root {str(path)!r} is blank: name a folder, or leave "
                             f"it out for the default")
        return Path(path).expanduser()
    if os.environ.get("TRANSFORMER_DATA", "").strip():     # blank: as if unset
        return Path(os.environ["TRANSFORMER_DATA"]).expanduser()
    return Path.home() / ".cache" / "transformer" / "data"


def shown_root(root: Path) -> str:
    """The data root as a message names it: ``~/...`` under the home folder, else "the data
    root" (one the user named), so that no message, and no page of the book built with it,
    carries a path of the machine it ran on."""
    try:
        return "~/" + Path(root).relative_to(Path.home()).as_posix()
    except ValueError:
        return "the data root ($TRANSFORMER_DATA or --data-root)"
