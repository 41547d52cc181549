"""Chapter 4's training panel, checked in Chromium on the quick-mode site (tests/conftest.py
builds and serves it; book/_ext/book_training.py, book/_ext/static/training: loader.js,
panel.js, worker.js, tfjs.js, model.js).

* Nothing of the panel (its code, TensorFlow.js) is downloaded until the reader opens it;
  the button announces the true size (what pressing it fetches), and the download is at
  most 1.5 MB gzip-compressed.
* The page's model is the package's: from the same weights, the loss and every gradient
  of a fixed batch agree with PyTorch's (``GRAD_TOLERANCE``), and ten Adam steps on the
  same batches give the same loss curve (``CURVE_TOLERANCE``), asked of a worker of the
  test's own (tests/js/workers/training_parity.js) beside the panel's.
* Training with the panel's starting settings lowers the loss and reaches 99% sequence
  accuracy on reversal within ``TRAIN_STEPS``, the cross-attention turns from a blur into
  the anti-diagonal; the Worker trains, the page's own thread runs none of it (a spy) and
  draws only in its frames, the curve once a frame whatever number of messages came
  (how long it takes, and how long its frames wait, is benchmarks/book/page_training.py's
  to measure: the suite asserts no durations).
* A typed input is reversed and its maps shown; a bad one gets a message; a second visit
  downloads no TensorFlow.js; the panel fits a 390 px phone.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
import torch

from helpers import toy_config
from site_checks import PAGE_FETCHED, WORKER_SPY, probe
from transformer.loss import LabelSmoothingLoss
from transformer.model import Transformer

# the book's extensions import each other by name from book/_ext, as Sphinx loads them
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import book_training  # noqa: E402  (the panel's extension: what the panel downloads)
import book_figures  # noqa: E402  (whether a page loads the figures' modules)

PAGE = "book/04_multi_head.html"
LETTERS = "abcdefghij"
# float32 on both sides, different orders of summation: the loss agrees within 1e-6 of
# itself; every gradient within 1e-5 of its largest entry, plus 1e-7 (GRAD_FLOOR) for the
# key projections' biases, whose gradient is zero in exact arithmetic (softmax ignores a
# constant added to a query's every score: PyTorch leaves rounding noise of about 1e-9);
# the loss after each of ten Adam steps within 1e-5 of itself. Observed (Chromium 156,
# TensorFlow.js 4.22 wasm): loss 2e-7, gradients 9e-7 of their largest entry, curve 9e-7
LOSS_TOLERANCE, GRAD_TOLERANCE, GRAD_FLOOR, CURVE_TOLERANCE = 1e-6, 1e-5, 1e-7, 1e-5
# 99% sequence accuracy on reversal with the panel's starting settings within this many
# steps (the same seed, so the same steps on any machine: book/results/page_training.json
# has 150, and the time they take on a quiet machine); room for another TensorFlow.js
TRAIN_STEPS = 300


def open_panel(opened):
    page = opened.page
    page.click("button.tp-open")
    page.wait_for_function("() => window.attentionBook.training && !document.querySelector('.tp-train')"
                           ".disabled || document.querySelector('.tp-error')", timeout=120_000)
    assert not page.query_selector(".tp-error"), page.text_content(".tp-status")
    return page


@pytest.fixture(scope="module")
def panel(new_page):
    """Chapter 4 with the training panel opened (one page for the module)."""
    opened = new_page(PAGE)
    open_panel(opened)
    yield opened
    opened.close()


PARITY_WORKER = Path(__file__).resolve().parent / "js" / "workers" / "training_parity.js"


@pytest.fixture(scope="module")
def parity(panel, base_url):
    """``parity(kind, data)``: the answer of the test's own worker (PARITY_WORKER), served
    beside the panel's worker so that its imports are the staged page code's."""
    url = f"{base_url}/_static/book/training/parity_worker.js"
    panel.context.route(url, lambda route: route.fulfill(
        body=PARITY_WORKER.read_text(encoding="utf-8"), content_type="text/javascript"))
    return lambda kind, data: panel.page.evaluate(probe("parity_ask"), [url, kind, data])


# ------------------------------------------------------------------ download
def test_nothing_is_downloaded_until_the_panel_is_opened(open_page, site_dir, base_url):
    opened = open_page(PAGE)
    opened.page.wait_for_timeout(1500)
    # the modules the page's figures loaded already are not downloaded again
    figures = book_figures.has_figures((site_dir / PAGE).read_text(encoding="utf-8"))
    listed = book_training.download_list(site_dir / "_static", figures=figures)
    tfjs = {name for name, f in listed["tfjs"].items() if f["part"] != "wasm"}   # SIMD
    fetched = [u for u in opened.requests if "/_static/tfjs/" in u or "/training/panel" in u
               or "/training/worker" in u]
    assert not fetched, f"fetched before the panel was opened: {fetched}"
    static = site_dir / "_static"
    files = [static / "tfjs" / f for f in tfjs] + [static / name for group in ("code", "worker")
                                                    for name in listed[group]]
    size = sum(f.stat().st_size for f in files)
    assert size == book_training.download_bytes(listed)
    label = opened.page.text_content("button.tp-open")
    assert f"{size / 2**20:.1f} MiB" in label, label
    compressed = sum(len(gzip.compress(f.read_bytes())) for f in files)
    assert compressed <= 1.5e6, f"{compressed:,} bytes gzip-compressed"
    before = len(opened.requests)
    page = open_panel(opened)
    asked = [u for u in opened.requests if "/_static/tfjs/" in u]
    assert {u.rsplit("/", 1)[1] for u in asked} == tfjs, asked   # SIMD: one module
    # what pressing the button fetched is what it announced
    after = [u for u in opened.requests[before:] if u.startswith(base_url)]
    got = sum((static / u.split("/_static/", 1)[1]).stat().st_size for u in after)
    assert got == int(opened.page.evaluate("() => document.getElementById('train-panel').dataset.bytes")), after
    assert not opened.errors and not opened.outside, (opened.errors, opened.outside)
    assert "wasm SIMD" in page.text_content(".tp-status")


def test_a_browser_without_webassembly_is_told_so(open_page):
    opened = open_page(PAGE, init_script="delete window.WebAssembly;")
    opened.page.click("button.tp-open")
    opened.page.wait_for_selector(".tp-error")
    assert "WebAssembly" in opened.page.text_content(".tp-status")
    assert not [u for u in opened.requests if "/_static/tfjs/" in u]


# ------------------------------------------------------------------- parity
def torch_model(layers: int, heads: int, width: int, positional: str) -> Transformer:
    """The package's plain model in the panel's configuration (no dropout, shared
    embeddings, 4 special ids + 10 letters); ``positional="none"``: its tables zeroed."""
    cfg = toy_config(vocab_size=14, d_model=width, heads=heads, layers=layers, dropout=0.0,
                     max_len=9)
    model = Transformer(cfg)
    if positional == "none":
        model.src_pos.table.zero_()
        model.tgt_pos.table.zero_()
    return model


def page_config(model: Transformer, positional: str) -> dict:
    c = model.cfg
    return {"vocab": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "d_ff": c.d_ff,
            "n_encoder_layers": c.n_encoder_layers, "n_decoder_layers": c.n_decoder_layers,
            "positional": positional, "max_len": c.max_len}


def page_weights(model: Transformer) -> dict:
    """Every parameter by its state_dict name, flattened: what the page's model loads."""
    return {name: p.detach().flatten().tolist() for name, p in model.named_parameters()}


