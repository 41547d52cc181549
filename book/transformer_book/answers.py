"""Numbers for the exercises' answers: computed on the page, shown in the built book.

A chapter's hidden cell (tag ``remove-cell``) computes an answer and calls
``glue("ch3_ex2", f"{value:.2f}")``; the answer's text shows it with
``{glue:text}`\\`ch3_ex2\\``, so no answer types a number that a run measured. In the
book build this is myst-nb's ``glue``; where myst-nb is not installed (Colab, a plain
Jupyter) the value is printed instead, so the cell still runs.
"""
from __future__ import annotations


def glue(name: str, value: str) -> None:
    """Keep ``value`` (text) under ``name`` for the page's ``{glue:text}`` roles."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:                 # not the book build: show it instead
        print(f"{name}: {value}")
        return
    myst_glue(name, value, display=False)
