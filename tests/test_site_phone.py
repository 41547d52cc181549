"""The book on a phone (390x844) in Chromium: every figure's plotting area wide enough, its
controls inside the screen and off its titles, no element past the right edge, no figure
text cut off or drawn over another, and figures that follow the phone switch (600 px) and
their box both ways, menus included (book/_ext/static/lib/phone_layout.js;
tests/site_checks.py: the site and the figure helpers); ☰ opens the book's parts and "on
this page" the page's sections, and on a wide screen ☰ folds the sidebar away and back
(book/_ext/sidebar_toggles.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from site_checks import (PAGES, PHONE, _figure_handle, _overlap, figure_state, move_slider,
                         screenshot)


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


# ------------------------------------------------------------ the sidebars' toggles
# pydata-sphinx-theme 0.17.1 with sphinx-book-theme 1.3.0 bound ☰ and "on this page" to
# hidden buttons only (pydata-sphinx-theme#2451, sphinx-book-theme#988): the visible ones
# did nothing, on every page; book/_ext/sidebar_toggles.py hands their clicks on.
PARTS = ("The model", "Training and inference", "What matters, and what next",
         "Under the hood (optional)")
TOGGLE_PAGE = "book/01_introduction.html"
SECTIONS_JS = """() => Array.from(document.querySelectorAll('article section > h2'), (h) => {
    const c = h.cloneNode(true);
    c.querySelectorAll('.headerlink').forEach((x) => x.remove());
    return c.textContent.trim(); })"""
SHOWN_LINKS_JS = """(dialog) => Array.from(document.querySelectorAll(dialog + ' nav a'))
    .filter((a) => { const b = a.getBoundingClientRect();
                     return b.width > 0 && b.height > 0 && getComputedStyle(a).visibility !== 'hidden'; })
    .map((a) => a.textContent.trim())"""


def _shown_toggle(page, kind: str):
    return page.locator(f".{kind}-toggle >> visible=true").first


def test_on_a_phone_the_menu_opens_the_books_parts(open_page):
    """At 390 px, tapping ☰ opens the navigation: every part of the book shows, "Under the
    hood (optional)" among them."""
    page = open_page(TOGGLE_PAGE, viewport=PHONE).page
    _shown_toggle(page, "primary").click()
    dialog = page.locator("#pst-primary-sidebar-modal")
    for part in PARTS:
        dialog.get_by_text(part, exact=True).wait_for(state="visible")


def test_on_a_phone_on_this_page_opens_the_pages_sections(open_page):
    """At 390 px, tapping "on this page" opens the page's contents: each of its sections."""
    opened = open_page(TOGGLE_PAGE, viewport=PHONE)
    page = opened.page
    sections = page.evaluate(SECTIONS_JS)
    assert "Summary" in sections and len(sections) >= 5, sections
    _shown_toggle(page, "secondary").click()
    page.locator("#pst-secondary-sidebar-modal[open]").wait_for()
    page.wait_for_function(f"() => ({SHOWN_LINKS_JS})('#pst-secondary-sidebar-modal').length > 0")
    shown = page.evaluate(SHOWN_LINKS_JS, "#pst-secondary-sidebar-modal")
    assert set(sections) <= set(shown), (sections, shown)
    assert not opened.errors, opened.errors


def test_on_a_wide_screen_the_menu_hides_and_restores_the_sidebar(open_page):
    """At 1280 px, ☰ folds the navigation sidebar away, and brings it back."""
    page = open_page(TOGGLE_PAGE, viewport=(1280, 900)).page
    sidebar = page.locator("#pst-primary-sidebar")
    part = sidebar.get_by_text(PARTS[-1], exact=True)
    part.wait_for(state="visible")
    _shown_toggle(page, "primary").click()
    sidebar.wait_for(state="hidden")
    _shown_toggle(page, "primary").click()
    sidebar.wait_for(state="visible")
    part.wait_for(state="visible")


# Each colour bar of a page: its range, its tick labels (text, left, right, drawn at all)
# and its title's box, the figure's box around them.
COLOUR_BARS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((gd) => {
  const box = gd.querySelector('svg.main-svg').getBoundingClientRect();
  return (gd._fullData || []).filter((t) => t.visible === true && t.showscale && t.colorbar)
    .map((t) => {
      const bar = gd.querySelector('.cb' + t.uid);
      if (!bar) return null;
      const at = (e) => { const r = e.getBoundingClientRect();
                          return [r.left, r.right, r.width > 0 && r.height > 0]; };
      const title = bar.querySelector('.cbtitle text');
      return {figure: (gd._fullLayout.title || {}).text || '', box: [box.left, box.right],
              range: [t.zmin, t.zmax], title: title ? at(title) : null,
              ticks: Array.from(bar.querySelectorAll('.cbaxis text, [class$=tick] > text'))
                .map((e) => [e.textContent, ...at(e)])};
    }).filter(Boolean);
})"""


def colour_bar_faults(bar: dict) -> list[str]:
    """What a reader cannot read of one colour bar: a tick label not drawn or outside the
    figure, one under the bar's title, or no label near an end of its range."""
    faults, (low, high), values = [], bar["range"], []
    left, right = bar["box"]
    for text, a, b, drawn in bar["ticks"]:
        if not drawn or a < left - 0.5 or b > right + 0.5:
            faults.append(f"label {text!r} not on screen")
        elif bar["title"] and a < bar["title"][1] and b > bar["title"][0]:
            faults.append(f"label {text!r} under the title")
        else:
            try:
                values.append(float(text.replace("\u2212", "-")))
            except ValueError:
                pass
    span = (high - low) or 1.0
    if not values or min(values) > low + span / 4 or max(values) < high - span / 4:
        faults.append(f"no label near an end of {low:g} .. {high:g}: {sorted(values)}")
    return faults


@pytest.mark.parametrize("path", [p for p in PAGES if Path(p).name[:2].isdigit()
                                  or "your_transformer" in p])
def test_every_colour_bar_shows_its_end_labels_on_a_phone(path, open_page):
    """At 390 px each colour bar's tick labels are all drawn, inside the figure and clear of
    the bar's title, and the labels reach both ends of its range (a bar as long as the
    screen pushed its top label, the '1' of an attention map, off the screen)."""
    opened = open_page(path, viewport=PHONE)
    opened.page.wait_for_timeout(300)              # phone_layout.js's measured second draw
    faults = {f"{bar['figure'][:50]}": found for bar in opened.page.evaluate(COLOUR_BARS_JS)
              if (found := colour_bar_faults(bar))}
    assert not faults, f"{path}: {faults}"


def test_the_colour_bar_check_sees_a_hidden_end_label():
    bar = {"figure": "f", "box": [16, 374], "range": [0, 1], "title": [21, 119, True],
           "ticks": [["0", 134, 141, True], ["0.5", 234, 251, True], ["1", 0, 0, False]]}
    assert colour_bar_faults(bar) == ["label '1' not on screen",
                                      "no label near an end of 0 .. 1: [0.0, 0.5]"]
    bar["ticks"] = [["0", 100, 110, True], ["0.5", 200, 215, True], ["1", 300, 307, True]]
    assert colour_bar_faults(bar) == ["label '0' under the title",
                                      "no label near an end of 0 .. 1: [0.5, 1.0]"]
