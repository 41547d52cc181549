"""The book's figures in Chromium, as a reader uses them: sliders moved with the mouse
show another head or layer, the paper's Figures 1 and 2 (transformer_book/diagram.py) are
clean diagrams linked to the book's sections and to the source, and phone_layout.js labels
axes with numbers and every row (tests/site_checks.py: the site and the figure helpers)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from site_checks import PHONE, _figure_handle, _overlap, move_slider, probe, screenshot


# Figures whose slider must change what is shown: (page, words in the figure's title).
SLIDER_FIGURES = [
    ("book/04_multi_head.html", "Decoder attention over the source"),
    ("book/04_multi_head.html", "Encoder self-attention"),
    ("book/03_attention.html", "under each mask"),
    ("book/09_attention_explorer.html", "Attention explorer"),   # the trained model's heads
]


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


DIAGRAM_JS = probe("diagrams")


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


def _the_diagram(page, request, capsys, name: str) -> dict:
    """The page's one diagram (its blocks and texts), screenshotted as ``name``."""
    diagrams = page.evaluate(DIAGRAM_JS)
    assert len(diagrams) == 1, diagrams
    figure = page.query_selector("figure.book-diagram")
    figure.scroll_into_view_if_needed()
    screenshot(figure, request, capsys, name)
    return diagrams[0]


@pytest.mark.parametrize("viewport", [(1280, 900), PHONE])
def test_figure_1_is_a_clean_diagram(viewport, open_page, site_dir, request, capsys):
    """Chapter 1's Figure 1 (transformer_book/diagram.py): at 1280 and 390 px no two of
    its texts overlap, each block's name and file lie inside the block, every text inside
    the drawing, and each block links a page of the book and its source file on GitHub."""
    opened = open_page("book/01_introduction.html", viewport=viewport)
    d = _the_diagram(opened.page, request, capsys, f"figure1-{viewport[0]}")
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
    d = _the_diagram(opened.page, request, capsys, f"figure2-{path.split('/')[-1][:2]}-{viewport[0]}")
    assert len(d["blocks"]) == blocks, d["blocks"]
    _clean_diagram(d, viewport)
    for block in d["blocks"]:
        section, source = block["links"]
        name, _, anchor = section.partition("#")
        html = (site_dir / "book" / name).read_text(encoding="utf-8")
        assert not anchor or f'id="{anchor}"' in html, section
        assert re.fullmatch(r"https://github\.com/\S+\.py#L\d+", source), source
    # each label clear of its box's border, not only inside it (a file:line touched both)
    tight = [(text, gap) for block in d["blocks"] for text, gap in _gaps(block) if gap < LABEL_GAP]
    assert not tight, tight
    assert not opened.errors, opened.errors


LABEL_GAP = 3          # px on the screen between a box's label and its border, at least


def _gaps(block: dict) -> list[tuple[str, float]]:
    """Each text of a drawn block (DIAGRAM_JS) and its smallest distance to the border."""
    left, top, right, bottom = block["rect"]
    return [(text, min(b[0] - left, b[1] - top, right - b[2], bottom - b[3]))
            for text, b in zip(block["labels"], block["texts"])]


AXES_JS = probe("log_axis_labels")


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


def test_explorer_cross_attention_rows_are_the_predicted_tokens(open_page):
    """Chapter 9's explorer as built: for every sentence, the rows of encoder-decoder
    attention are labelled by the token each row predicts, the decoder's input (the rows of
    its self-attention) moved one to the left, then what the last row predicts (⟨/s⟩ when
    the translation ended), and the axis title says so."""
    opened = open_page("book/09_attention_explorer.html")
    figure = _figure_handle(opened.page, "Attention explorer").as_element()
    menu = opened.page.evaluate(probe("explorer_menu"), figure)
    by_label = {m["label"]: m for m in menu}
    sentences = [label.split(": ")[0] for label in by_label if label.endswith("encoder-decoder attention")]
    assert len(sentences) >= 3, list(by_label)
    for sentence in sentences:
        cross = by_label[f"{sentence}: encoder-decoder attention"]
        decoder = by_label[f"{sentence}: decoder self-attention (masked)"]
        rows = lambda m: [label.split(":", 1)[1] for label in m["y"]]  # noqa: E731
        assert rows(decoder)[0] == "⟨s⟩" and rows(cross)[:-1] == rows(decoder)[1:], (sentence, rows(cross))
        assert rows(cross)[-1] == "⟨/s⟩" or len(rows(cross)) > 20, (sentence, rows(cross))
        assert "predicts" in cross["title"] and "predicts" not in decoder["title"], cross["title"]
    assert not opened.errors, opened.errors


PAPER_BESIDE_JS = probe("paper_beside_model")


def test_chapter_9_draws_the_papers_figures_beside_the_model_on_a_phone(open_page, request, capsys):
    """At 390 px, each of the paper's Figures 3 and 4 redrawn in chapter 9 stands above
    this model's lines for the same sentence (book/_ext/static/lib/phone_layout.js stacks
    the two panels), each panel the screen's width less its margins: the left one the
    paper's words and lines (transformer_book/paper_figures.py), titled as the paper's and
    attributed, the other this model's words with its lines."""
    from transformer_book import paper_figures as pf

    opened = open_page("book/09_attention_explorer.html", viewport=PHONE)
    found = opened.page.evaluate(PAPER_BESIDE_JS, "beside this model")
    assert len(found) == 2, [f["titles"] for f in found]
    for fig, number in zip(found, (3, 4)):
        paper, model = fig["panels"]
        assert fig["titles"][0].startswith("the paper: layer 5 of 6"), fig["titles"]
        assert fig["titles"][1].startswith("this model: layer"), fig["titles"]
        assert "Vaswani et al. 2017" in fig["subtitle"]
        assert paper["words"] == [list(pf.FIGURES[number].tokens)] * 2
        assert paper["lines"] >= 1 and model["lines"] >= 1
        assert model["words"][0][:-1] == list(pf.FIGURES[number].tokens)[:-1]
        assert paper["box"][3] <= model["box"][1], "the panels are not stacked on a phone"
        for panel in (paper, model):
            assert panel["box"][0] >= 0 and panel["box"][2] <= PHONE[0], panel["box"]
            assert panel["box"][2] - panel["box"][0] >= 280, panel["box"]
    figure = _figure_handle(opened.page, "Figure 4").as_element()
    figure.scroll_into_view_if_needed()
    screenshot(figure, request, capsys, "09_attention_explorer-figure-4-phone")
    assert not opened.errors, opened.errors