def reversal_batch(size: int, seed: int) -> dict:
    src = torch.randint(4, 14, (size, 8), generator=torch.Generator().manual_seed(seed))
    tgt = src.flip(1)
    tgt_in = torch.cat([torch.full((size, 1), 1), tgt], 1)
    tgt_out = torch.cat([tgt, torch.full((size, 1), 2)], 1)
    return {"src": src, "tgtIn": tgt_in, "tgtOut": tgt_out}


def as_page_batch(batch: dict) -> dict:
    size, length = batch["src"].shape
    return {**{k: v.tolist() for k, v in batch.items()}, "size": size, "length": length}


CONFIGS = [(2, 4, 32, "sinusoidal"), (1, 1, 16, "none"), (1, 2, 64, "sinusoidal")]


@pytest.mark.parametrize("layers, heads, width, positional", CONFIGS)
def test_the_pages_loss_and_every_gradient_are_pytorchs(parity, layers, heads, width,
                                                        positional):
    model = torch_model(layers, heads, width, positional)
    batch = reversal_batch(16, seed=layers * 10 + heads)
    loss = LabelSmoothingLoss(0.0, pad_id=0)(model(batch["src"], batch["tgtIn"]),
                                             batch["tgtOut"])
    loss.backward()
    got = parity("gradients", {"config": page_config(model, positional),
                               "weights": page_weights(model), "batch": as_page_batch(batch)})
    assert abs(got["loss"] - loss.item()) <= LOSS_TOLERANCE * loss.item(), (got["loss"], loss)
    expected = dict(model.named_parameters())
    assert set(got["grads"]) == set(expected), set(got["grads"]) ^ set(expected)
    for name, p in expected.items():
        page_grad = torch.tensor(got["grads"][name]).view_as(p)
        scale = p.grad.abs().max().item()
        assert scale > 0, f"{name} has no gradient in PyTorch"
        error = (page_grad - p.grad).abs().max().item()
        assert error <= GRAD_TOLERANCE * scale + GRAD_FLOOR, f"{name}: {error:.2e} against {scale:.2e}"


