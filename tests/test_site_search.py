"""The book's search page in Chromium (book/_ext/book_search.py, static/search/): one
search field, and each result's snippet is prose of its own page: no code, no quotation of
the paper, no TeX (inline maths written out), never the same snippet for two pages
(the site, its server and ``open_page``: tests/conftest.py)."""
from __future__ import annotations

import re
from html import unescape

import pytest

from site_checks import probe, wait_for


def _search_results(page) -> list[tuple[str, str]]:
    """(href, snippet) of each result of the search page, once Sphinx has listed them all
    and written each one's snippet (a result left without one has the snippet "")."""
    # Sphinx says "finished" once every result is listed; each snippet arrives later, when
    # its page has been fetched: wait for both
    wait_for(page, probe("search_finished"), timeout=30_000)
    return page.evaluate(probe("search_results"))


def test_the_search_page_has_one_field_and_snippets_of_prose(open_page, site_dir):
    """book/_ext/book_search.py: on a desktop the search page shows one search field (not
    the header's and the sidebar's buttons beside its own), and each result's snippet is
    chapter text: not the page's "Contents" box, not a line of a code cell."""
    opened = open_page("search.html?q=softmax")
    page = opened.page
    results = _search_results(page)
    fields = page.evaluate(probe("search_fields"))
    assert len(fields) == 1, fields
    assert len(results) >= 3, results
    for href, snippet in results:
        assert snippet.strip() and "Contents" not in snippet, (href, snippet)
        html = (site_dir / href.split("#")[0].split("?")[0]).read_text(encoding="utf-8")
        code = re.findall(r'<div class="cell_input.*?</pre>', html, flags=re.S)
        lines = {ln.strip() for block in code for ln in re.sub(r"<[^>]+>", "", block).split("\n")}
        lines = {unescape(ln) for ln in lines if len(ln) >= 20}
        assert not [ln for ln in lines if ln in snippet], (href, snippet)
    assert not opened.errors and not opened.outside


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]{5,}", text)


def _html_text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


# "byte-pair": chapter 2 and Under the hood C quote the same sentence of section 5.1; "LayerNorm": the
# TeX of chapter 6's quotation; "attention": every chapter; "scale": inline maths (√d_k).
@pytest.mark.parametrize("query", ["byte-pair", "LayerNorm", "attention", "scale"])
def test_search_snippets_are_the_pages_own_prose(query, open_page, site_dir):
    """static/search_text.js: a result's snippet is prose of its own page: no code cell
    or its "Show code cell source" toggle, no quotation of the paper (the same quotation
    stands in several chapters), no TeX (inline maths is written out: √d_k), each of its
    words is on its page, and no two pages show the same snippet."""
    opened = open_page(f"search.html?q={query}")
    results = _search_results(opened.page)
    chapters = {href.split("#")[0] for href, _ in results if re.search(r"/(\d\d|hood)_", href)}
    assert len(chapters) >= (10 if query == "attention" else 2), results
    seen: dict[str, str] = {}
    for href, snippet in results:
        where = f"{query}: {href}: {snippet!r}"
        body = snippet.strip().strip(".").strip()
        assert len(body) > 40, where
        assert not re.search(r"(Show|Hide) code cell", snippet), where
        assert not re.search(r"\\[A-Za-z()\[\]]|\$|[{}]", snippet), f"TeX in {where}"
        html = (site_dir / href.split("#")[0]).read_text(encoding="utf-8")
        page_text = _html_text(html)
        missing = [w for w in _words(body) if w not in page_text]
        assert not missing, f"{where}: not on its page: {missing}"
        for quote in re.findall(r"<blockquote.*?</blockquote>", html, flags=re.S):
            quote = _html_text(quote)
            pieces = [quote[i:i + 40] for i in range(0, len(quote) - 40, 20)]
            assert not [p for p in pieces if p in snippet], f"{where}: quotes the paper"
        page = href.split("#")[0]
        assert seen.get(body, page) == page, f"{where}: the same as {seen[body]}'s"
        seen[body] = page
    assert not opened.errors and not opened.outside


def test_inline_maths_in_snippets_is_plain_text(open_page, site_dir):
    """Every inline formula of the book, as search_text.js writes it into a snippet: no
    backslash, brace or dollar is left, and the symbols read as symbols."""
    opened = open_page("search.html")
    formulas = sorted({unescape(m) for path in sorted(site_dir.glob("book/*.html"))
                       for m in re.findall(r'<span class="math notranslate nohighlight">(.*?)</span>',
                                           path.read_text(encoding="utf-8"), flags=re.S)})
    assert len(formulas) > 50, formulas
    plain = opened.page.evaluate("(fs) => fs.map(window.attentionBook.plainMath)", formulas)
    left = [(f, p) for f, p in zip(formulas, plain) if re.search(r"[\\{}$]", p) or not p.strip()]
    assert not left, left
    examples = dict(zip(formulas, plain))
    assert examples[r"\(\sqrt{d_k}\)"] == "√d_k"
    assert examples[r"\(d_{\text{model}}\)"] == "d_model"
    assert opened.page.evaluate(r"() => window.attentionBook.plainMath('\\(\\sqrt{d_{\\text{model}}}\\)')") \
        == "√d_model"
    assert examples[r"\(\beta_2 = 0.98\)"] == "β_2 = 0.98"
