"""Every page's sidebar toggle buttons work: ☰ opens the navigation and "on this page" the
page's sections on a phone, and ☰ folds the left sidebar away on a wide screen.

The themes jupyter-book 1.0.4 resolves today, pydata-sphinx-theme 0.17.1 with
sphinx-book-theme 1.3.0, bind their handlers to the first toggle button of each kind
only, a hidden one (pydata-sphinx-theme#2451, sphinx-book-theme#988); the pair that
predates the bug (sphinx-book-theme 1.2.0, pydata-sphinx-theme 0.16.1) lacks the dialogs
the site's tests and layout rely on, and sphinx-book-theme 1.4.0 needs Sphinx 8, where
jupyter-book 1.0.4 takes Sphinx 7. So each page carries a small module,
``static/theme/sidebar_toggles.js``, that hands a click on any other toggle to the bound
one (``static/theme/toggles.js``; tests/js/toggles.test.js, tests/test_site_phone.py).

Enabled from ``_config.yml``: ``sphinx: local_extensions: {sidebar_toggles: book/_ext}``.
"""
from __future__ import annotations

from pathlib import Path

STAGE = "_theme_static"
SCRIPT = "book/theme/sidebar_toggles.js"


def _copy(srcdir: Path, static: Path) -> bool:
    from page_code import copy_code
    copy_code(static, "theme")
    return True


def _stage(app, config) -> None:
    from npm_cache import stage_static
    stage_static(app, config, STAGE, _copy, "")


def setup(app):
    app.connect("config-inited", _stage, priority=900)
    app.add_js_file(SCRIPT, type="module")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
