"""Chapter 9's explorer with the reader's own model (book/_ext/static/translator/own_model.js),
checked in Chromium on the quick-mode site (tests/conftest.py builds and serves it).

A model that ``transformer.tools.export`` wrote, chosen with the page's file picker,
replaces the book's: the page says so, with the chosen model's size, and translates
token for token as the package's greedy search does with that model. A folder with a
file missing, a manifest that is not JSON, a cut weights.bin or a changed byte in a graph
gets one message naming the file, and nothing is translated. A graph the runtime cannot
read although its manifest lists it as it is leaves the book's model translating; the box
says what loading a model downloads, and brings the book's model back.
"""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import torch

from helpers import toy_config
from transformer.decoding import build_source_batch, greedy_decode
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer
from transformer.tools.export import export_model
from transformer.tools.manifest import MANIFEST, part, read_manifest

PAGE = "book/09_attention_explorer.html"
SENTENCES = ["A dog runs.", "Two men are playing football in the park.", "A woman reads."]


@pytest.fixture(scope="module")
def own_model(site_dir, tmp_path_factory):
    """A model of its own shape (1+1 layers, 2 heads, d_model 32, untrained: not the
    book's) with the book's vocabulary, exported as `python -m transformer export` does."""
    book = site_dir / "_static" / "model"
    tokenizer = Tokenizer.from_serialized((book / part(read_manifest(book), "tokenizer")).read_bytes())
    torch.manual_seed(5)
    cfg = toy_config(vocab_size=tokenizer.vocab_size, heads=2, layers=1, dropout=0.0, max_len=24)
    model = Transformer(cfg).eval()
    folder = tmp_path_factory.mktemp("own") / "export"
    export_model(model, tokenizer, folder, source="own.pt", weights="fp32")
    return model, tokenizer, folder


def choose(page, folder):
    page.set_input_files("input.lt-own-files", sorted(str(f) for f in folder.iterdir()))


def test_the_explorer_translates_with_the_readers_model(open_page, own_model):
    model, tokenizer, folder = own_model
    opened = open_page(PAGE)
    page = opened.page
    choose(page, folder)
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=180_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    status = page.text_content(".lt-status")
    assert status.startswith("your model ready") and "1+1 layers, 2 heads, d_model 32" in status, status
    src = build_source_batch([tokenizer.encode(s) for s in SENTENCES], model.cfg.pad_id,
                             model.cfg.eos_id, model.cfg.max_len)
    expected = greedy_decode(model, src)
    for sentence, ids in zip(SENTENCES, expected):
        page.fill("input.lt-input", sentence)
        page.evaluate("() => { window.attentionBook.translator.result = null; }")
        page.click("button.lt-go")
        page.wait_for_function("() => window.attentionBook.translator.result || document.querySelector('.lt-error')",
                               timeout=120_000)
        got = page.evaluate("() => window.attentionBook.translator.result")
        assert got and got["greedy"]["ids"] == ids, (sentence, got and got["greedy"]["ids"], ids)
    assert "loaded your model" in page.text_content(".lt-own-status")
    requested = [u for u in opened.requests if "/_static/model/" in u]
    assert not requested, f"the book's model was downloaded: {requested}"
    assert not opened.errors and not opened.outside, (opened.errors, opened.outside)


