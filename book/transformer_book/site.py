"""The site's plumbing: how a figure gets from a kernel into the built book's pages.

:func:`setup_plotly` makes figures show up in the Jupyter Book build. A plain kernel's
default renderer, ``plotly_mimetype``, emits a MIME type that myst-nb drops; this adds a
``text/html`` rendering (no plotly.js inside: the book's Sphinx extension
``book/_ext/book_figures.py`` serves one copy from ``_static``), drawn once the page has
loaded (:func:`after_page_load`). Colab, VS Code and other front ends keep their own
renderer. plotly is imported lazily, on first use.
"""
from __future__ import annotations

RENDERER = "book_html"


def default_renderer() -> str | None:
    """The plotly renderer in use, or None without plotly."""
    try:
        import plotly.io as pio
    except ImportError:
        return None
    return pio.renderers.default


def after_page_load(html: str) -> str:
    """Draw a figure once the page has loaded (``DOMContentLoaded``), through the book's
    ``attentionBook.newPlot`` where the page has it.

    The book loads plotly.js with ``defer`` (book/_ext/book_figures.py), so that the text
    paints before 4.8 MB of script is parsed; deferred scripts run before
    ``DOMContentLoaded``, so ``Plotly`` exists when the figures are drawn. The site's
    ``figures.js`` (a module: run in order with them) defines ``attentionBook.newPlot``, which fits the layout to a
    phone's width before plotly draws it; elsewhere ``Plotly.newPlot`` draws it as written.
    """
    import re

    def wait(match):
        start, body, end = match.groups()
        if "Plotly.newPlot" in body:
            body = body.replace("Plotly.newPlot(", "((window.attentionBook || {}).newPlot || Plotly.newPlot)(")
            body = f'document.addEventListener("DOMContentLoaded", function () {{{body}}});'
        return start + body + end

    return re.sub(r"(<script[^>]*>)(.*?)(</script>)", wait, html, flags=re.DOTALL)


def setup_plotly() -> str:
    """Register the book's HTML renderer where the default is ``plotly_mimetype``.

    In a plain Jupyter kernel the default becomes ``book_html``, one output with both the
    plotly MIME type (JupyterLab still draws the native figure) and ``text/html`` (what the
    book build, myst-nb, renders). Anywhere else (Colab's ``colab``, ``vscode``, a
    terminal's ``browser``) nothing changes. Returns the renderer now in use.
    """
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer, PlotlyRenderer

    class BookHtmlRenderer(MimetypeRenderer):
        """One output carrying both the plotly MIME type (JupyterLab draws that) and
        ``text/html`` without plotly.js (the book draws that with ``_static/plotly.min.js``)."""

        def to_mimebundle(self, fig_dict):
            bundle = PlotlyRenderer(config={"displaylogo": False}).to_mimebundle(fig_dict)
            html = pio.to_html(
                fig_dict, include_plotlyjs=False, include_mathjax=False, full_html=False,
                auto_play=False, validate=False, config={"responsive": True, "displaylogo": False})
            bundle["text/html"] = after_page_load(html)
            return bundle

    pio.renderers[RENDERER] = BookHtmlRenderer()
    # Only a plain Jupyter kernel's default ("plotly_mimetype", whose output myst-nb drops)
    # is replaced; "+notebook" variants would embed 4.8 MB of plotly.js per notebook.
    if (pio.renderers.default or "").split("+")[0] == "plotly_mimetype":
        pio.renderers.default = RENDERER
    return pio.renderers.default
