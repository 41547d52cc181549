"""The model running in the reader's browser (chapter 9's box), checked in Chromium.

On the quick-mode site (tests/conftest.py builds and serves it): the page's BPE encoder
gives sentencepiece's ids, typing test sentences gives the token ids of the package's own
greedy and beam-4 search on the same checkpoint with its weights rounded as the page's
export stores them (``rounded_model``), and the fp32 model's greedy ids on at least 95% of
them; the heatmap shows the weights of ``record_attention`` within 1e-4, the slider changes
the head, bad input gets a message, nothing leaves 127.0.0.1, a page the reader has not
asked to translate downloads no model bytes, a second visit downloads nothing, the search
runs in the worker while the page paints its progress (a spy on the page's own thread), a
long sentence's map is drawn in pieces of bounded work (a spy on its Plotly calls), and a
new request cancels the old. No test here times anything (tests/test_suite.py): the
page's frames and tasks are benchmarks/book/browser_speed.py's to measure.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from transformer.data import load_corpus
from transformer.decoding import beam_search, build_source_batch, greedy_decode
from transformer.tools.export import rounded_model
from transformer.recording import record_attention
from transformer.inference import load_model
from site_checks import PAGE_FETCHED, WORKER_SPY, wait_for

REPO = Path(__file__).resolve().parents[1]
PAGE = "book/09_attention_explorer.html"
# the book's extensions import each other by name from book/_ext, as Sphinx loads them
sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_translator  # noqa: E402  (the translator's extension: what the page downloads)


def downloads(site_dir) -> dict:
    """What the translator downloads, as the build lists it (the export's manifest, the
    runtime's parts, the worker's modules): {group: {name: {bytes, sha256}}}."""
    return book_translator.download_list(site_dir / "_static")


@pytest.fixture(scope="module")
def exported(site_dir):
    """The model the site exported (manifest.json names its checkpoint) with its weights
    rounded as the export stores them (what the page computes with), the tokenizer and
    the manifest. ``exported_fp32``: the checkpoint's own model."""
    model, tokenizer, manifest = _checkpoint(site_dir)
    return rounded_model(model, manifest["weights"]), tokenizer, manifest


@pytest.fixture(scope="module")
def exported_fp32(site_dir):
    return _checkpoint(site_dir)[0]


def _checkpoint(site_dir):
    manifest = json.loads((site_dir / "_static" / "model" / "manifest.json").read_text())
    from transformer.training.cache import cache_root
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


def encode_in_page(page, sentences: list[str]) -> list[list[int]]:
    """The page's BPE ids (its worker's encoder) of sentences."""
    done = page.evaluate("(ss) => window.attentionBook.translator.ask('encode', {sentences: ss})", sentences)
    return done["ids"]


def type_and_translate(page, sentence: str) -> dict:
    page.fill("input.lt-input", sentence)
    page.evaluate("() => { window.attentionBook.translator.result = null; }")
    page.click("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.result && window.attentionBook.translator.maps "
                           "&& !document.querySelector('button.lt-go').disabled "
                           "|| document.querySelector('.lt-error')", timeout=120_000)
    return page.evaluate("""() => { const r = window.attentionBook.translator.result;
        return {greedy: r.greedy.ids, beam: r.beam.ids, source: r.source,
                shown: Array.from(document.querySelectorAll('.lt-output .lt-text'),
                                  (e) => e.textContent)}; }""")


def test_a_page_not_asked_to_translate_downloads_no_model_bytes(open_page, exported, site_dir):
    opened = open_page(PAGE)
    opened.page.wait_for_timeout(1500)
    worker = [f"/_static/{name}" for name in downloads(site_dir)["code"]]
    fetched = [u for u in opened.requests if "/_static/model/" in u or "/_static/ort/" in u
               or u.endswith("/translator/worker.js")]
    assert not fetched, f"model, runtime or worker fetched without a click: {fetched}"
    size = sum(f["bytes"] for group in downloads(site_dir).values() for f in group.values())
    label = opened.page.text_content("button.lt-load")
    assert f"{size / 2**20:.1f} MiB" in label, label       # the whole download, before it
    assert any(w.endswith("worker.js") for w in worker)
    assert not opened.errors and not opened.outside


