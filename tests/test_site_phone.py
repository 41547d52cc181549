"""The book on a phone (390x844) in Chromium: every figure's plotting area wide enough, its
controls inside the screen and off its titles, no element past the right edge, no figure
text cut off or drawn over another, and figures that follow the phone switch (600 px) and
their box both ways, menus included (book/_ext/static/lib/phone_layout.js;
tests/site_checks.py: the site and the figure helpers); ☰ opens the book's parts and "on
this page" the page's sections, and on a wide screen ☰ folds the sidebar away and back
(book/_ext/book_theme.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from site_checks import (PAGES, PHONE, _figure_handle, _overlap, figure_state, move_slider,
                         probe, screenshot, wait_for)


PHONE_JS = probe("figure_room")


@pytest.mark.parametrize("path", [p for p in PAGES if Path(p).name[:2].isdigit()])
def test_figures_fit_a_phone(path, open_page, request, capsys):
    """At 390x844 (a phone) every figure's plotting area is at least 280 px wide (legends
    and colour bars below it, panels stacked: book/_ext/static/lib/phone_layout.js), every
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


PAST_THE_EDGE_JS = probe("past_the_edge")


@pytest.mark.parametrize("path", PAGES)
def test_no_element_lies_past_the_right_edge_of_a_phone(path, open_page):
    """At 390 px no element of any page (the Results appendix's sacreBLEU signatures in
    inline code included) is laid out past the screen's right edge, except inside a box
    that scrolls sideways: ``scrollWidth`` alone missed a page laid out 515 px wide."""
    opened = open_page(path, viewport=PHONE)
    opened.page.wait_for_timeout(300)
    past = opened.page.evaluate(PAST_THE_EDGE_JS, PHONE[0])
    assert not past, f"{path}: {len(past)} elements past {PHONE[0]} px: {past[:8]}"


CLIPPED_JS = probe("clipped_texts")


OVERLAP_JS = probe("overlapping_texts")


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


LAYOUT_JS = probe("figure_layouts")


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
        wait_for(page, "(want) => (%s)().every((s, i) => s === want[i])" % LAYOUT_JS,
                 arg=fresh[width], timeout=20_000)          # else `wrong` below says how
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


UNFITTED_JS = probe("unfitted_figures")


@pytest.mark.parametrize("width", [1280, PHONE[0]])
def test_figures_follow_their_box_without_a_window_resize(width, open_page):
    """The page's own layout narrows the text column with no window resize event (a sidebar
    shown, a scroll bar): every figure is drawn again at its box's new width, in the same
    layout (phone or desktop), instead of staying wider than its box and cut off."""
    opened = open_page("book/04_multi_head.html", viewport=(width, 844))
    page = opened.page
    page.wait_for_function("(" + UNFITTED_JS + ")().length === 0", timeout=20_000)
    narrower = page.evaluate(probe("narrow_figure_boxes"))
    wait_for(page, "(" + UNFITTED_JS + ")().length === 0", timeout=10_000)
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
# did nothing, on every page; book/_ext/book_theme.py hands their clicks on.
PARTS = ("The model", "Training and inference", "What matters, and what next",
         "Under the hood (optional)")
TOGGLE_PAGE = "book/01_introduction.html"
SECTIONS_JS = probe("page_sections")
SHOWN_LINKS_JS = probe("shown_links")


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


COLOUR_BARS_JS = probe("colour_bars")


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
