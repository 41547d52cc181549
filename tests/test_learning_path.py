"""The learning path reads as a book for a learner, and moved sections keep their addresses.

* The pages of the learning path (the parts of ``_toc.yml`` before "Under the hood") name
  nothing of the project's workshop in their text or their cells' outputs: no issue
  numbers, no ``docs/notes/`` paths, no test names, no folder of the machine that built
  them (its home, temporary or cache folders, the checkout).
* Every section that moved to another page (``book/_ext/book_moved.py``) is reached
  from its old address; every page the book has ever had is still there.
"""
from __future__ import annotations

import importlib.util
import re
import tempfile
from html import unescape
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OPTIONAL_PART = "Under the hood"

# Every page of the book's table of contents before the learning path and the "Under the
# hood" part were set apart: their addresses are held by readers and search engines.
OLD_PAGES = ["book/intro", "book/01_introduction", "book/02_data", "book/03_attention",
             "book/04_multi_head", "book/05_positional", "book/06_model", "book/07_training",
             "book/08_decoding", "book/09_attention_explorer", "book/10_full_model",
             "book/11_table3", "book/appendix_results"]


def learning_path() -> list[str]:
    """The page names of _toc.yml's root and of every part before the optional one."""
    pages = []
    for line in (REPO / "_toc.yml").read_text().splitlines():
        if "caption:" in line and OPTIONAL_PART in line:
            break
        found = re.match(r"^\s*(?:root|-\s*file)\s*:\s*(\S+)", line)
        if found:
            pages.append(found.group(1))
    return pages


def machine_folders() -> list[str]:
    """Folders of the machine that built the book, as they would appear in a path."""
    return sorted({str(Path.home()) + "/", tempfile.gettempdir().rstrip("/") + "/",
                   str(REPO) + "/", "/tmp/"})


INTERNAL = [re.compile(r"\bissues? #?\d+", re.I), re.compile(r"docs/notes/"),
            re.compile(r"tests/test_\w+")]


def page_text(html: str) -> str:
    """A page's text as a reader can see it: the prose, the code cells and their outputs,
    the figures' embedded text (inline scripts stay; tags go)."""
    html = re.sub(r"<(link|meta)\b[^>]*>", " ", html)
    return unescape(re.sub(r"<[^>]+>", " ", html))


def workshop_names(text: str) -> list[str]:
    found = [m.group(0) for pattern in INTERNAL for m in pattern.finditer(text)]
    found += [folder for folder in machine_folders() if folder in text]
    return found


def test_the_check_finds_the_workshop():
    text = page_text(f"<p>see issue 31 and <code>docs/notes/x.md</code></p><pre>"
                     f"tests/test_fast.py {Path.home()}/.cache/transformer/runs</pre>")
    found = workshop_names(text)
    assert {"issue 31", "docs/notes/", "tests/test_fast", str(Path.home()) + "/"} <= set(found), found
    assert workshop_names(page_text("<p>Issue on page, tests pass, ~/.cache</p>")) == []


def test_the_learning_path_is_the_parts_before_the_optional_one():
    pages = learning_path()
    assert pages[0] == "book/intro" and "book/12_conclusion" in pages, pages
    assert not [p for p in pages if "hood" in p or "appendix" in p], pages


@pytest.mark.parametrize("page", learning_path())
def test_the_learning_path_names_nothing_of_the_workshop(site_dir, page):
    text = page_text((site_dir / f"{page}.html").read_text())
    found = workshop_names(text)
    assert not found, f"{page}.html shows {sorted(set(found))}"


def moved() -> dict[str, dict[str, str]]:
    path = REPO / "book" / "_ext" / "book_moved.py"
    spec = importlib.util.spec_from_file_location("book_moved", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MOVED


MOVES = [(old, anchor, target) for old, anchors in moved().items()
         for anchor, target in anchors.items()]


def ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_every_page_the_book_has_had_is_still_there(site_dir):
    missing = [p for p in OLD_PAGES if not (site_dir / f"{p}.html").is_file()]
    assert not missing, missing


@pytest.mark.parametrize("old,anchor,target", MOVES)
def test_a_moved_section_is_at_its_new_address_and_gone_from_its_old(site_dir, old, anchor,
                                                                    target):
    page, _, new_anchor = target.partition("#")
    assert new_anchor in ids((site_dir / f"{page}.html").read_text()), target
    old_html = (site_dir / f"{old}.html").read_text()
    assert anchor not in ids(old_html), f"{old}#{anchor} is still there: nothing moved"
    assert "data-moved" in old_html and "moved_sections.js" in old_html, old


def test_old_addresses_of_moved_sections_reach_them(open_page, base_url):
    """Opened at its old address, each moved section's page ends at its new address."""
    assert MOVES, "no moved sections listed"
    opened = None
    for old, anchor, target in MOVES:
        if opened is None:
            opened = open_page(f"{old}.html#{anchor}")
        else:
            opened.page.goto(f"{base_url}/{old}.html#{anchor}", wait_until="load")
        page, _, new_anchor = target.partition("#")
        opened.page.wait_for_url(f"{base_url}/{page}.html#{new_anchor}", timeout=60_000)
        assert opened.page.evaluate("(id) => !!document.getElementById(id)", new_anchor)
    assert not opened.errors, opened.errors
