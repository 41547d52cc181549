"""The built book, checked in a real browser (Debian's Chromium driven by Playwright).

The site is built once per session in quick mode (``BOOK_QUICK=1``) into
``_build/quick/_build/html``, unless ``BOOK_HTML`` names an existing build (for example
``BOOK_HTML=_build/html`` after ``make book``). It is served on 127.0.0.1 and every page
of ``_toc.yml`` is opened; each must show no console error, load nothing from outside
127.0.0.1 (plotly.js and MathJax are served from ``_static``), draw every plotly figure,
give every figure a title, titled axes and titled colour bars, and typeset its maths.
Sliders are moved with the mouse: the figure must show another head/layer afterwards.
Screenshots go to ``_build/screenshots/<test name>/`` and their paths are printed.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
QUICK_OUT = REPO / "_build" / "quick"
SCREENSHOTS = REPO / "_build" / "screenshots"

# Figures whose slider must change what is shown: (page, words in the figure's title).
SLIDER_FIGURES = [
    ("book/04_multi_head.html", "Decoder attention over the source"),
    ("book/04_multi_head.html", "Encoder self-attention"),
    ("book/03_attention.html", "under each mask"),
    ("book/09_attention_explorer.html", "Attention explorer"),   # the trained model's heads
]


def _toc_pages() -> list[str]:
    """The site's pages in _toc.yml order, as paths relative to the html root."""
    text = (REPO / "_toc.yml").read_text()
    files = re.findall(r"^\s*(?:root|-\s*file)\s*:\s*(\S+)", text, flags=re.M)
    return [f"{f.rsplit('.', 1)[0] if f.endswith(('.md', '.ipynb')) else f}.html" for f in files]


PAGES = _toc_pages()


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def site_dir() -> Path:
    given = os.environ.get("BOOK_HTML")
    if given and (Path(given) / "index.html").is_file():
        return Path(given).resolve()
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        pytest.skip("jupyter-book is not installed (make setup)")
    shutil.rmtree(QUICK_OUT, ignore_errors=True)    # Sphinx would skip unchanged chapters
    env = {**os.environ, "BOOK_QUICK": "1", "OMP_NUM_THREADS": "1"}
    shared = REPO.parent / "shared" / "data"               # offline corpora, as in conftest.py
    if "TRANSFORMER_DATA" not in env and shared.is_dir():
        env["TRANSFORMER_DATA"] = str(shared)
    cmd = [str(jb), "build", str(REPO), "--path-output", str(QUICK_OUT), "-W", "--keep-going"]
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        pytest.fail(f"book build failed ({' '.join(cmd)}):\n{(run.stdout + run.stderr)[-6000:]}")
    return QUICK_OUT / "_build" / "html"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def base_url(site_dir):
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (make setup installs Debian's chromium as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


class OpenPage:
    """A page opened on the local server, with what it logged and what it asked for."""

    def __init__(self, browser, url: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(90_000)           # 2 shared cores, 4.8 MB of plotly.js
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.route("**/*", self._route)
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"
        self.page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
            ".every((d) => d.querySelector('svg.main-svg'))")
        # MathJax typesets asynchronously: wait for it where the page loads it.
        self.page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                           " ? MathJax.startup.promise.then(() => true) : false")

    def _route(self, route):
        url = route.request.url
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture
def open_page(browser, base_url):
    opened = []

    def _open(path: str) -> OpenPage:
        p = OpenPage(browser, f"{base_url}/{path}")
        opened.append(p)
        return p

    yield _open
    for p in opened:
        p.close()


def screenshot(target, request, capsys, name: str) -> Path:
    """Save a PNG of a whole page (full length) or of one element handle."""
    folder = SCREENSHOTS / request.node.originalname
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    with capsys.disabled():
        print(f"\n  screenshot: {path.relative_to(REPO)}", end="")
    return path


