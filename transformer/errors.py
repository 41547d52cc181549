"""The errors a user can fix, as one type.

A bad value, a damaged or foreign file, a missing optional package: the user can act on
each, so the command line prints it as one line naming the file, field or value (exit
status 2). Any other exception out of the package is a bug in it, and the command line
shows its traceback and asks for a report (:data:`ISSUES`).

``InputError`` is a ``ValueError`` and ``MissingPackage`` an ``ImportError``, so code that
catches the built-in types keeps working.
"""
from __future__ import annotations

# Where bugs are reported: the repository of _config.yml (tests/test_cli_errors.py checks they agree).
ISSUES = "https://github.com/attention-book/transformer/issues"


class UserError(Exception):
    """Something the user can fix; its message names the file, field or value."""


class InputError(UserError, ValueError):
    """A value or a file's content that the package cannot use."""


class MissingPackage(UserError, ImportError):
    """An optional package that a feature needs (the message says how to install it)."""