def test_the_same_weights_and_batches_give_the_same_loss_curve(parity):
    model = torch_model(2, 4, 32, "sinusoidal")
    weights = page_weights(model)
    batches = [reversal_batch(32, seed=100 + i) for i in range(10)]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = LabelSmoothingLoss(0.0, pad_id=0)
    expected = []
    for b in batches:
        loss = loss_fn(model(b["src"], b["tgtIn"]), b["tgtOut"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    got = parity("steps", {"config": page_config(model, "sinusoidal"), "weights": weights,
                           "lr": 3e-3, "batches": [as_page_batch(b) for b in batches]})["losses"]
    assert expected[-1] < expected[0]                       # the steps did something
    worst = max(abs(g - e) / e for g, e in zip(got, expected))
    assert worst <= CURVE_TOLERANCE, list(zip(got, expected))


# ------------------------------------------------------------------ training
# A spy on the page's own thread while the panel trains: the requests it posts to its
# Workers, any WebAssembly it compiles or starts (TensorFlow.js's backend would), whether
# it has TensorFlow.js, and where it draws on a canvas: inside a requestAnimationFrame
# callback or not, and how many times a frame it draws the curve (the frame's timestamp
# names the frame; it is never compared as a time).
PANEL_SPY = """() => {
    const spy = window.panelSpy_ = (""" + WORKER_SPY + """)(
      {posted: [], wasm: [], outside: 0, curves: {}, maps: {}});
    let frame = null;                                // the frame whose callback is running
    const raf = window.requestAnimationFrame;
    window.requestAnimationFrame = (callback) => raf.call(window, (t) => {
      frame = String(t);
      try { return callback(t); } finally { frame = null; }
    });
    const fillRect = CanvasRenderingContext2D.prototype.fillRect;
    CanvasRenderingContext2D.prototype.fillRect = function (...args) {
      if (frame === null) spy.outside += 1;
      else {
        const count = this.canvas.classList.contains('tp-curve') ? spy.curves : spy.maps;
        count[frame] = (count[frame] || 0) + (args[0] === 0 && args[1] === 0 ? 1 : 0);
      }
      return fillRect.apply(this, args);
    };
}"""
MAPS = """() => { const m = window.attentionBook.training.maps;
    return {what: m.what, cross: m.maps['decoder.cross'], rows: m.rows, cols: m.cols,
            canvases: Array.from(document.querySelectorAll('.tp-map canvas'), (c) => c.width)}; }"""


def mirror_weight(maps: dict) -> float:
    """The most weight any cross-attention head puts on the mirror position, on average
    over the output positions (query t reads source position L - 1 - t)."""
    length = len(maps["cols"])
    best = 0.0
    for heads in maps["cross"]:
        for w in heads:
            best = max(best, sum(w[t * length + length - 1 - t] for t in range(length)) / length)
    return best


@pytest.fixture(scope="module")
def trained(panel):
    """The panel's starting settings trained to 99%, with :data:`PANEL_SPY` on the page's
    own thread meanwhile."""
    page = panel.page
    page.locator(".tp-train").scroll_into_view_if_needed()
    page.evaluate("""() => { window.mapSteps_ = []; const p = window.attentionBook.training;
        const show = p.showMaps.bind(p);
        p.showMaps = (maps, src, tgtIn, what) => { window.mapSteps_.push(what); show(maps, src, tgtIn, what); }; }""")
    page.evaluate(PANEL_SPY)
    page.click(".tp-train")
    page.wait_for_function("() => window.attentionBook.training.maps", timeout=60_000)
    before = page.evaluate(MAPS)
    page.wait_for_function("() => window.attentionBook.training.result || document.querySelector('.tp-error')",
                           timeout=600_000)
    assert not page.query_selector(".tp-error"), page.text_content(".tp-status")
    page.wait_for_function("() => !window.attentionBook.training.frame")   # the last maps drawn
    return {"spy": page.evaluate("() => window.panelSpy_"),
            "has_tf": page.evaluate("() => typeof window.tf !== 'undefined'"),
            "page_fetched": page.evaluate(PAGE_FETCHED),
            "result": page.evaluate("() => window.attentionBook.training.result"),
            "progress": page.evaluate("() => window.attentionBook.training.progress"),
            "settings": page.evaluate("() => window.attentionBook.training.settings()"),
            "map_steps": page.evaluate("() => window.mapSteps_"),
            "before": before, "after": page.evaluate(MAPS),
            "status": page.text_content(".tp-status")}


def test_training_in_the_page_learns_reversal(trained):
    s, r, progress = trained["settings"], trained["result"], trained["progress"]
    assert s["task"] == "reverse" and s["length"] == 8 and s["symbols"] == 10, s
    assert r["reached"], f"99% not reached: {trained['status']}"
    assert r["reached"]["step"] <= TRAIN_STEPS, trained["status"]
    assert r["accuracy"] >= 0.99 and "reached 99%" in trained["status"], trained["status"]
    assert progress[-1]["loss"] < progress[0]["loss"] / 10, (progress[0], progress[-1])
    # the maps were redrawn while it trained, and the cross-attention learnt the mirror
    assert len(trained["map_steps"]) >= 5, trained["map_steps"]
    assert "after 0 steps" in trained["before"]["what"], trained["before"]["what"]
    assert mirror_weight(trained["before"]) < 0.3, mirror_weight(trained["before"])   # 1/8: a blur
    assert mirror_weight(trained["after"]) > 0.5, mirror_weight(trained["after"])
    heads = s["layers"] * s["n_heads"]
    canvases = trained["after"]["canvases"]
    assert len(canvases) == 3 * heads and min(canvases) > 50, canvases


def test_the_worker_trains_and_the_page_only_draws_in_its_frames(trained):
    """What keeps the page responsive while it trains, checked structurally (its frames'
    gaps are benchmarks/book/page_training.py's to time, beside a control page): the
    training is asked of the Worker, and the page's own thread has no TensorFlow.js, starts
    no WebAssembly and fetches no TensorFlow.js; it draws on its canvases only in
    requestAnimationFrame callbacks (a message from the worker only queues a drawing), the
    curve at most once a frame however many messages came before it, and it did draw the
    curve and the maps as the training went."""
    spy = trained["spy"]
    assert "train" in spy["posted"], spy["posted"]
    assert not trained["has_tf"] and spy["wasm"] == [], spy["wasm"]
    # Chromium lists the module worker's own script graph (worker.js, model.js) in the
    # page's resource timing too; TensorFlow.js, which only the worker loads, is not.
    own = [path for path in trained["page_fetched"] if "/_static/tfjs/" in path]
    assert not own, f"the page's own thread fetched the worker's parts: {own}"
    assert spy["outside"] == 0, f"{spy['outside']} canvas drawings outside a frame"
    assert max(spy["curves"].values()) == 1, {t: n for t, n in spy["curves"].items() if n > 1}
    assert len(spy["curves"]) >= 5 and len(spy["maps"]) >= 5, (len(spy["curves"]), len(spy["maps"]))


def test_a_typed_input_is_reversed_and_its_attention_shown(panel, trained):
    page = panel.page
    for text in ("badcfehg", "jjaaiibc", "gbjahcdi"):
        page.fill("input.tp-input", text)
        page.click("button.tp-run")
        page.wait_for_function("(t) => window.attentionBook.training.maps.what.includes(t)", arg=text)
        shown = page.text_content(".tp-output")
        assert shown == f"→ {text[::-1]}", (text, shown)
        maps = page.evaluate(MAPS)
        assert maps["cols"] == list(text) and maps["rows"][1:] == list(text[::-1]), maps
    page.fill("input.tp-input", "abc")
    page.click("button.tp-run")
    assert "exactly 8 letters" in page.text_content(".tp-output")
    page.fill("input.tp-input", "abcdefgz")
    page.click("button.tp-run")
    assert "exactly 8 letters from a to j" in page.text_content(".tp-output")
    assert not panel.errors, panel.errors


def test_a_second_visit_downloads_no_tensorflow(panel, trained, served):
    page = panel.page
    before = len(served)
    page.reload(wait_until="load")
    open_panel(panel)
    asked = served[before:]
    assert any(p.endswith("04_multi_head.html") for p in asked), asked      # it was a visit
    again = [p for p in asked if "/_static/tfjs/" in p]
    assert not again, f"downloaded again: {again}"


PHONE = (390, 844)


def test_the_panel_fits_a_phone(new_page):
    """At 390x844 every control lies on the screen, the page does not scroll sideways,
    and each attention map is drawn at least 100 px wide (cells of 10 px or more)."""
    opened = new_page(PAGE, viewport=PHONE)
    try:
        page = open_panel(opened)
        page.select_option("select[name=layers]", "2")
        page.click(".tp-train")
        page.wait_for_function("() => window.attentionBook.training.progress.length >= 2", timeout=120_000)
        page.click(".tp-stop")
        page.wait_for_function("() => window.attentionBook.training.result", timeout=60_000)
        page.wait_for_timeout(300)
        status = page.text_content(".tp-status")         # stopped: not yet worth an input
        assert "stopped after" in status and "Type an input below" not in status, status
        assert "Press Train" in status, status
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
            '#train-panel select, #train-panel button, #train-panel input, #train-panel canvas'),
            (e) => { const b = e.getBoundingClientRect(); return [e.tagName, e.className, b.left, b.right, b.width]; })""")
        outside = [b for b in boxes if b[2] < -0.5 or b[3] > PHONE[0] + 0.5]
        assert not outside, outside
        maps = [b for b in boxes if b[0] == "CANVAS" and b[1] != "tp-curve"]
        assert len(maps) == 3 * 2 * 4 and min(b[4] for b in maps) >= 100, maps
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= PHONE[0], f"the page scrolls sideways ({width} px wide)"
        panel_box = page.query_selector("#train-panel")
        folder = Path(__file__).resolve().parents[1] / "_build" / "screenshots" / "page_training"
        folder.mkdir(parents=True, exist_ok=True)
        panel_box.screenshot(path=str(folder / "panel-phone.png"))
        assert not opened.errors, opened.errors
    finally:
        opened.close()
