"""Serve plotly.js and MathJax from the book's own ``_static`` folder (no CDN).

* plotly.js: copied from the installed plotly wheel (``plotly/package_data/plotly.min.js``)
  and loaded with ``defer`` on every page with a figure, so that the text paints first;
  each figure's inline script waits for ``DOMContentLoaded`` (see
  :func:`transformer_book.viz.setup_plotly`, which leaves plotly.js out of each figure).
* ``static/figures`` (ES modules, with the shared ``static/lib`` that ``page_code``
  stages), after plotly.js: each figure is drawn through ``attentionBook.newPlot``
  (``figures/redraw.js``), which fits the layout to a phone's width
  (``lib/phone_layout.js``: legends and colour bars below the plot, panels stacked, titles
  wrapped, controls on screen), draws it anew when its width crosses the phone's switch,
  and moves apart texts that collide once drawn (``figures/tidy.js``).
  ``figures/book.css``: the book's own styles.
* MathJax 3: the es5 build from the npm registry's ``mathjax`` package. It is fetched
  once with ``npm pack mathjax@<version>`` into ``.cache/mathjax/`` (git-ignored) unless
  ``MATHJAX_DIR`` names an unpacked ``es5`` folder, then the files the page needs
  (``tex-chtml.js``, CHTML fonts, TeX extensions, UI) are copied to ``_static/mathjax``
  and ``mathjax_path`` points there. Without npm and without a cache this warns (an error
  under ``-W``) and leaves Sphinx's CDN default.

* The plotly MIME type: :func:`transformer_book.viz.setup_plotly` emits each figure as one
  output holding both ``application/vnd.plotly.v1+json`` (for JupyterLab) and
  ``text/html`` (for this site). myst-nb renders every MIME type of an output before
  choosing one and warns about the plotly one; here it becomes an empty placeholder, so
  the ``text/html`` sibling is chosen silently, while a figure *without* ``text/html``
  still fails a ``-W`` build ("No mime type available in priority list").

Enabled from ``_config.yml``: ``sphinx: local_extensions: {book_figures: book/_ext}``.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

MATHJAX_VERSION = "3.2.2"
# Parts of MathJax's es5 build that tex-chtml.js loads (everything else stays out).
MATHJAX_PARTS = ["tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions",
                 "ui", "a11y/assistive-mml.js"]


def _plotly_js() -> Path:
    import plotly
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _mathjax_es5(srcdir: Path) -> Path | None:
    """An unpacked MathJax ``es5`` folder: $MATHJAX_DIR, the cache, or a fresh npm pack."""
    from npm_cache import npm_package
    env = os.environ.get("MATHJAX_DIR")
    if env:
        return Path(env) if (Path(env) / "tex-chtml.js").is_file() else None
    package = npm_package(srcdir, "mathjax", MATHJAX_VERSION,
                          keep=lambda m: m.startswith("package/es5/")
                          and not m.startswith("package/es5/sre/"),
                          ready=lambda p: (p / "es5" / "tex-chtml.js").is_file())
    return None if package is None else package / "es5"


def copy_libraries(srcdir: Path, static: Path) -> bool:
    """plotly.js into ``static`` and MathJax's parts into ``static/mathjax``; False when no
    MathJax can be found (plotly.js is copied all the same)."""
    shutil.copy2(_plotly_js(), static / "plotly.min.js")
    es5 = _mathjax_es5(srcdir)
    if es5 is None:
        return False
    for part in MATHJAX_PARTS:
        src, dst = es5 / part, static / "mathjax" / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    return True


def _stage(app, config) -> None:
    """``static/figures`` and the libraries; MathJax from ``_static`` when it was found."""
    from page_code import stage
    if stage(app, config, "figures", copy_libraries, "book_figures: no MathJax found "
             "(install npm or set MATHJAX_DIR); pages will load MathJax from a CDN"):
        config.mathjax_path = "mathjax/tex-chtml.js"


PLOTLY_MIME = "application/vnd.plotly.v1+json"
FIGURES_ENTRY = "figures/figures.js"     # the figures' module, under static/


def has_figures(body: str) -> bool:
    """Whether a page's ``body`` holds a plotly figure: it loads plotly.js and
    :data:`FIGURES_ENTRY`."""
    return "plotly-graph-div" in body


def _quiet_plotly_mime() -> None:
    from docutils import nodes
    from myst_nb.core.render import NbElementRenderer

    original = NbElementRenderer.render_mime_type
    if getattr(original, "_book_figures", False):
        return

    def render_mime_type(self, data):
        if data.mime_type == PLOTLY_MIME:
            return [nodes.comment("", "plotly figure: see the text/html output")]
        return original(self, data)

    render_mime_type._book_figures = True
    NbElementRenderer.render_mime_type = render_mime_type


def _page_scripts(app, pagename, templatename, context, doctree) -> None:
    """plotly.js on pages with figures only; drop scripts that appear twice (sphinx-thebe
    adds its ``const THEBE_JS_URL`` block twice with launch buttons: a console error)."""
    if has_figures(context.get("body", "")):
        # Deferred: the page's text paints first; the figures' inline scripts wait for
        # DOMContentLoaded (transformer_book.site.after_page_load), which comes after it.
        app.add_js_file("plotly.min.js", priority=100, defer="defer")
        # attentionBook.newPlot: each figure's layout fitted to a phone's width (a module:
        # it runs after plotly.js, deferred too, and before DOMContentLoaded)
        app.add_js_file(f"book/{FIGURES_ENTRY}", priority=101, type="module")
    scripts = context.get("script_files")
    if scripts:
        seen, unique = set(), []
        for js in scripts:
            # inline scripts come as filename None or "": same body, same script
            key = (getattr(js, "filename", None) or "",
                   repr(sorted(getattr(js, "attributes", {}).items())))
            if key not in seen:
                seen.add(key)
                unique.append(js)
        scripts[:] = unique


def _redirect_icon(app, exception) -> None:
    """The root ``index.html`` that Jupyter Book writes is a bare redirect: browsers then ask
    for ``/favicon.ico``, which the site does not have. Give it the book's icon."""
    index = Path(app.outdir) / "index.html"
    icon = Path(app.outdir) / "_static" / Path(app.config.html_favicon or "").name
    if exception is not None or not index.is_file() or not app.config.html_favicon \
            or not icon.is_file():
        return
    text = index.read_text(encoding="utf-8")
    if text.lstrip().startswith("<meta") and 'rel="icon"' not in text:
        index.write_text(f'<!DOCTYPE html>\n<html><head>{text.strip()}\n'
                         f'<link rel="icon" href="_static/{icon.name}" />\n</head></html>\n',
                         encoding="utf-8")


def setup(app):
    from page_code import METADATA
    _quiet_plotly_mime()
    app.setup_extension("page_code")
    app.connect("build-finished", _redirect_icon)
    app.connect("config-inited", _stage, priority=900)
    app.connect("html-page-context", _page_scripts, priority=900)
    app.add_css_file("book/figures/book.css")
    return METADATA
