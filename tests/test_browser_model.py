"""The model running in the reader's browser (chapter 9's box), checked in Chromium.

On the quick-mode site (tests/conftest.py builds and serves it): the page's BPE encoder
gives sentencepiece's ids, typing test sentences gives the token ids of the package's own
greedy and beam-4 search on the same checkpoint, the heatmap shows the weights of
``record_attention`` within 1e-4, the slider changes the head, bad input gets a message,
nothing leaves 127.0.0.1, and a page the reader has not asked to translate downloads no
model bytes.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from transformer.data import load_corpus
from transformer.decoding import beam_search, build_source_batch, greedy_decode
from transformer.fast import record_attention
from transformer.inference import load_model

REPO = Path(__file__).resolve().parents[1]
PAGE = "book/09_attention_explorer.html"
MODEL_FILES = ("encoder.onnx", "decoder.onnx", "weights.bin")


@pytest.fixture(scope="module")
def exported(site_dir):
    """The checkpoint the site exported (manifest.json names it) and the manifest."""
    manifest = json.loads((site_dir / "_static" / "model" / "manifest.json").read_text())
    sys.path.insert(0, str(REPO / "book"))
    try:
        from transformer_book.runs import cache_root
    finally:
        sys.path.pop(0)
    checkpoint = cache_root() / manifest["source"]
    assert checkpoint.is_file(), f"the site's model {checkpoint} is not in the run cache"
    model, tokenizer = load_model(checkpoint)
    return model, tokenizer, manifest


@pytest.fixture(scope="module")
def sentences(shared_data):
    return load_corpus("multi30k-en-de", "test", root=shared_data).src


@pytest.fixture(scope="module")
def loaded(new_page):
    """Chapter 9 with the model downloaded by pressing its button (one page per module)."""
    opened = new_page(PAGE)
    page = opened.page
    page.click("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=180_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    yield opened
    opened.close()


def type_and_translate(page, sentence: str) -> dict:
    page.fill("input.lt-input", sentence)
    page.evaluate("() => { window.liveTranslator.result = null; }")
    page.click("button.lt-go")
    page.wait_for_function("() => window.liveTranslator.result && window.liveTranslator.maps "
                           "&& !document.querySelector('button.lt-go').disabled "
                           "|| document.querySelector('.lt-error')", timeout=120_000)
    return page.evaluate("""() => { const r = window.liveTranslator.result;
        return {greedy: r.greedy.ids, beam: r.beam.ids, source: r.source,
                shown: Array.from(document.querySelectorAll('.lt-output .lt-text'),
                                  (e) => e.textContent)}; }""")


def test_a_page_not_asked_to_translate_downloads_no_model_bytes(open_page, exported, site_dir):
    opened = open_page(PAGE)
    opened.page.wait_for_timeout(1500)
    fetched = [u for u in opened.requests if "/_static/model/" in u or "/_static/ort/" in u]
    assert not fetched, f"model or runtime fetched without a click: {fetched}"
    _, _, manifest = exported
    size = sum(manifest["files"][f]["bytes"] for f in MODEL_FILES)
    size += sum(f.stat().st_size for f in (site_dir / "_static" / "ort").glob("ort*"))
    label = opened.page.text_content("button.lt-load")
    assert f"{size / 2**20:.1f} MiB" in label, label       # the whole download, before it
    assert not opened.errors and not opened.outside


# Characters outside the vocabulary: sentencepiece makes one <unk> of each run of them.
UNKNOWN_RUNS = ["🙂🙂🙂", "I like 🙂🙂 and 🍕!", "你好，世界", "日本語のテキスト",
                "Hello 世界 and Привет мир", "naïve café 🙂 ok", "a🙂b🙂🙂c", "🙂 🙂"]


def test_the_page_tokenizer_gives_sentencepieces_ids(loaded, exported, sentences):
    _, tokenizer, _ = exported
    chosen = sentences[:200] + UNKNOWN_RUNS
    got = loaded.page.evaluate("(ss) => ss.map((s) => window.liveTranslator.model.bpe.encode(s))",
                               chosen)
    expected = [tokenizer.encode(s) for s in chosen]
    wrong = [(s, g, e) for s, g, e in zip(chosen, got, expected) if g != e]
    assert not wrong, f"{len(wrong)} of {len(chosen)} differ, first: {wrong[0]}"


def test_typed_sentences_translate_token_for_token_as_the_package(loaded, exported, sentences):
    model, tokenizer, _ = exported
    chosen = sentences[:20]
    src = build_source_batch([tokenizer.encode(s) for s in chosen], model.cfg.pad_id,
                             model.cfg.eos_id, model.cfg.max_len)
    greedy, beam = greedy_decode(model, src), beam_search(model, src, beam_size=4, alpha=0.6)
    for i, sentence in enumerate(chosen):
        got = type_and_translate(loaded.page, sentence)
        assert got["greedy"] == greedy[i], (sentence, "greedy")
        assert got["beam"] == beam[i], (sentence, "beam 4")
        assert got["shown"] == [tokenizer.decode(greedy[i]), tokenizer.decode(beam[i])]
    assert not loaded.errors and not loaded.outside, (loaded.errors, loaded.outside)


def test_the_heatmap_shows_record_attention_and_the_slider_moves_the_head(
        loaded, exported, sentences):
    model, tokenizer, _ = exported
    page = loaded.page
    got = type_and_translate(page, sentences[3])
    cfg = model.cfg
    src = torch.tensor([got["source"]])
    with torch.no_grad(), record_attention(model) as rec:
        model(src, torch.tensor([[cfg.bos_id] + got["beam"]]))
    page.select_option("select.lt-which", "beam")
    kinds = ["encoder.self", "decoder.self", "decoder.cross"]
    slider = page.locator("input.lt-head")
    for kind in kinds:
        page.select_option("select.lt-kind", kind)
        slider.focus()
        page.keyboard.press("Home")
        expected = rec.stacked(kind)[:, 0]                       # (layers, heads, q, k)
        for step in range(cfg.n_encoder_layers * cfg.n_heads):
            shown = page.evaluate("""() => { const gd = document.querySelector('.lt-plot');
                return {z: gd.data[0].z, title: gd.layout.title.text,
                        label: document.querySelector('.lt-head-label').textContent}; }""")
            layer, head = divmod(step, cfg.n_heads)
            assert shown["label"] == f"layer {layer + 1}, head {head + 1}"
            assert f"head {head + 1}" in shown["title"]
            diff = (torch.tensor(shown["z"]) - expected[layer, head]).abs().max().item()
            assert diff <= 1e-4, (kind, layer, head, diff)
            page.keyboard.press("ArrowRight")                     # the reader moves it
    assert not loaded.errors


def test_bad_input_gets_a_message(loaded, exported):
    model, _, _ = exported
    page = loaded.page
    for text, words in (("   ", "empty"),
                        (" ".join(["word"] * (model.cfg.max_len + 5)), "positional table")):
        page.fill("input.lt-input", text)
        page.click("button.lt-go")
        page.wait_for_selector(".lt-error")
        message = page.text_content(".lt-status")
        assert words in message, message
    page.fill("input.lt-input", "A dog runs.")
    page.click("button.lt-go")
    page.wait_for_function("() => !document.querySelector('.lt-error')")
    message = page.text_content(".lt-status")               # the old error is gone too
    assert "positional table" not in message and "model ready" in message, message


def test_a_browser_without_webassembly_is_told_so(open_page):
    opened = open_page(PAGE, init_script="delete window.WebAssembly;")
    opened.page.click("button.lt-load")
    opened.page.wait_for_selector(".lt-error")
    assert "WebAssembly" in opened.page.text_content(".lt-status")
    assert not [u for u in opened.requests if "/_static/model/" in u]


def test_the_live_explorer_fits_a_phone(new_page, exported):
    opened = new_page(PAGE, viewport=(390, 844))
    try:
        page = opened.page
        page.click("button.lt-load")
        page.wait_for_selector("form.lt-form:not([hidden])", timeout=180_000)
        type_and_translate(page, "Two dogs are playing in the snow.")
        box = page.evaluate("""() => { const gd = document.querySelector('.lt-plot');
            const t = gd.querySelector('.gtitle').getBoundingClientRect();
            const c = document.querySelector('.lt-controls').getBoundingClientRect();
            return {heatmap: gd._fullLayout._size.w, title_top: t.top, controls_bottom: c.bottom,
                    labels: [gd.layout.xaxis.ticktext.length, gd.layout.yaxis.ticktext.length],
                    tokens: [gd.data[0].x.length, gd.data[0].y.length],
                    outside: Array.from(gd.querySelectorAll('.colorbar, .gtitle'), (e) => {
                      const b = e.getBoundingClientRect(); return [b.left, b.right]; })
                      .filter((b) => b[0] < -0.5 || b[1] > 390.5)};
        }""")
        assert box["heatmap"] >= 280, box              # book/_ext/static/phone_layout.js
        assert box["labels"] == box["tokens"], box       # every token labelled
        assert not box["outside"], box
        assert box["controls_bottom"] <= box["title_top"], box
        assert not opened.errors, opened.errors
    finally:
        opened.close()


def test_the_model_stays_in_the_browsers_cache(loaded):
    """A second visit (the same browser profile) loads the model without downloading it."""
    page = loaded.page
    before = len(loaded.requests)
    page.reload(wait_until="load")
    page.click("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=180_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    again = [u for u in loaded.requests[before:] if u.endswith(MODEL_FILES)]
    assert not again, f"downloaded again: {again}"


def test_the_page_doubts_as_the_package_does(loaded, exported):
    """The page's rule for "the model is unsure" is transformer.decoding.doubt's, and a
    sentence of unknown characters gets the note under its translation."""
    from transformer.decoding import doubt
    model, _, _ = exported
    unk = model.cfg.unk_id
    cases = [([900, unk], "Ein Hund."), ([900, 5, 6, unk], "Ein Hund läuft."),
             ([5, 6], "Ein Hund, der Hund Hund Hund Hund."), ([5], "über den Kreis über den Kreis."),
             ([5], "Ein Ca-Koll P P P"), ([5], "Nein, nein."), ([], ""), ([5], "a b a b a b")]
    got = loaded.page.evaluate("([cases, unk]) => cases.map(([ids, text]) => "
                               "window.translationDoubt(ids, unk, text))", [cases, unk])
    assert got == [doubt(ids, unk, text) for ids, text in cases]
    type_and_translate(loaded.page, "🙂🙂 日本語 🍕")
    assert "most of the input is unknown" in loaded.page.text_content(".lt-unsure")
