"""The built book, checked in a real browser (Debian's Chromium driven by Playwright).

The site is built once per session in quick mode (``BOOK_QUICK=1``) into
``_build/quick/_build/html``, unless ``BOOK_HTML`` names an existing build (for example
``BOOK_HTML=_build/html`` after ``make book``). It is served on 127.0.0.1 and every page
of ``_toc.yml`` is opened; each must show no console error, load nothing from outside
127.0.0.1 (plotly.js and MathJax are served from ``_static``), draw every plotly figure,
give every figure a title, titled axes and titled colour bars, and typeset its maths.
Sliders are moved with the mouse: the figure must show another head/layer afterwards.
Screenshots go to ``_build/screenshots/<test name>/`` and their paths are printed.
"""
from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from helpers import CHAPTERS

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "_build" / "screenshots"

# Figures whose slider must change what is shown: (page, words in the figure's title).
SLIDER_FIGURES = [
    ("book/04_multi_head.html", "Decoder attention over the source"),
    ("book/04_multi_head.html", "Encoder self-attention"),
    ("book/03_attention.html", "under each mask"),
    ("book/09_attention_explorer.html", "Attention explorer"),   # the trained model's heads
]


def _toc_pages() -> list[str]:
    """The site's pages in _toc.yml order, as paths relative to the html root."""
    text = (REPO / "_toc.yml").read_text()
    files = re.findall(r"^\s*(?:root|-\s*file)\s*:\s*(\S+)", text, flags=re.M)
    return [f"{f.rsplit('.', 1)[0] if f.endswith(('.md', '.ipynb')) else f}.html" for f in files]


PAGES = _toc_pages()


# The site, its server, the browser and `open_page` are fixtures of tests/conftest.py.


def screenshot(target, request, capsys, name: str) -> Path:
    """Save a PNG of a whole page (full length) or of one element handle."""
    folder = SCREENSHOTS / request.node.originalname
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    with capsys.disabled():
        print(f"\n  screenshot: {path.relative_to(REPO)}", end="")
    return path


