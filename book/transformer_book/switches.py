"""The book's build switches: the quick build and what a run of the book uses.

:func:`quick` is true when the environment variable ``BOOK_QUICK=1`` asks for a fast run
(CI, ``make test``); it reads the variable when called, not at import. Chapters use
:func:`pick` to shrink sweeps and training. This module belongs to the book, not to the
``transformer`` library, which never imports it.
"""
from __future__ import annotations

import os


def quick() -> bool:
    """Whether this build asks for the fast form (``BOOK_QUICK=1``; read on each call)."""
    return os.environ.get("BOOK_QUICK", "").strip().lower() not in ("", "0", "false", "no")


def pick(full, quick_value):
    """``full`` normally, ``quick_value`` when ``BOOK_QUICK=1`` (``steps = pick(300, 60)``)."""
    return quick_value if quick() else full


def book_settings() -> dict:
    """What this run of the book uses (printed by chapters that train or sweep)."""
    import torch
    return {"quick": quick(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "plotly_renderer": _default_renderer()}


def _default_renderer() -> str | None:
    from .site import default_renderer
    return default_renderer()