def _damaged(folder, tmp_path, how: str):
    bad = tmp_path / how
    shutil.copytree(folder, bad)
    manifest = read_manifest(bad)
    file = {p: bad / part(manifest, p) for p in ("encoder", "decoder", "weights")}
    if how == "missing":
        file["decoder"].unlink()
    elif how == "not-json":
        (bad / MANIFEST).write_text("{ this is not json")
    elif how == "cut":
        data = file["weights"].read_bytes()
        file["weights"].write_bytes(data[: len(data) // 2])
    elif how == "changed":
        data = bytearray(file["encoder"].read_bytes())
        data[len(data) // 2] ^= 0xFF
        file["encoder"].write_bytes(bytes(data))
    elif how == "cut-and-listed":          # cut short, and the manifest says so: it passes
        data = file["encoder"].read_bytes()[:5000]      # every check but the runtime's
        file["encoder"].write_bytes(data)
        manifest["files"][file["encoder"].name].update(
            bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        (bad / MANIFEST).write_text(json.dumps(manifest))
    return bad


@pytest.mark.parametrize("how, words", [
    ("missing", "lacks decoder.onnx"),
    ("not-json", "manifest.json is not JSON"),
    ("cut", "weights.bin has"),
    ("changed", "encoder.onnx does not match manifest.json's checksum"),
])
def test_a_damaged_model_gets_one_message(open_page, own_model, tmp_path, how, words):
    _, _, folder = own_model
    opened = open_page(PAGE)
    page = opened.page
    choose(page, _damaged(folder, tmp_path, how))
    page.wait_for_selector(".lt-own-status.lt-error", timeout=60_000)
    message = page.text_content(".lt-own-status")
    assert message.startswith("Your model could not be loaded: ") and words in message, message
    assert "\n" not in message.strip()
    assert page.is_hidden("form.lt-form"), "a damaged model must not be offered for translation"
    assert not opened.errors, opened.errors


def test_a_model_the_runtime_cannot_read_leaves_the_books_model_working(open_page, own_model, tmp_path):
    """The book's model loaded, then an export whose encoder is cut short but whose manifest
    matches it: the box says what was wrong (the runtime could not read the graph), and the
    book's model still translates (it was "Cannot read properties of null" until a reload)."""
    _, _, folder = own_model
    opened = open_page(PAGE)
    page = opened.page
    page.click("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden])", timeout=180_000)
    choose(page, _damaged(folder, tmp_path, "cut-and-listed"))
    page.wait_for_selector(".lt-own-status.lt-error", timeout=120_000)
    message = page.text_content(".lt-own-status")
    assert message.startswith("Your model could not be loaded: ") and "could not be read" in message, message
    assert page.is_visible("form.lt-form")
    page.fill("input.lt-input", "A dog runs.")
    page.evaluate("() => { window.attentionBook.translator.result = null; }")
    page.click("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.result || document.querySelector('.lt-status.lt-error')",
                           timeout=120_000)
    assert page.evaluate("() => window.attentionBook.translator.result.greedy.ids.length") > 0
    assert page.text_content(".lt-status").startswith("model ready"), page.text_content(".lt-status")
    assert not [e for e in opened.errors if "postMessage" in e or "null" in e], opened.errors


def test_the_box_names_the_runtime_download_and_brings_the_books_model_back(open_page, own_model, site_dir):
    """The box says that running a model of one's own downloads the runtime (its size, as
    the build lists it); once one runs, a button brings the book's model back."""
    import sys
    from pathlib import Path
    extensions = str(Path(__file__).resolve().parents[1] / "book" / "_ext")
    if extensions not in sys.path:            # they import each other by name, as in Sphinx
        sys.path.insert(0, extensions)
    import book_translator
    listed = book_translator.download_list(site_dir / "_static")
    runtime = sum(f["bytes"] for g in ("runtime", "code") for f in listed[g].values())
    model, tokenizer, folder = own_model
    opened = open_page(PAGE)
    page = opened.page
    box = page.text_content(".lt-own")
    assert f"runtime ({runtime / 2**20:.1f} MiB)" in box, box
    assert page.is_hidden("button.lt-book-model")
    choose(page, folder)
    page.wait_for_selector("button.lt-book-model:not([hidden])", timeout=180_000)
    assert page.text_content(".lt-status").startswith("your model ready")
    page.click("button.lt-book-model")
    page.wait_for_function("() => document.querySelector('.lt-status').textContent.startsWith('model ready')",
                           timeout=180_000)
    assert page.is_hidden("button.lt-book-model")
    page.fill("input.lt-input", "A dog runs.")
    page.evaluate("() => { window.attentionBook.translator.result = null; }")
    page.click("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.result", timeout=120_000)
    assert not opened.errors and not opened.outside, (opened.errors, opened.outside)