# --------------------------------------------------------- figure inspection
FIGURES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout || {};
  const text = (t) => (t && typeof t === 'object') ? (t.text || '') : (t || '');
  const sub = fl._subplots || {};
  const axes = {};
  for (const id of [...(sub.xaxis || []), ...(sub.yaxis || [])]) {
    const name = id[0] + 'axis' + id.slice(1);
    if (fl[name] && fl[name].visible === false) continue;     // a hidden axis (a diagram)
    axes[name] = text(fl[name] && fl[name].title);
  }
  const colorbars = (gd.data || [])
    .filter((t) => ['heatmap', 'contour', 'histogram2d'].includes(t.type) && t.showscale !== false)
    .map((t) => text(t.colorbar && t.colorbar.title));
  const box = gd.getBoundingClientRect();
  return {title: text(fl.title), axes, colorbars, drawn: !!gd.querySelector('svg.main-svg'),
          width: box.width, height: box.height, sliders: (gd.layout.sliders || []).length};
})"""


def figures(page) -> list[dict]:
    return page.evaluate(FIGURES_JS)


def _figure_handle(page, title_words: str):
    handle = page.evaluate_handle(
        """(words) => Array.from(document.querySelectorAll('.js-plotly-plot'))
             .find((gd) => (gd._fullLayout.title.text || '').includes(words)) || null""",
        title_words)
    assert handle.json_value() is not None, f"no figure titled ...{title_words}..."
    return handle


def figure_state(page, title_words: str) -> dict:
    """Title, active slider step, visible traces and their data of one figure."""
    gd = _figure_handle(page, title_words)
    return page.evaluate(
        """(gd) => ({title: gd._fullLayout.title.text,
                     active: gd._fullLayout.sliders.length ? gd._fullLayout.sliders[0].active : null,
                     visible: gd.data.map((t, i) => t.visible === false ? -1 : i).filter((i) => i >= 0),
                     z: JSON.stringify(gd.data.filter((t) => t.visible !== false).map((t) => t.z || t.y))})""",
        gd)


def move_slider(page, title_words: str, step: int | None = None) -> tuple[dict, dict]:
    """Click step ``step`` of the first slider of the figure titled ``...title_words...``
    with the mouse, as a reader would; returns the figure's state before and after.
    ``step=None``: the last step, or the first when the last is already active."""
    before = figure_state(page, title_words)
    gd = _figure_handle(page, title_words)
    gd.scroll_into_view_if_needed()
    ticks = gd.query_selector_all(".slider-container .slider-tick-rect")   # one per step
    rail = gd.query_selector(".slider-container .slider-rail-touch-rect")
    assert ticks and rail, f"figure ...{title_words}... has no slider"
    if step is None:
        step = 0 if before["active"] == len(ticks) - 1 else len(ticks) - 1
    tick_box, rail_box = ticks[step].bounding_box(), rail.bounding_box()
    page.mouse.click(tick_box["x"] + tick_box["width"] / 2, rail_box["y"] + rail_box["height"] / 2)
    page.wait_for_timeout(400)
    return before, figure_state(page, title_words)


# --------------------------------------------------------------------- tests
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


@pytest.mark.parametrize("path, title_words", SLIDER_FIGURES)
def test_slider_changes_figure(path, title_words, open_page, request, capsys):
    opened = open_page(path)
    before, after = move_slider(opened.page, title_words)
    slug = re.sub(r"\W+", "_", title_words).strip("_")
    figure = _figure_handle(opened.page, title_words).as_element()
    screenshot(figure, request, capsys, f"{Path(path).stem}-{slug}")
    assert after["active"] != before["active"], (before["active"], after["active"])
    assert after["title"] != before["title"], "the title does not follow the slider"
    assert after["visible"] and after["visible"] != before["visible"], "same traces shown"
    assert after["z"] != before["z"], "the data shown did not change"
    assert not opened.errors, opened.errors


PHONE_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
    const fl = gd._fullLayout;
    const box = (sel) => Array.from(gd.querySelectorAll(sel), (e) => {
      const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })
      .filter((b) => b[2] > b[0] && b[3] > b[1]);
    const panels = (fl._subplots.xaxis || []).map((id) => fl['xaxis' + id.slice(1)])
      .filter((a) => a && a.visible !== false).map((a) => a._length);
    const text = (t) => (t && typeof t === 'object') ? (t.text || '') : (t || '');
    return {title: text(fl.title), panels, titles: box('.gtitle, .gtitle-subtitle'),
            controls: box('.updatemenu-header-group, .slider-container, .colorbar, .legend')};
  })"""
PHONE = (390, 844)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("path", [p for p in PAGES if Path(p).name[:2].isdigit()])
def test_figures_fit_a_phone(path, open_page, request, capsys):
    """At 390x844 (a phone) every figure's plotting area is at least 280 px wide (legends
    and colour bars below it, panels stacked: book/_ext/static/phone_layout.js), every
    menu, slider, colour bar and legend lies inside the screen's width, none covers a
    title, and the page does not scroll sideways."""
    opened = open_page(path, viewport=PHONE)
    screenshot(opened.page, request, capsys, f"{Path(path).stem}-phone")
    found = opened.page.evaluate(PHONE_JS)
    assert found, f"{path}: no figure"
    for fig in found:
        where = f"{path}: {fig['title'][:60]!r}"
        assert all(w >= 280 for w in fig["panels"]), f"{where}: plotting area {fig['panels']} px"
        outside = [c for c in fig["controls"] if c[0] < -0.5 or c[2] > PHONE[0] + 0.5]
        assert not outside, f"{where}: controls outside the screen: {outside}"
        covered = [(c, t) for c in fig["controls"] for t in fig["titles"] if _overlap(c, t)]
        assert not covered, (where, covered)
    width = opened.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE[0], f"{path} scrolls sideways ({width} px wide)"
    assert not opened.errors, opened.errors


