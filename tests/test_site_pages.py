"""Every page of the built book in Chromium (the site, its server, the browser and
``open_page`` are fixtures of tests/conftest.py; tests/site_checks.py says how the site is
built): no console error, nothing loaded from outside 127.0.0.1 (plotly.js and MathJax are
served from ``_static``), every plotly figure drawn, with a title, titled axes and titled
colour bars, plotly.js deferred, the maths typeset; the redirect page names the book's icon.
Screenshots go to ``_build/screenshots/<test name>/`` and their paths are printed."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from site_checks import PAGES, figures, screenshot


@pytest.mark.parametrize("path", PAGES)
def test_page(path, open_page, request, capsys):
    opened = open_page(path)
    page = opened.page
    screenshot(page, request, capsys, Path(path).stem)

    assert not opened.outside, f"{path} requested outside 127.0.0.1: {opened.outside}"
    assert not opened.errors, f"{path} console errors: {opened.errors}"

    figs = figures(page)
    if Path(path).name[:2].isdigit():                      # a chapter notebook
        assert figs, f"{path}: no plotly figure on the page"
        # plotly.js (4.8 MB) must not block the text from painting: loaded with defer
        deferred = page.evaluate("() => Array.from(document.scripts).filter((s) => "
                                 "s.src.includes('plotly')).map((s) => s.defer)")
        assert deferred and all(deferred), f"{path}: plotly.js not deferred: {deferred}"
    for i, fig in enumerate(figs):
        where = f"{path} figure {i + 1} ({fig['title'] or 'untitled'})"
        assert fig["drawn"] and fig["width"] > 100 and fig["height"] > 100, f"{where} not drawn"
        assert fig["title"].strip(), f"{where} has no title"
        untitled = [axis for axis, title in fig["axes"].items() if not title.strip()]
        assert not untitled, f"{where}: axes without a title: {untitled}"
        assert all(t.strip() for t in fig["colorbars"]), f"{where}: colour bar without a title"

    has_math = page.evaluate("() => document.querySelectorAll('.math').length")
    if has_math:
        typeset = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        assert typeset, f"{path}: {has_math} maths elements but none typeset by MathJax"


def test_the_redirect_page_has_the_books_icon(site_dir):
    """The root index.html (a redirect) names the icon, so browsers ask for no /favicon.ico."""
    text = (site_dir / "index.html").read_text()
    icon = re.search(r'<link rel="icon" href="([^"]+)"', text)
    assert icon and (site_dir / icon.group(1)).is_file(), text


class _Links(HTMLParser):
    """The links inside a page's article (the theme's own links, such as its issue link
    whose body ends with a full stop, are not the book's): (href, text) each."""

    def __init__(self):
        super().__init__()
        self.depth, self.open, self.links = 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "article" or self.depth:
            self.depth += tag == "article"
        if tag == "a" and self.depth:
            self.open.append([dict(attrs).get("href") or "", ""])

    def handle_data(self, data):
        for link in self.open:
            link[1] += data

    def handle_endtag(self, tag):
        if tag == "a" and self.open:
            self.links.append(tuple(self.open.pop()))
        if tag == "article" and self.depth:
            self.depth -= 1


def test_no_link_takes_the_sentences_full_stop(site_dir):
    """On every built page, no link's text or address ends with ".": a bare URL at the end
    of a sentence (chapter 12's tensor2tensor) swallows the sentence's full stop, and the
    address it opens does not exist."""
    swallowed = []
    for page in sorted(site_dir.rglob("*.html")):
        if {"_static", "_sources"} & set(page.relative_to(site_dir).parts):
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        swallowed += [(page.relative_to(site_dir).as_posix(), href, text.strip())
                      for href, text in parser.links
                      if href.strip().endswith(".") or text.strip().endswith(".")]
    assert not swallowed, swallowed
