"""Chapter 9's explorer with the reader's own model (book/_ext/static/explorer_files.js),
checked in Chromium on the quick-mode site (tests/conftest.py builds and serves it).

A model that ``transformer.tools.export`` wrote, chosen with the page's file picker,
replaces the book's: the page says so, with the chosen model's size, and translates
token for token as the package's greedy search does with that model. A folder with a
file missing, a manifest that is not JSON, a cut weights.bin or a changed byte in a graph
gets one message naming the file, and nothing is translated.
"""
from __future__ import annotations

import shutil

import pytest
import torch

from transformer.config import ModelConfig
from transformer.decoding import build_source_batch, greedy_decode
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer
from transformer.tools.export import export_model

PAGE = "book/09_attention_explorer.html"
FILES = ("manifest.json", "encoder.onnx", "decoder.onnx", "weights.bin", "spm.model")
SENTENCES = ["A dog runs.", "Two men are playing football in the park.", "A woman reads."]


@pytest.fixture(scope="module")
def own_model(site_dir, tmp_path_factory):
    """A model of its own shape (1+1 layers, 2 heads, d_model 32, untrained: not the
    book's) with the book's vocabulary, exported as `python -m transformer export` does."""
    tokenizer = Tokenizer.from_serialized((site_dir / "_static" / "model" / "spm.model").read_bytes())
    torch.manual_seed(5)
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64,
                      n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=24)
    model = Transformer(cfg).eval()
    folder = tmp_path_factory.mktemp("own") / "export"
    export_model(model, tokenizer, folder, source="own.pt", weights="fp32")
    return model, tokenizer, folder


def choose(page, folder, names=FILES):
    page.set_input_files("input.lt-own-files", [str(folder / n) for n in names if (folder / n).exists()])


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
        page.evaluate("() => { window.liveTranslator.result = null; }")
        page.click("button.lt-go")
        page.wait_for_function("() => window.liveTranslator.result || document.querySelector('.lt-error')",
                               timeout=120_000)
        got = page.evaluate("() => window.liveTranslator.result")
        assert got and got["greedy"]["ids"] == ids, (sentence, got and got["greedy"]["ids"], ids)
    assert "loaded your model" in page.text_content(".lt-own-status")
    requested = [u for u in opened.requests if "/_static/model/" in u]
    assert not requested, f"the book's model was downloaded: {requested}"
    assert not opened.errors and not opened.outside, (opened.errors, opened.outside)


def _damaged(folder, tmp_path, how: str):
    bad = tmp_path / how
    shutil.copytree(folder, bad)
    if how == "missing":
        (bad / "decoder.onnx").unlink()
    elif how == "not-json":
        (bad / "manifest.json").write_text("{ this is not json")
    elif how == "cut":
        data = (bad / "weights.bin").read_bytes()
        (bad / "weights.bin").write_bytes(data[: len(data) // 2])
    elif how == "changed":
        data = bytearray((bad / "encoder.onnx").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (bad / "encoder.onnx").write_bytes(bytes(data))
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