# Elements laid out past the right edge of a 390 px screen: those inside a box that scrolls
# or clips sideways (a code cell, a wide table's wrapper, displayed maths) are that box's;
# hidden and off-canvas elements (the sidebars' drawers) are not laid out for the reader.
PAST_THE_EDGE_JS = """(width) => {
  const out = [];
  const clipped = (e) => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (/(auto|scroll|hidden|clip)/.test(s.overflowX) && a.getBoundingClientRect().right <= width + 0.5) return true;
      if (s.position === 'fixed' || s.visibility === 'hidden' || s.display === 'none') return true;
    } return false; };
  for (const e of document.body.querySelectorAll('*')) {
    const b = e.getBoundingClientRect();
    if (b.width === 0 || b.height === 0 || b.right <= width + 0.5) continue;
    const s = getComputedStyle(e);
    if (s.visibility === 'hidden' || s.position === 'fixed' || e.closest('dialog:not([open]), .bd-sidebar-primary, .bd-sidebar-secondary, .MathJax_Preview, mjx-assistive-mml')) continue;
    if (clipped(e)) continue;
    out.push([e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : ''),
              Math.round(b.right), (e.textContent || '').trim().slice(0, 40)]);
  }
  return out;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_no_element_lies_past_the_right_edge_of_a_phone(path, open_page):
    """At 390 px no element of any page (the Results appendix's sacreBLEU signatures in
    inline code included) is laid out past the screen's right edge, except inside a box
    that scrolls sideways: ``scrollWidth`` alone missed a page laid out 515 px wide."""
    opened = open_page(path, viewport=PHONE)
    opened.page.wait_for_timeout(300)
    past = opened.page.evaluate(PAST_THE_EDGE_JS, PHONE[0])
    assert not past, f"{path}: {len(past)} elements past {PHONE[0]} px: {past[:8]}"


def test_install_cells_use_the_configured_repository():
    """_config.yml holds the repository URL; the chapters' Colab install cells repeat it."""
    url = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", (REPO / "_config.yml").read_text(),
                    flags=re.M).group(1)
    chapters = CHAPTERS
    assert chapters
    for nb_path in chapters:
        nb = json.loads(nb_path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        first = "".join(code[0]["source"])
        assert "google.colab" in first and f"git+{url}" in first, nb_path.name
        assert "nbval-skip" in code[0]["metadata"].get("tags", []), nb_path.name
        assert not any(c.get("outputs") for c in code), f"{nb_path.name} has committed outputs"


def test_chapters_take_the_configured_cell_timeout():
    """_config.yml's execute.timeout is the one limit: a chapter's own ``mystnb``
    ``execution_timeout`` would override it (chapter 7's 1,800 s failed `make book` when
    its training cell ran longer in fp32 on a 2-core Zen 3 VM, 2026-12-03)."""
    timeout = int(re.search(r"^execute:\s*\n(?:\s+.*\n)*?\s+timeout:\s*(\d+)",
                            (REPO / "_config.yml").read_text(), flags=re.M).group(1))
    assert timeout >= 3600
    for nb_path in CHAPTERS:
        nb = json.loads(nb_path.read_text())
        assert "execution_timeout" not in nb["metadata"].get("mystnb", {}), nb_path.name


def test_the_redirect_page_has_the_books_icon(site_dir):
    """The root index.html (a redirect) names the icon, so browsers ask for no /favicon.ico."""
    text = (site_dir / "index.html").read_text()
    icon = re.search(r'<link rel="icon" href="([^"]+)"', text)
    assert icon and (site_dir / icon.group(1)).is_file(), text


def _search_results(page) -> list[tuple[str, str]]:
    """(href, snippet) of each result of the search page, once Sphinx has listed them all
    and written each one's snippet (a result left without one has the snippet "")."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    # Sphinx says "finished" once every result is listed; each snippet arrives later, when
    # its page has been fetched: wait for both
    try:
        page.wait_for_function("""() => /finished/.test(
            document.querySelector('#search-results').textContent) && Array.from(
            document.querySelectorAll('#search-results li')).every(
            (li) => li.querySelector('p.context'))""", timeout=30_000)
    except PlaywrightTimeout:
        pass
    return page.evaluate("""() => Array.from(document.querySelectorAll('#search-results li'),
        (li) => [li.querySelector('a').getAttribute('href'),
                 (li.querySelector('p.context') || {textContent: ''}).textContent])""")


def test_the_search_page_has_one_field_and_snippets_of_prose(open_page, site_dir):
    """book/_ext/search_page.py: on a desktop the search page shows one search field (not
    the header's and the sidebar's buttons beside its own), and each result's snippet is
    chapter text: not the page's "Contents" box, not a line of a code cell."""
    opened = open_page("search.html?q=softmax")
    page = opened.page
    results = _search_results(page)
    fields = page.evaluate("""() => Array.from(document.querySelectorAll(
        'input[type=search], .search-button-field, button.search-button')).filter((e) => {
          const r = e.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
        }).map((e) => e.outerHTML.slice(0, 80))""")
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
    assert examples[r"\(\beta_2 = 0.98\)"] == "β_2 = 0.98"


DIAGRAM_JS = """() => Array.from(document.querySelectorAll('svg.book-diagram'), (svg) => {
    const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
    return {svg: box(svg), texts: Array.from(svg.querySelectorAll('text'), (t) => [t.textContent, box(t)]),
            blocks: Array.from(svg.querySelectorAll('g.block'), (g) => ({
              rect: box(g.querySelector('rect')), texts: Array.from(g.querySelectorAll('text'), box),
              links: Array.from(g.querySelectorAll('a'), (a) => a.getAttribute('href'))}))};
  })"""


def _clean_diagram(d: dict, viewport) -> None:
    """One drawn diagram (DIAGRAM_JS): no two texts overlap, every text lies inside the
    drawing and each block's texts inside its block."""
    assert d["svg"][2] - d["svg"][0] <= viewport[0], d["svg"]
    shrunk = [(t, [b[0] + 0.5, b[1] + 0.5, b[2] - 0.5, b[3] - 0.5]) for t, b in d["texts"]]
    crossing = [(a[0], b[0]) for i, a in enumerate(shrunk) for b in shrunk[i + 1:]
                if _overlap(a[1], b[1])]
    assert not crossing, crossing
    assert all(_inside(b, d["svg"]) for _, b in d["texts"]), d["texts"]
    for block in d["blocks"]:
        assert all(_inside(t, block["rect"]) for t in block["texts"]), block


def _inside(inner, outer) -> bool:
    return (inner[0] >= outer[0] - 0.5 and inner[1] >= outer[1] - 0.5
            and inner[2] <= outer[2] + 0.5 and inner[3] <= outer[3] + 0.5)


@pytest.mark.parametrize("viewport", [(1280, 900), PHONE])
def test_figure_1_is_a_clean_diagram(viewport, open_page, site_dir, request, capsys):
    """Chapter 1's Figure 1 (transformer_book/diagram.py): at 1280 and 390 px no two of
    its texts overlap, each block's name and file lie inside the block, every text inside
    the drawing, and each block links a page of the book and its source file on GitHub."""
    opened = open_page("book/01_introduction.html", viewport=viewport)
    page = opened.page
    diagrams = page.evaluate(DIAGRAM_JS)
    assert len(diagrams) == 1, diagrams
    figure = page.query_selector("figure.book-diagram")
    figure.scroll_into_view_if_needed()
    screenshot(figure, request, capsys, f"figure1-{viewport[0]}")
    d = diagrams[0]
    assert len(d["blocks"]) == 16 and len(d["texts"]) >= 36, d["blocks"]
    _clean_diagram(d, viewport)
    for block in d["blocks"]:
        page_link, source = block["links"]
        assert (site_dir / "book" / page_link).is_file(), page_link
        assert source.startswith("https://github.com/") and source.endswith(".py"), source
    assert not opened.errors, opened.errors


@pytest.mark.parametrize("viewport", [(1280, 900), PHONE])
@pytest.mark.parametrize("path, blocks", [("book/03_attention.html", 5),
                                          ("book/04_multi_head.html", 6)], ids=["left", "right"])
def test_figure_2_is_a_clean_diagram(path, blocks, viewport, open_page, site_dir, request,
                                     capsys):
    """The paper's Figure 2, its left half in chapter 3 and its right half in chapter 4
    (transformer_book/diagram.py ``flow``): as clean as Figure 1 at 1280 and 390 px, each
    box's name linking a section that exists on its page, its file:line a line on GitHub."""
    opened = open_page(path, viewport=viewport)
    page = opened.page
    diagrams = page.evaluate(DIAGRAM_JS)
    assert len(diagrams) == 1, diagrams
    figure = page.query_selector("figure.book-diagram")
    figure.scroll_into_view_if_needed()
    screenshot(figure, request, capsys, f"figure2-{path.split('/')[-1][:2]}-{viewport[0]}")
    d = diagrams[0]
    assert len(d["blocks"]) == blocks, d["blocks"]
    _clean_diagram(d, viewport)
    for block in d["blocks"]:
        section, source = block["links"]
        name, _, anchor = section.partition("#")
        html = (site_dir / "book" / name).read_text(encoding="utf-8")
        assert not anchor or f'id="{anchor}"' in html, section
        assert re.fullmatch(r"https://github\.com/\S+\.py#L\d+", source), source
    assert not opened.errors, opened.errors


CLIPPED_JS = """() => {
  const shown = (t) => { const s = getComputedStyle(t);
    return t.textContent.trim() && s.visibility !== 'hidden' && s.display !== 'none' &&
      Number(s.opacity) > 0 && Number(s.fillOpacity) > 0 && !/rgba\\(.*,\\s*0\\)$/.test(s.fill) &&
      parseFloat(s.fontSize) > 2; };
  // the plotting area's clip-path of a text (plotly clips labels of points there)
  const clipBox = (t) => {
    for (let e = t; e && e.getAttribute; e = e.parentNode) {
      const ref = /url\\(["']?#([^"')]+)/.exec(e.getAttribute('clip-path') || '');
      const clip = ref && document.getElementById(ref[1]);
      const rect = clip && clip.querySelector('rect');
      if (!rect) continue;
      const m = e.getScreenCTM(), x = +rect.getAttribute('x') || 0, y = +rect.getAttribute('y') || 0;
      const xs = [x, x + +rect.getAttribute('width')].map((u) => m.a * u + m.e);
      const ys = [y, y + +rect.getAttribute('height')].map((v) => m.d * v + m.f);
      return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
    }
    return [-Infinity, -Infinity, Infinity, Infinity];
  };
  const out = [];
  for (const fig of document.querySelectorAll('.js-plotly-plot, svg.book-diagram')) {
    const f = fig.getBoundingClientRect();
    const right = Math.min(f.right, document.documentElement.clientWidth);
    for (const t of fig.querySelectorAll('svg text')) {
      if (!shown(t)) continue;
      const b = t.getBoundingClientRect();
      if (b.width === 0 || b.height === 0) continue;
      const c = clipBox(t);
      const box = [Math.max(f.left, 0, c[0]), Math.max(f.top, c[1]), Math.min(right, c[2]), Math.min(f.bottom, c[3])];
      if (b.left < box[0] - 1 || b.right > box[2] + 1 || b.top < box[1] - 1 || b.bottom > box[3] + 1) {
        const title = fig._fullLayout ? (fig._fullLayout.title.text || '') : fig.getAttribute('aria-label');
        out.push([title.slice(0, 50), t.textContent.slice(0, 40),
                  [b.left, b.top, b.right, b.bottom].map(Math.round), box.map(Math.round)]);
      }
    }
  }
  return out;
}"""

# Texts of one figure drawn on top of each other: each text's box turned with it (tick
# labels at -45 degrees), 1 px inside its edges, tested pairwise by separating axes.
OVERLAP_JS = """() => {
  const shown = (t) => { const s = getComputedStyle(t);
    return t.textContent.trim() && s.visibility !== 'hidden' && s.display !== 'none' &&
      Number(s.opacity) > 0 && Number(s.fillOpacity) > 0 && !/rgba\\(.*,\\s*0\\)$/.test(s.fill) &&
      parseFloat(s.fontSize) > 2; };
  const quad = (t) => {
    const b = t.getBBox(), m = t.getScreenCTM(), i = Math.min(1, b.width / 4, b.height / 4);
    return [[b.x + i, b.y + i], [b.x + b.width - i, b.y + i], [b.x + b.width - i, b.y + b.height - i],
            [b.x + i, b.y + b.height - i]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const apart = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
      const a = p.map(([x, y]) => nx * x + ny * y), b = q.map(([x, y]) => nx * x + ny * y);
      if (Math.max(...a) <= Math.min(...b) || Math.max(...b) <= Math.min(...a)) return true;
    }
    return false;
  };
  const kind = (t) => (t.closest('g[class]') || t).getAttribute('class');
  const out = [];
  for (const fig of document.querySelectorAll('.js-plotly-plot, svg.book-diagram')) {
    const texts = Array.from(fig.querySelectorAll('svg text')).filter(shown)
      .filter((t) => t.getBBox().width > 0).map((t) => [t, quad(t)]);
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      if (apart(texts[i][1], texts[j][1])) continue;
      const title = fig._fullLayout ? (fig._fullLayout.title.text || '') : fig.getAttribute('aria-label');
      out.push([title.slice(0, 40), [texts[i][0].textContent.slice(0, 30), kind(texts[i][0])],
                [texts[j][0].textContent.slice(0, 30), kind(texts[j][0])]]);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("path", [p for p in PAGES if Path(p).name[:2].isdigit()])
def test_no_figure_text_is_cut_off_on_a_phone(path, open_page):
    """At 390 px every text of every figure (titles, subtitles, tick labels, axis titles,
    legend entries, labels of points) lies inside its figure's box, the screen and the
    plotting area that clips it (a label of a point), and no two texts of a figure lie on
    top of each other (tick labels, an axis title and its labels, labels of points)."""
    opened = open_page(path, viewport=PHONE)
    opened.page.wait_for_timeout(300)              # phone_layout.js's measured second draw
    clipped = opened.page.evaluate(CLIPPED_JS)
    assert not clipped, f"{path}: {len(clipped)} texts outside their figure: {clipped[:8]}"
    overlapping = opened.page.evaluate(OVERLAP_JS)
    assert not overlapping, f"{path}: {len(overlapping)} pairs of texts overlap: {overlapping[:8]}"


# Each figure's layout, as far as the phone's and the desktop's differ (phone_layout.js).
LAYOUT_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout;
  return JSON.stringify({height: fl.height, wrapper: gd.parentElement.style.height,
    margin: [fl.margin.l, fl.margin.r, fl.margin.t, fl.margin.b],
    legend: fl.showlegend ? [fl.legend.orientation, fl.legend.yref] : null,
    colorbars: gd._fullData.filter((t) => t.visible === true && t.showscale && t.colorbar)
      .map((t) => t.colorbar.orientation),
    domains: Object.keys(fl).filter((k) => /^[xy]axis\\d*$/.test(k)).sort()
      .map((k) => k + ' ' + fl[k].domain.map((d) => d.toFixed(3)))});
})"""


def test_figures_follow_the_phone_switch(open_page, request, capsys):
    """A phone turned and a window widened: across phone_layout.js's switch (600 px), both
    ways, several times, every figure of a chapter is laid out as on a page opened at that
    width (390: the phone's, 844 and 1280: the desktop's), the slider step a reader chose
    stays chosen, and no text is cut off (at 390 px none overlaps either)."""
    path, words = "book/04_multi_head.html", "Encoder self-attention"
    fresh = {}
    for width in (390, 844, 1280):
        opened = open_page(path, viewport=(width, 844))
        opened.page.wait_for_timeout(300)
        fresh[width] = opened.page.evaluate(LAYOUT_JS)
        opened.close()
    assert len(fresh[390]) >= 3 and all(a != b for a, b in zip(fresh[390], fresh[1280])), fresh
    opened = open_page(path, viewport=PHONE)
    page = opened.page
    _, chosen = move_slider(page, words)
    plain = lambda state: {**state, "title": state["title"].replace("<br>", " ")}  # noqa: E731
    for width in (844, 390, 1280, 390):
        page.set_viewport_size({"width": width, "height": PHONE[1]})
        try:
            page.wait_for_function("(want) => (%s)().every((s, i) => s === want[i])" % LAYOUT_JS,
                                   arg=fresh[width], timeout=20_000)
        except Exception:
            pass
        page.wait_for_function("(" + UNFITTED_JS + ")().length === 0", timeout=20_000)
        page.wait_for_timeout(300)
        laid_out = page.evaluate(LAYOUT_JS)
        wrong = [(now, want) for now, want in zip(laid_out, fresh[width]) if now != want]
        assert not wrong, f"at {width} px, figures laid out otherwise than a fresh page: {wrong[:2]}"
        assert plain(figure_state(page, words)) == plain(chosen), f"at {width} px the slider moved"
        clipped = page.evaluate(CLIPPED_JS)
        assert not clipped, f"at {width} px: {clipped[:8]}"
        if width < 600:
            overlapping = page.evaluate(OVERLAP_JS)
            assert not overlapping, f"at {width} px: {overlapping[:8]}"
        figure = _figure_handle(page, words).as_element()
        figure.scroll_into_view_if_needed()
        screenshot(figure, request, capsys, f"encoder-self-attention-{width}")
    assert not opened.errors, opened.errors


# Figures drawn at another width than their box's (plotly's responsive resize hears only the
# window's resize event): [title, drawn width, box width].
UNFITTED_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter((gd) => gd._fullLayout && gd.getBoundingClientRect().width > 0 &&
          Math.abs(gd._fullLayout.width - gd.getBoundingClientRect().width) >= 1)
  .map((gd) => [(gd._fullLayout.title.text || '').slice(0, 50), gd._fullLayout.width,
                Math.round(gd.getBoundingClientRect().width)])"""


@pytest.mark.parametrize("width", [1280, PHONE[0]])
def test_figures_follow_their_box_without_a_window_resize(width, open_page):
    """The page's own layout narrows the text column with no window resize event (a sidebar
    shown, a scroll bar): every figure is drawn again at its box's new width, in the same
    layout (phone or desktop), instead of staying wider than its box and cut off."""
    opened = open_page("book/04_multi_head.html", viewport=(width, 844))
    page = opened.page
    page.wait_for_function("(" + UNFITTED_JS + ")().length === 0", timeout=20_000)
    narrower = page.evaluate("""() => {
      const gd = document.querySelector('.js-plotly-plot');
      const column = gd.parentElement.parentElement;
      const width = Math.round(column.getBoundingClientRect().width) - 40;
      for (const g of document.querySelectorAll('.js-plotly-plot'))
        g.parentElement.style.width = width + 'px';
      return width;
    }""")
    try:
        page.wait_for_function("(" + UNFITTED_JS + ")().length === 0", timeout=10_000)
    except Exception:
        pass
    assert not page.evaluate(UNFITTED_JS), f"boxes narrowed to {narrower} px"
    assert not page.evaluate(CLIPPED_JS)
    assert not opened.errors, opened.errors


AXES_JS = """async () => {
  const box = document.createElement('div');
  document.querySelector('main article, [role=main]').prepend(box);
  const names = Array.from({length: 24}, (_, i) => 'row-' + String.fromCharCode(65 + i) + i);
  const ratio = names.map((_, i) => 0.3 * Math.pow(10, ((i * 7) % 24) / 23));     // 0.3 to 3
  const gd = document.createElement('div');
  box.append(gd);
  await window.attentionBook.newPlot(gd, [{type: 'bar', x: names, y: ratio, name: 'ratio'}],
    {title: {text: 'a log axis within one power of ten'}, height: 460,
     xaxis: {title: {text: 'row'}, tickangle: -45}, yaxis: {title: {text: 'ratio'}, type: 'log'}},
    {responsive: true});
  await new Promise((r) => setTimeout(r, 300));
  const labels = (axis) => Array.from(gd.querySelectorAll('.' + axis + 'tick > text'), (t) => t.textContent);
  const out = {x: labels('x'), y: labels('y')};
  box.remove();
  return out;
}"""


@pytest.mark.parametrize("width", [PHONE[0], 1280])
def test_axes_label_every_row_and_write_numbers(width, open_page):
    """phone_layout.js after a draw: a log axis from 0.3 to 3 is labelled with numbers
    (0.5, 1, 2), not plotly's digits between powers of ten (0.5 as "5"), and 24 bar names
    each get a label, at 390 px too (plotly alone labels every second one)."""
    opened = open_page("book/11_table3.html", viewport=(width, 844))
    labels = opened.page.evaluate(AXES_JS)
    assert len(labels["x"]) == 24, labels["x"]
    numbers = [float(t) for t in labels["y"]]
    assert len(numbers) >= 3 and min(numbers) >= 0.25 and max(numbers) <= 3.5, labels["y"]
    assert not opened.errors, opened.errors


def test_explorer_menu_options_keep_texts_apart_on_a_phone(open_page):
    """Chapter 9's explorer at 390 px: each sentence and attention kind chosen from its menu
    with the mouse brings other token labels and axis titles; after each choice
    (phone_layout.js measures every draw) no two texts overlap and none is cut off."""
    opened = open_page("book/09_attention_explorer.html", viewport=PHONE)
    page = opened.page
    figure = _figure_handle(page, "Attention explorer").as_element()
    options = page.evaluate("(gd) => gd.layout.updatemenus[0].buttons.map((b) => b.label)", figure)
    assert len(options) >= 3, options
    for i, label in enumerate(options):
        figure.query_selector(".updatemenu-header-group").click()
        buttons = figure.query_selector_all(".updatemenu-dropdown-button")
        assert len(buttons) == len(options), (label, len(buttons))
        buttons[i].click()
        page.wait_for_function("([gd, label]) => gd._fullLayout.title.subtitle.text.replace(/<br>/g, ' ') === label",
                               arg=[figure, label])
        page.wait_for_timeout(600)                   # plotly's draw, then the measured one
        overlapping = page.evaluate(OVERLAP_JS)
        assert not overlapping, f"{label}: {overlapping[:6]}"
        clipped = page.evaluate(CLIPPED_JS)
        assert not clipped, f"{label}: {clipped[:6]}"
    assert not opened.errors, opened.errors


def test_explorer_cross_attention_rows_are_the_predicted_tokens(open_page):
    """Chapter 9's explorer as built: for every sentence, the rows of encoder-decoder
    attention are labelled by the token each row predicts, the decoder's input (the rows of
    its self-attention) moved one to the left, then what the last row predicts (⟨/s⟩ when
    the translation ended), and the axis title says so."""
    opened = open_page("book/09_attention_explorer.html")
    figure = _figure_handle(opened.page, "Attention explorer").as_element()
    menu = opened.page.evaluate(
        """(gd) => gd.layout.updatemenus[0].buttons.map((b) => ({label: b.label, y: b.args[0].y[0],
                                                                 title: b.args[1]['yaxis.title.text']}))""",
        figure)
    by_label = {m["label"]: m for m in menu}
    sentences = [label.split(": ")[0] for label in by_label if label.endswith("encoder-decoder attention")]
    assert len(sentences) >= 3, list(by_label)
    for sentence in sentences:
        cross = by_label[f"{sentence}: encoder-decoder attention"]
        decoder = by_label[f"{sentence}: decoder self-attention (masked)"]
        rows = lambda m: [label.split(":", 1)[1] for label in m["y"]]
        assert rows(decoder)[0] == "⟨s⟩" and rows(cross)[:-1] == rows(decoder)[1:], (sentence, rows(cross))
        assert rows(cross)[-1] == "⟨/s⟩" or len(rows(cross)) > 20, (sentence, rows(cross))
        assert "predicts" in cross["title"] and "predicts" not in decoder["title"], cross["title"]
    assert not opened.errors, opened.errors