# --------------------------------------------------------- figure inspection
FIGURES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout || {};
  const text = (t) => (t && typeof t === 'object') ? (t.text || '') : (t || '');
  const sub = fl._subplots || {};
  const axes = {};
  for (const id of [...(sub.xaxis || []), ...(sub.yaxis || [])]) {
    const name = id[0] + 'axis' + id.slice(1);
    if (fl[name] && fl[name].visible === false) continue;     // a hidden axis (a diagram)
    axes[name] = text(fl[name] && fl[name].title);
  }
  const colorbars = (gd.data || [])
    .filter((t) => ['heatmap', 'contour', 'histogram2d'].includes(t.type) && t.showscale !== false)
    .map((t) => text(t.colorbar && t.colorbar.title));
  const box = gd.getBoundingClientRect();
  return {title: text(fl.title), axes, colorbars, drawn: !!gd.querySelector('svg.main-svg'),
          width: box.width, height: box.height, sliders: (gd.layout.sliders || []).length};
})"""


def figures(page) -> list[dict]:
    return page.evaluate(FIGURES_JS)


def _figure_handle(page, title_words: str):
    handle = page.evaluate_handle(
        """(words) => Array.from(document.querySelectorAll('.js-plotly-plot'))
             .find((gd) => (gd._fullLayout.title.text || '').includes(words)) || null""",
        title_words)
    assert handle.json_value() is not None, f"no figure titled ...{title_words}..."
    return handle


def figure_state(page, title_words: str) -> dict:
    """Title, active slider step, visible traces and their data of one figure."""
    gd = _figure_handle(page, title_words)
    return page.evaluate(
        """(gd) => ({title: gd._fullLayout.title.text,
                     active: gd._fullLayout.sliders.length ? gd._fullLayout.sliders[0].active : null,
                     visible: gd.data.map((t, i) => t.visible === false ? -1 : i).filter((i) => i >= 0),
                     z: JSON.stringify(gd.data.filter((t) => t.visible !== false).map((t) => t.z || t.y))})""",
        gd)


def move_slider(page, title_words: str, step: int | None = None) -> tuple[dict, dict]:
    """Click step ``step`` of the first slider of the figure titled ``...title_words...``
    with the mouse, as a reader would; returns the figure's state before and after.
    ``step=None``: the last step, or the first when the last is already active."""
    before = figure_state(page, title_words)
    gd = _figure_handle(page, title_words)
    gd.scroll_into_view_if_needed()
    ticks = gd.query_selector_all(".slider-container .slider-tick-rect")   # one per step
    rail = gd.query_selector(".slider-container .slider-rail-touch-rect")
    assert ticks and rail, f"figure ...{title_words}... has no slider"
    if step is None:
        step = 0 if before["active"] == len(ticks) - 1 else len(ticks) - 1
    tick_box, rail_box = ticks[step].bounding_box(), rail.bounding_box()
    page.mouse.click(tick_box["x"] + tick_box["width"] / 2, rail_box["y"] + rail_box["height"] / 2)
    page.wait_for_timeout(400)
    return before, figure_state(page, title_words)


# --------------------------------------------------------------------- tests
@pytest.mark.parametrize("path", PAGES)
def test_page(path, open_page, request, capsys):
    opened = open_page(path)
    page = opened.page
    screenshot(page, request, capsys, Path(path).stem)

    assert not opened.outside, f"{path} requested outside 127.0.0.1: {opened.outside}"
    assert not opened.errors, f"{path} console errors: {opened.errors}"

    figs = figures(page)
    if Path(path).name[:2].isdigit():                      # a chapter notebook
        assert figs, f"{path}: no plotly figure on the page"
        # plotly.js (4.8 MB) must not block the text from painting: loaded with defer
        deferred = page.evaluate("() => Array.from(document.scripts).filter((s) => "
                                 "s.src.includes('plotly')).map((s) => s.defer)")
        assert deferred and all(deferred), f"{path}: plotly.js not deferred: {deferred}"
    for i, fig in enumerate(figs):
        where = f"{path} figure {i + 1} ({fig['title'] or 'untitled'})"
        assert fig["drawn"] and fig["width"] > 100 and fig["height"] > 100, f"{where} not drawn"
        assert fig["title"].strip(), f"{where} has no title"
        untitled = [axis for axis, title in fig["axes"].items() if not title.strip()]
        assert not untitled, f"{where}: axes without a title: {untitled}"
        assert all(t.strip() for t in fig["colorbars"]), f"{where}: colour bar without a title"

    has_math = page.evaluate("() => document.querySelectorAll('.math').length")
    if has_math:
        typeset = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        assert typeset, f"{path}: {has_math} maths elements but none typeset by MathJax"


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


def test_install_cells_use_the_configured_repository():
    """_config.yml holds the repository URL; the chapters' Colab install cells repeat it."""
    url = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", (REPO / "_config.yml").read_text(),
                    flags=re.M).group(1)
    chapters = sorted((REPO / "book").glob("[0-9][0-9]_*.ipynb"))
    assert chapters
    for nb_path in chapters:
        nb = json.loads(nb_path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        first = "".join(code[0]["source"])
        assert "google.colab" in first and f"git+{url}" in first, nb_path.name
        assert "nbval-skip" in code[0]["metadata"].get("tags", []), nb_path.name
        assert not any(c.get("outputs") for c in code), f"{nb_path.name} has committed outputs"
