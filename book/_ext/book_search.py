"""The search page: one search field, and result snippets taken from the chapters' prose.

Sphinx's search page (``searchtools.js``) writes each result's snippet from the text of the
page's ``[role="main"]`` element. In this theme that element also holds the page's header,
its "Contents" box, every code cell with its "Show code cell source" toggle, the paper's
quotations (chapters 2 and 10 quote the same sentence) and the TeX of the maths, so a
snippet could read "...Contents...", a line of code, another chapter's quotation or
``\(\mathrm{LayerNorm}(x)\)``. ``static/search/search_text.js`` (a module), on the search page only,
replaces Sphinx's ``Search.htmlToText`` once the page has loaded: it removes those parts
before Sphinx takes the text and writes inline maths as plain text (``√d_k``). ``static/search/search_page.css`` hides the header's and the
sidebar's search buttons there: the page has its own field.

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_search: book/_ext}``.
"""
from __future__ import annotations


def _page(app, pagename, templatename, context, doctree) -> None:
    if pagename == "search":
        app.add_js_file("book/search/search_text.js", type="module")
        app.add_css_file("book/search/search_page.css")


def setup(app):
    from page_code import serve
    app.connect("html-page-context", _page)
    return serve(app, "search")
