"""The in-page translator (chapter 9) on a phone, as a finger uses it: 390 x 844 px with
touch. Once the attention map is tapped, plotly shows its toolbar (the modebar) at the
figure's top right: it must not cover the map's title."""
from __future__ import annotations

import pytest

from site_checks import PHONE, _overlap, probe

PAGE = "book/09_attention_explorer.html"

BOXES_JS = probe("map_toolbar_boxes")


@pytest.fixture
def phone_map(browser, base_url):
    """Chapter 9 at 390 x 844 px on a touch screen, the model loaded and a sentence
    translated: the page with its attention map drawn."""
    context = browser.new_context(viewport={"width": PHONE[0], "height": PHONE[1]},
                                  has_touch=True, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(180_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base_url}/{PAGE}", wait_until="load")
    page.tap("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error")
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    page.fill("input.lt-input", "Two dogs are playing in the snow.")
    page.tap("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.drawn")
    yield page
    assert not errors, errors
    context.close()


def test_a_tap_on_the_map_shows_its_toolbar_clear_of_the_title(phone_map):
    """At 390 px, a tap on the map shows plotly's toolbar; no button of it covers any line
    of the map's title (it sat over the title's first line)."""
    page = phone_map
    plot = page.query_selector(".lt-plot .nsewdrag")
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function("() => { const b = document.querySelector('.lt-plot .modebar');"
                           " return b && getComputedStyle(b).opacity === '1'; }")
    drawn = page.evaluate(BOXES_JS)
    assert drawn["buttons"] and drawn["title"], drawn
    covered = [(b, t) for b in drawn["buttons"] for t in drawn["title"] if _overlap(b, t)]
    assert not covered, (covered, drawn["lines"])
