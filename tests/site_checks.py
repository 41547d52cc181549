"""What the tests of the built book share (tests/test_site_*.py): its pages, screenshots,
and a figure's state read in the page and its slider moved with the mouse.

The site is built once per session in quick mode (``BOOK_QUICK=1``) into
``_build/quick/_build/html``, unless ``BOOK_HTML`` names an existing build (for example
``BOOK_HTML=_build/html`` after ``make book``), and served on 127.0.0.1: the site, its
server, the browser and ``open_page`` are fixtures of tests/conftest.py, which marks every
test using them ``browser``. Screenshots go to ``_build/screenshots/<test name>/``. What
the tests read in a page is a probe, a function expression in ``tests/js/probes/NAME.js``
(linted as the page's code), read by :func:`probe`; what probes share, as whether an
element is shown, is declared once in ``tests/js/probes/lib/`` and named by the probe on a
``/* global NAME */`` line.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBES = Path(__file__).resolve().parent / "js" / "probes"
HELPERS = PROBES / "lib"        # what probes share: NAME.js declares function NAME
USES = re.compile(r"^/\* global ([\w, ]+) \*/$")


def _code(path: Path) -> list[str]:
    """The lines of a probe's file less its opening comment lines (which say what it
    returns)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("//"):
        lines.pop(0)
    return lines


def with_helpers(source: str) -> str:
    """The function expression ``source`` with the shared helpers its ``/* global NAME */``
    lines name (as ESLint reads them; ``tests/js/probes/lib/NAME.js``) declared in front of
    it: one function expression of one argument, for ``page.evaluate``."""
    lines = source.strip().splitlines()
    names = []
    while lines and (used := USES.match(lines[0].strip())):
        names += [n.strip() for n in used[1].split(",") if n.strip()]
        lines.pop(0)
    body = "\n".join(lines).strip()
    if not names:
        return body
    helpers = "\n".join(line for n in names for line in _code(HELPERS / f"{n}.js")
                        if not line.startswith("/* exported"))
    return f"(arg) => {{\n{helpers}\nreturn ({body})(arg);\n}}"


@functools.cache
def probe(name: str) -> str:
    """The function expression of ``tests/js/probes/NAME.js``, for ``page.evaluate``: the
    file less its opening comment lines, with the shared helpers it names
    (:func:`with_helpers`)."""
    return with_helpers("\n".join(_code(PROBES / f"{name}.js")))


SCREENSHOTS = REPO / "_build" / "screenshots"


def _toc_pages() -> list[str]:
    """The site's pages in _toc.yml order, as paths relative to the html root."""
    text = (REPO / "_toc.yml").read_text()
    files = re.findall(r"^\s*(?:root|-\s*file)\s*:\s*(\S+)", text, flags=re.M)
    return [f"{f.rsplit('.', 1)[0] if f.endswith(('.md', '.ipynb')) else f}.html" for f in files]


PAGES = _toc_pages()


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


def wait_for(page, expression: str, arg=None, timeout: float | None = None) -> bool:
    """``page.wait_for_function``: True once ``expression`` holds, False where it still does
    not after ``timeout`` ms (the page's default if None) (Playwright's TimeoutError: the
    assertions after the wait say what is off); any other error raises."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        page.wait_for_function(expression, arg=arg, timeout=timeout)
    except PlaywrightTimeout:
        return False
    return True


def figures(page) -> list[dict]:
    return page.evaluate(probe("figures"))


def _figure_handle(page, title_words: str):
    handle = page.evaluate_handle(probe("figure_titled"), title_words)
    assert handle.json_value() is not None, f"no figure titled ...{title_words}..."
    return handle


def figure_state(page, title_words: str) -> dict:
    """Title, active slider step, visible traces and their data of one figure."""
    gd = _figure_handle(page, title_words)
    return page.evaluate(probe("figure_state"), gd)


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


PHONE = (390, 844)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# A spy on the page's own thread, installed on the object ``spy`` it is given: the requests
# the page posts to its Workers (``spy.posted``) and every WebAssembly module it compiles
# or starts (``spy.wasm``): the translator's search and the training panel run in Workers.
WORKER_SPY = """(spy) => {
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (m, ...rest) {
    spy.posted.push(m && m.type);
    return post.call(this, m, ...rest);
  };
  for (const name of ['compile', 'compileStreaming', 'instantiate', 'instantiateStreaming']) {
    const f = WebAssembly[name];
    if (f) WebAssembly[name] = function (...args) { spy.wasm.push(name); return f.apply(this, args); };
  }
  for (const name of ['Module', 'Instance']) {
    WebAssembly[name] = new Proxy(WebAssembly[name], {construct(target, args, made) {
      spy.wasm.push(name); return Reflect.construct(target, args, made); }});
  }
  return spy;
}"""
# The files the page's own thread fetched. Chromium lists a module Worker's own scripts
# here too (its script graph); what the Worker fetches itself is in its own timeline.
PAGE_FETCHED = "() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)"
