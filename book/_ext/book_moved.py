"""Sections that moved to another page keep their old addresses.

Readers and search engines hold links such as ``06_model.html#the-kv-cache``; when a
section moves (the learning path kept the paper, the "Under the hood" part took the
engineering), its old address must still reach it. :data:`MOVED` is the one list of such
moves: for each old page, the anchors that left it and the page and anchor they went to.
Each old page loads ``static/moved/moved_sections.js`` with its own part of the list in
the script tag's ``data-moved`` attribute; when the address's anchor is not on the page, the
script replaces the address with the section's new one.

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_moved: book/_ext}``.
"""
from __future__ import annotations

import json

SCRIPT = "book/moved/moved_sections.js"

# old page -> {old anchor: "new page#new anchor"}; pages are Sphinx page names.
MOVED: dict[str, dict[str, str]] = {
    "book/01_introduction": {"try-this": "book/01_introduction#exercises"},
    "book/02_data": {"try-this": "book/02_data#exercises"},
    "book/03_attention": {
        "the-explicit-path-and-the-fused-path-agree":
            "book/hood_fast_form#the-explicit-path-and-the-fused-path-agree",
        "try-this": "book/03_attention#exercises"},
    "book/04_multi_head": {"try-this": "book/04_multi_head#exercises"},
    "book/05_positional": {
        "attention-does-not-see-order": "book/05_positional#why-attention-does-not-see-order",
        "try-this": "book/05_positional#exercises"},
    "book/06_model": {
        "the-fast-form-the-same-model-faster":
            "book/hood_fast_form#a-the-fast-form-the-same-model-faster",
        **{anchor: f"book/hood_fast_form#{anchor}" for anchor in (
            "the-fused-attention-kernel", "padding-costs-no-work", "a-cheaper-dropout-mask",
            "the-projection-fused-into-the-loss", "the-kv-cache")},
        "try-this": "book/06_model#exercises"},
    "book/07_training": {
        "the-loss-inside-the-trainer": "book/hood_fast_form#the-projection-fused-into-the-loss",
        "try-this": "book/07_training#exercises"},
    "book/08_decoding": {"try-this": "book/08_decoding#exercises"},
    "book/09_attention_explorer": {"try-this": "book/09_attention_explorer#exercises"},
    "book/10_full_model": {
        **{anchor: f"book/hood_hardware#{anchor}" for anchor in (
            "bf16-autocast", "fused-attention", "several-gpus", "wmt-2014-english-german")},
        "where-to-go-next": "book/12_conclusion#where-to-go-next",
        "try-this": "book/10_full_model#exercises"},
    "book/11_table3": {"try-this": "book/11_table3#exercises"},
}


def targets(app, pagename: str) -> dict[str, str]:
    """The page's moved anchors, each with the relative address of its new home."""
    moved = {}
    for anchor, target in MOVED.get(pagename, {}).items():
        page, _, new_anchor = target.partition("#")
        moved[anchor] = app.builder.get_relative_uri(pagename, page) + "#" + new_anchor
    return moved


def _page(app, pagename, templatename, context, doctree) -> None:
    moved = targets(app, pagename)
    if moved:
        app.add_js_file(SCRIPT, type="module", **{"data-moved": json.dumps(moved)})


def setup(app):
    from page_code import serve
    app.connect("html-page-context", _page)
    return serve(app, "moved")