def test_the_button_announces_what_is_fetched(open_page, site_dir, base_url):
    """The bytes the button announces are the bytes the page fetches once it is pressed:
    the model's files, the runtime's and the worker's own modules (which were not counted:
    25 KB beside an announced 18.9 MiB)."""
    opened = open_page(PAGE)
    page = opened.page
    before = len(opened.requests)
    page.click("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=180_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    static = site_dir / "_static"
    asked = {u.split("?")[0] for u in opened.requests[before:] if u.startswith(base_url)}
    fetched = sum((static / u.split("/_static/", 1)[1]).stat().st_size for u in asked)
    announced = int(page.evaluate("() => document.getElementById('live-translator').dataset.bytes"))
    assert fetched == announced, (fetched, announced, sorted(asked))
    listed = {f"{base_url}/_static/{group_dir}{name}" for group_dir, group in
              (("model/", downloads(site_dir)["model"]), ("ort/", downloads(site_dir)["runtime"]),
               ("", downloads(site_dir)["code"])) for name in group}
    assert asked == listed, asked ^ listed


# Characters outside the vocabulary: sentencepiece makes one <unk> of each run of them.
UNKNOWN_RUNS = ["🙂🙂🙂", "I like 🙂🙂 and 🍕!", "你好，世界", "日本語のテキスト",
                "Hello 世界 and Привет мир", "naïve café 🙂 ok", "a🙂b🙂🙂c", "🙂 🙂"]


def test_the_page_tokenizer_gives_sentencepieces_ids(loaded, exported, sentences):
    _, tokenizer, _ = exported
    chosen = sentences[:200] + UNKNOWN_RUNS
    got = encode_in_page(loaded.page, chosen)
    expected = [tokenizer.encode(s) for s in chosen]
    wrong = [(s, g, e) for s, g, e in zip(chosen, got, expected) if g != e]
    assert not wrong, f"{len(wrong)} of {len(chosen)} differ, first: {wrong[0]}"


@pytest.fixture(scope="module")
def typed(loaded, sentences):
    """20 test sentences typed into the box, and what the page gave for each."""
    chosen = sentences[:20]
    return chosen, [type_and_translate(loaded.page, s) for s in chosen]


def _search(model, tokenizer, chosen):
    src = build_source_batch([tokenizer.encode(s) for s in chosen], model.cfg.pad_id,
                             model.cfg.eos_id, model.cfg.max_len)
    return greedy_decode(model, src), beam_search(model, src, beam_size=4, alpha=0.6)


def test_typed_sentences_translate_token_for_token_as_the_package(loaded, exported, typed):
    """The page's search is the package's: the same ids as greedy_decode and beam_search
    on the model the page computes with (the checkpoint, weights rounded as stored)."""
    model, tokenizer, _ = exported
    chosen, pages = typed
    greedy, beam = _search(model, tokenizer, chosen)
    for i, (sentence, got) in enumerate(zip(chosen, pages)):
        assert got["greedy"] == greedy[i], (sentence, "greedy")
        assert got["beam"] == beam[i], (sentence, "beam 4")
        assert got["shown"] == [tokenizer.decode(greedy[i]), tokenizer.decode(beam[i])]
    assert not loaded.errors and not loaded.outside, (loaded.errors, loaded.outside)


def test_the_smaller_page_model_keeps_the_fp32_models_translations(exported, exported_fp32, typed):
    """The page's model stores its weights smaller (book_translator.PAGE_WEIGHTS): its greedy
    ids in the page are the fp32 checkpoint's on at least 95% of 20 test sentences."""
    _, tokenizer, manifest = exported
    chosen, pages = typed
    greedy, _ = _search(exported_fp32, tokenizer, chosen)
    same = sum(got["greedy"] == g for got, g in zip(pages, greedy))
    assert same >= 0.95 * len(chosen), f"{same} of {len(chosen)} ({manifest['weights']} weights)"


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
        assert box["heatmap"] >= 280, box              # book/_ext/static/lib/phone_layout.js
        assert box["labels"] == box["tokens"], box       # every token labelled
        assert not box["outside"], box
        assert box["controls_bottom"] <= box["title_top"], box
        page.wait_for_function("() => window.attentionBook.translator.drawn")
        labels = page.evaluate("""() => Array.from(document.querySelectorAll('.lt-plot .colorbar text'),
                                      (t) => t.textContent).filter((t) => /^[0-9.]+$/.test(t))""")
        assert "0" in labels and "1" in labels and len(labels) >= 3, labels   # not "0", "0.5"
        assert not opened.errors, opened.errors
    finally:
        opened.close()


def test_a_second_visit_downloads_nothing(loaded, served, site_dir):
    """After a translation, chapter 9 loaded again (the same browser profile) gets the
    model and the runtime from the browser's cache: the server is asked for none of them
    (it serves everything with no-cache, so the HTTP cache alone would ask again)."""
    page = loaded.page
    type_and_translate(page, "A dog runs.")
    before = len(served)
    page.reload(wait_until="load")
    page.click("button.lt-load")
    page.wait_for_selector("form.lt-form:not([hidden]), .lt-error", timeout=180_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    assert type_and_translate(page, "A dog runs.")["greedy"]
    asked = served[before:]
    assert any(p.endswith("09_attention_explorer.html") for p in asked), asked   # it was a visit
    names = tuple(n for g in ("model", "runtime") for n in downloads(site_dir)[g])
    again = [p for p in asked if p.endswith(names)]
    assert not again, f"downloaded again: {again}"


def long_input(page, sentences, tokens: int) -> str:
    """Test sentences joined, cut and padded with " a" until the page's encoder makes
    exactly ``tokens`` pieces of them."""
    words = " ".join(sentences).split()
    count = lambda n: len(encode_in_page(page, [" ".join(words[:n])])[0])  # noqa: E731
    low, high = 0, tokens                    # a word makes one piece or more
    while low < high:                        # the most words within ``tokens`` pieces
        mid = (low + high + 1) // 2
        low, high = (mid, high) if count(mid) <= tokens else (low, mid - 1)
    text = " ".join(words[:low])
    while len(encode_in_page(page, [text])[0]) < tokens:
        text += " a"
    return text


# What each frame showed in the translator's box (read as the frame begins: what it
# paints), until a translation or an error is shown; and whether the map had been handed to
# the widget by then. Frames are counted, never timed: how long they wait is
# benchmarks/book/browser_speed.py's to measure (the suite asserts no durations).
PAINTED = """() => new Promise((resolve) => {
    const shown = [];
    const frame = () => {
      const out = document.querySelector('.lt-output');
      shown.push(out ? out.textContent : '');
      if (!document.querySelector('.lt-output .lt-text, .lt-error')) return requestAnimationFrame(frame);
      resolve({shown, mapped: !!(window.attentionBook.translator && window.attentionBook.translator.maps)});
    };
    requestAnimationFrame(frame);
})"""
# A spy on the page's own thread (installed once a page, counts reset each time): the
# requests it posts to its Workers, and every WebAssembly module it compiles or starts
# (the runtime and so the search would need one to run there).
THREAD_SPY = ("() => { if (!window.threadSpy_) window.threadSpy_ = (" + WORKER_SPY
              + ")({posted: [], wasm: []}); window.threadSpy_.posted = []; "
              "window.threadSpy_.wasm = []; }")


def test_the_search_runs_in_the_worker_while_the_page_shows_its_progress(loaded, sentences):
    """A 200-token input: the translation is asked of the Worker, and the page's own thread
    runs none of it (a spy there: no WebAssembly compiled or started on it; neither the
    runtime nor the model fetched by it); meanwhile it handles
    the worker's progress, the box showing the tokens so far and the partial translation,
    in frames painted before the translations are shown. (The attention map is then drawn
    after the frame that paints the translations: one Plotly draw, not the translation.)

    It checks what the page's responsiveness rests on, not how long a frame waits, which
    depends on the machine's other work (a gap of 367 ms failed it on a loaded machine):
    benchmarks/book/browser_speed.py measures the frames, beside a control, and records
    them."""
    page = loaded.page
    text = long_input(page, sentences[100:], 200)
    assert len(encode_in_page(page, [text])[0]) == 200
    page.evaluate(THREAD_SPY)
    page.fill("input.lt-input", text)
    page.evaluate("""() => { window.seen_ = [];
        const out = document.querySelector('.lt-output');
        out.replaceChildren();                           // no translation shown before
        new MutationObserver(() => window.seen_.push(out.textContent))
          .observe(out, {childList: true, characterData: true, subtree: true}); }""")
    page.evaluate(f"() => {{ window.painted_ = ({PAINTED})(); }}")     # not awaited
    page.click("button.lt-go")
    page.wait_for_selector(".lt-output .lt-text, .lt-error", timeout=300_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    spy = page.evaluate("() => window.threadSpy_")
    assert spy["posted"] == ["translate"], spy["posted"]         # asked of the Worker
    assert spy["wasm"] == [], f"WebAssembly on the page's own thread: {spy['wasm']}"
    # (Chromium lists the module worker's own script graph, session.js and search.js, in
    # the page's resource timing too: what says where they run is the spy, not that list.)
    own = [path for path in page.evaluate(PAGE_FETCHED)
           if "/_static/ort/" in path or "/_static/model/" in path]
    assert not own, f"the page's own thread fetched the search's parts: {own}"
    seen = page.evaluate("() => window.seen_")
    progress = [t for t in seen if "tokens so far" in t]
    counts = [int(t.split(": ")[1].split()[0]) for t in progress]
    assert len(set(counts)) >= 5 and any(t.rsplit("so far: ", 1)[1] for t in progress), progress[:5]
    painted = page.evaluate("() => window.painted_")
    assert any("tokens so far" in t for t in painted["shown"]), \
        f"no frame painted the progress before the translations ({len(painted['shown'])} frames)"
    page.wait_for_function("() => window.attentionBook.translator.maps", timeout=120_000)


def test_the_translations_are_painted_before_the_map_is_drawn(loaded):
    """The attention map (one Plotly draw: the longest task a translation leaves to the
    page's own thread, and longer the longer the sentence) waits until a frame has painted
    both translations. A short sentence, whose map the worker sends right after its
    translations, would otherwise be drawn before that frame."""
    page = loaded.page
    page.fill("input.lt-input", "A dog runs.")
    page.evaluate("() => document.querySelector('.lt-output').replaceChildren()")
    page.evaluate(f"() => {{ window.painted_ = ({PAINTED})(); }}")     # not awaited
    page.click("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.maps", timeout=120_000)
    painted = page.evaluate("() => window.painted_")     # the first frame showing them
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    assert not painted["mapped"], "the map was drawn before the translations were painted"


def test_a_new_request_cancels_the_old_one(loaded, sentences):
    """A long translation still running when the reader asks for another is cancelled at
    its next step: its request ends as cancelled before its greedy search is done (it
    never reports a beam-search step), and the box shows the new sentence's translation."""
    page = loaded.page
    text = long_input(page, sentences[100:], 200)
    page.evaluate("""(text) => { window.old_ = 'running'; window.oldSearches_ = [];
        window.attentionBook.translator.ask('translate', {text}, (m) => { window.oldSearches_.push(m.search); })
          .then(() => { window.old_ = 'finished'; }, (e) => { window.old_ = e.message; }); }""",
                  text)
    page.wait_for_function("() => window.oldSearches_.length > 0 || window.old_ !== 'running'",
                           timeout=120_000)
    got = type_and_translate(page, "A dog runs.")
    assert page.evaluate("() => window.old_") == "replaced by a newer request"
    assert set(page.evaluate("() => window.oldSearches_")) == {"greedy"}
    assert got["source"][:-1] == encode_in_page(page, ["A dog runs."])[0]     # the new one


def test_the_page_doubts_as_the_package_does(loaded):
    """The page's rule for "the model is unsure" is transformer.doubt's, in Chromium, on
    the cases of tests/js/fixtures/doubt.json (which the Node tests read too), and a
    sentence of unknown characters gets the note under its translation."""
    from transformer.doubt import doubt
    fixture = json.loads((REPO / "tests" / "js" / "fixtures" / "doubt.json").read_text(encoding="utf-8"))
    got = loaded.page.evaluate("""(d) => d.cases.map((c) => { const o = c.options || {};
        return window.attentionBook.doubt(c.ids, d.unk, c.text, c.pieces,
          {source: o.source, sourcePieces: o.source_pieces, cross: o.cross}); })""", fixture)
    assert got == [doubt(c["ids"], fixture["unk"], c["text"], c["pieces"], **c.get("options", {}))
                   for c in fixture["cases"]]
    type_and_translate(loaded.page, "🙂🙂 日本語 🍕")
    assert "most of the input is unknown" in loaded.page.text_content(".lt-unsure")


def _map_state(page) -> dict:
    """What the translator's map shows: its size, its data's shape, its labels, its title,
    whether its plotting area lies inside its box, and the status line."""
    return page.evaluate("""() => { const gd = document.querySelector('.lt-plot');
        const fl = gd._fullLayout, s = fl._size, box = gd.getBoundingClientRect();
        const area = gd.querySelector('.nsewdrag').getBoundingClientRect();
        return {w: s.w, h: s.h, width: fl.width, container: gd.parentElement.clientWidth,
                rows: gd.data[0].z.length, cols: gd.data[0].z[0].length, title: fl.title.text,
                xlabels: fl.xaxis.ticktext.length, ylabels: fl.yaxis.ticktext.length,
                inside: area.left >= box.left - 0.5 && area.right <= box.right + 0.5,
                error: !!document.querySelector('.lt-error'),
                cut: Array.from(gd.querySelectorAll('svg text'), (t) => [t.textContent, t.getBoundingClientRect()])
                  .filter(([s, t]) => s.trim() && t.width && (t.left < box.left - 1 ||
                          t.right > box.right + 1 || t.top < box.top - 1 || t.bottom > box.bottom + 1))
                  .map(([s]) => s),
                status: document.querySelector('.lt-status').textContent}; }""")


def _settled_map_state(page) -> dict:
    """:func:`_map_state` once the map's width has followed its container's (a resize is
    drawn in a later frame, later still on a loaded machine), or as it is if that never
    comes (the page's wait gives up: the assertions on the state say what is off)."""
    wait_for(page, """() => { const gd = document.querySelector('.lt-plot');
        return gd && gd._fullLayout && Math.abs(gd._fullLayout.width - gd.parentElement.clientWidth) <= 2; }""")
    return _map_state(page)


def test_the_map_survives_resizes_across_the_phone_switch(new_page, exported):
    """A phone turned and a window narrowed: at 390, 844, 390, 500 and 1280 px (across the
    phone layout's switch at 600 px, twice each way) the map is drawn at the page's width,
    and a sentence translated there gets its map and no error. (plotly.react from the
    desktop layout back to the phone's failed with "axis scaling" until a reload.)"""
    _, tokenizer, _ = exported
    opened = new_page(PAGE, viewport=(390, 844))
    try:
        page = opened.page
        page.click("button.lt-load")
        page.wait_for_selector("form.lt-form:not([hidden])", timeout=180_000)
        type_and_translate(page, "Two dogs are playing in the snow.")
        sentences = ["A dog runs.", "A man rides a bike.", "Two children play football.",
                     "A woman sings on a stage.", "The cat sleeps."]
        for width, sentence in zip((390, 844, 390, 500, 1280), sentences):
            page.set_viewport_size({"width": width, "height": 844})
            page.wait_for_timeout(1500)                # the ResizeObserver and plotly's resize
            page.wait_for_function("() => window.attentionBook.translator.drawn")
            for moment in ("resized", "translated"):
                state = _settled_map_state(page)
                where = (width, moment, state)
                assert not state["error"], where
                assert state["w"] >= 200 and state["h"] >= 200, where
                assert abs(state["width"] - state["container"]) <= 2 and state["inside"], where
                assert "Your sentence" in state["title"] and not state["cut"], where
                if moment == "resized":
                    got = type_and_translate(page, sentence)
                    page.wait_for_function("() => window.attentionBook.translator.drawn")
            tokens = len(tokenizer.encode(sentence)) + 1                # EOS
            assert state["rows"] == state["cols"] == tokens, (width, state)   # encoder self
            assert got["source"][:-1] == tokenizer.encode(sentence)
            assert state["xlabels"] == state["ylabels"] == tokens, (width, state)
        assert not opened.errors, opened.errors
    finally:
        opened.close()


# A spy on the widget's calls of Plotly (installed once a page, emptied each time): for a
# draw (newPlot, react) the map's cells and the tick labels and automargin of each axis;
# for a relayout the labels it adds and whether it came in a later task than the draw
# (``draw_task``: set by the draw, cleared by a task queued behind it).
PLOTLY_SPY = """() => {
    if (!window.plotlySpy_) {
      const spy = window.plotlySpy_ = {calls: [], drawTask: false};
      const labels = (axis) => (axis && axis.tickvals ? axis.tickvals.length : null);
      for (const name of ['newPlot', 'react']) {
        const f = Plotly[name];
        Plotly[name] = function (gd, data, layout, ...rest) {
          const z = data[0].z;
          spy.calls.push({call: name, rows: z.length, cols: z[0].length,
                          xlabels: labels(layout.xaxis), ylabels: labels(layout.yaxis),
                          automargin: [layout.xaxis.automargin, layout.yaxis.automargin]});
          spy.drawTask = true;
          setTimeout(() => { spy.drawTask = false; });
          return f.call(this, gd, data, layout, ...rest);
        };
      }
      const relayout = Plotly.relayout;
      Plotly.relayout = function (gd, update, ...rest) {
        const u = update || {};
        spy.calls.push({call: 'relayout', laterTask: !spy.drawTask,
                        xlabels: u['xaxis.tickvals'] ? u['xaxis.tickvals'].length : null,
                        ylabels: u['yaxis.tickvals'] ? u['yaxis.tickvals'].length : null});
        return relayout.call(this, gd, update, ...rest);
      };
    }
    window.plotlySpy_.calls = [];
}"""
MAX_LABELS = 40                                     # map.js: tick labels an axis at most


def _draw_calls(page, text: str) -> list[dict]:
    """The widget's calls of Plotly (:data:`PLOTLY_SPY`) from pressing Translate until the
    map is drawn."""
    page.evaluate("() => { document.querySelector('select.lt-kind').value = 'encoder.self'; }")
    page.fill("input.lt-input", text)
    page.evaluate(PLOTLY_SPY)
    page.evaluate("() => { window.attentionBook.translator.result = null; window.attentionBook.translator.drawn = false; }")
    page.click("button.lt-go")
    page.wait_for_function("() => window.attentionBook.translator.drawn || document.querySelector('.lt-error')",
                           timeout=300_000)
    assert not page.query_selector(".lt-error"), page.text_content(".lt-status")
    return page.evaluate("() => window.plotlySpy_.calls")


def test_a_long_sentences_map_is_drawn_in_bounded_pieces(loaded, sentences):
    """A 255-token sentence (the longest the model takes): its map is drawn in two tasks,
    each given bounded work, and holds every weight, its labels at most 40 an axis and in
    order. It was one plotly draw of 2-3 s (a label per token, laid out by automargin):
    now the first task draws the heatmap with no tick labels and no automargin (the
    margins are computed once, map.js), and a later task adds at most ``MAX_LABELS``
    labels an axis. (What the tasks take is benchmarks/book/browser_speed.py's to time.)
    A short sentence's map is drawn in one task, its labels with it."""
    page = loaded.page
    calls = _draw_calls(page, long_input(page, sentences[100:], 255))
    draws = [c for c in calls if c["call"] != "relayout"]
    assert len(draws) == 1, calls                                  # one draw of the map
    draw = draws[0]
    assert draw["rows"] == draw["cols"] == 256, draw               # every weight, at once
    assert (draw["xlabels"], draw["ylabels"]) == (0, 0) and draw["automargin"] == [False, False], draw
    labelling = [c for c in calls[calls.index(draw) + 1:] if c["call"] == "relayout" and c["xlabels"]]
    assert labelling, f"no labels were drawn after the map: {calls}"
    labels = labelling[0]
    assert labels["laterTask"], f"the labels were drawn in the map's own task: {calls}"
    assert 10 <= labels["xlabels"] <= MAX_LABELS and 10 <= labels["ylabels"] <= MAX_LABELS, labels
    state = _map_state(page)
    assert state["rows"] == state["cols"] == 256, state            # 255 pieces and EOS
    assert 10 <= state["xlabels"] <= 40 and 10 <= state["ylabels"] <= 40, state
    ticks = page.evaluate("() => document.querySelector('.lt-plot')._fullLayout.yaxis.ticktext")
    order = [int(label.split(":")[0]) for label in ticks]
    assert order[0] == 0 and order == sorted(order), ticks
    short = _draw_calls(page, "A dog runs.")
    draws = [c for c in short if c["call"] != "relayout"]
    assert len(draws) == 1 and draws[0]["xlabels"] == draws[0]["cols"], short   # labels with it
    assert not [c for c in short if c["call"] == "relayout" and c["xlabels"]], short


def test_a_greedy_loop_gets_its_note(loaded, exported, sentences):
    """Doubt is checked on each translation shown: the worker gives each search its own
    (transformer.doubt.doubt on its text and pieces, the typed source without EOS and its
    pieces, and the encoder-decoder attention of the map); a greedy translation that loops
    beside a sound beam one gets a note naming the greedy search, and the beam one none."""
    from transformer.doubt import doubt
    model, _, _ = exported
    page = loaded.page
    typed = long_input(page, sentences[100:], 120)
    type_and_translate(page, typed)
    result = page.evaluate("""() => { const w = window.attentionBook.translator;
        const out = {source: w.result.source};
        for (const name of ['greedy', 'beam']) {
          const m = w.maps[name], cross = m.maps['decoder.cross'];
          out[name] = {text: w.result[name].text, doubt: w.result[name].doubt,
                       pieces: m.source, target: m.target,
                       cross: {dims: cross.dims, data: Array.from(cross.data)}};
        }
        return out; }""")
    for name in ("greedy", "beam"):
        got = result[name]
        expected = doubt(result["source"][:-1], model.cfg.unk_id, got["text"], got["target"][1:],
                         source=typed, source_pieces=got["pieces"][:-1], cross=got["cross"])
        assert got.get("doubt") == expected, (name, got.get("doubt"))
    looping = "die es zu sehen, die es zu sehen, die es zu sehen."
    notes = page.evaluate("""([looping, unk]) => { const w = window.attentionBook.translator;
        const line = (text) => ({text, ms: 1, ids: [], doubt: window.attentionBook.doubt([5, 6], unk, text)});
        w.show({greedy: line(looping), beam: line('Ein Hund läuft im Schnee.')},
               {greedy: 'greedy', beam: 'beam 4'});
        return Array.from(document.querySelectorAll('.lt-unsure'), (e) => e.textContent); }""",
                          [looping, model.cfg.unk_id])
    assert len(notes) == 1 and "greedy" in notes[0] and "die es zu sehen" in notes[0], notes


def test_a_sub_word_loop_gets_its_note(loaded, exported):
    """A greedy translation that loops inside a word ("Werbendendendenden...", one piece
    over and over) gets the note: the page's doubt reads the output's pieces too."""
    model, tokenizer, _ = exported
    text = "Wir werden beim Werbendendendendenkeben helfen?"
    pieces = [tokenizer.id_to_piece(i) for i in tokenizer.encode(text)]
    notes = loaded.page.evaluate("""([text, pieces, unk]) => { const w = window.attentionBook.translator;
        const line = (t, p) => ({text: t, ms: 1, ids: [], doubt: window.attentionBook.doubt([5, 6], unk, t, p)});
        w.show({greedy: line(text, pieces), beam: line('Ein Hund läuft im Schnee.', [])},
               {greedy: 'greedy', beam: 'beam 4'});
        return Array.from(document.querySelectorAll('.lt-unsure'), (e) => e.textContent); }""",
                                 [text, pieces, model.cfg.unk_id])
    from transformer.doubt import doubt
    expected = doubt([5, 6], model.cfg.unk_id, text, pieces)
    assert expected and "inside" in expected, (pieces, expected)
    assert len(notes) == 1 and "greedy" in notes[0] and expected in notes[0], notes


def test_the_maps_title_stays_readable_and_rows_name_the_predicted_token(loaded):
    """On a desktop the map's toolbar (shown while the pointer is over the map) leaves its
    title ("... layer 1, head 1") uncovered; the rows of a decoder map are named by the
    token each one predicts (its input token is the one before). On a phone its colour bar
    is labelled from 0 to 1: test_the_live_explorer_fits_a_phone."""
    page = loaded.page
    type_and_translate(page, "A dog runs.")
    page.wait_for_function("() => window.attentionBook.translator.drawn")
    page.hover(".lt-plot .nsewdrag")
    page.wait_for_timeout(300)
    boxes = page.evaluate("""() => { const gd = document.querySelector('.lt-plot');
        const b = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        return {title: b(gd.querySelector('.gtitle')), bar: b(gd.querySelector('.modebar')),
                shown: getComputedStyle(gd.querySelector('.modebar')).opacity}; }""")
    t, m = boxes["title"], boxes["bar"]
    assert not (t[0] < m[2] and m[0] < t[2] and t[1] < m[3] and m[1] < t[3]), boxes
    page.select_option("select.lt-kind", "decoder.cross")
    page.wait_for_function("() => window.attentionBook.translator.drawn")
    rows = page.evaluate("() => document.querySelector('.lt-plot').data[0].y")
    title = page.evaluate("() => document.querySelector('.lt-plot')._fullLayout.yaxis.title.text")
    assert rows[0].startswith("0:\u2192") and rows[-1].endswith("\u27e8/s\u27e9"), rows
    assert "predicts" in title, title
