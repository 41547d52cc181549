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

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_theme: book/_ext}``.
"""
from __future__ import annotations

SCRIPT = "book/theme/sidebar_toggles.js"


def setup(app):
    from page_code import serve
    app.add_js_file(SCRIPT, type="module")
    return serve(app, "theme")
