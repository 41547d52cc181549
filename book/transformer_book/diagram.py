"""The paper's Figure 1 (Section 3, "Model Architecture") as an SVG drawn from one
description, each block linked to the chapter that builds it and to its source file.

:func:`architecture` lays out two columns, bottom to top as data flows: the encoder and
the decoder, each a list of :class:`Block`, the blocks of one layer framed as "N ×"; the
encoder's output (the *memory*) is routed to the decoder's block that attends over it,
and each "Add & norm" gets the residual connection around its sub-layer (Section 3.1).
Text is wrapped to its box by an estimate of its width (:func:`text_width`, generous), and
the SVG scales with its container (a ``viewBox``), so the diagram is the same at every
screen width; tests/test_book_site.py checks in Chromium that no two labels overlap and
each lies inside its box. Rendered as ``text/html`` (myst-nb puts it into the page as is,
so the links work); plain Python, no plotly.
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Sequence

# the paper's colours: embeddings pink, attention orange, add & norm yellow, feed forward
# blue, linear purple, softmax green
COLOURS = {"embedding": "#f9d3d3", "position": "#ffffff", "attention": "#fbdcae",
           "norm": "#f3f1b5", "feedforward": "#c9e3f4", "linear": "#ddd4ef", "softmax": "#cfe9cf"}
FONT, SMALL = 13, 11          # px: a block's name, its source link
LINE = 16                     # px between two lines of a name
BOX_W, PAD = 150, 7           # a block's width, the room inside its border
GAP = 18                      # px between two blocks (an arrow)
FRAME = 10                    # the "N ×" frame's margin around its blocks
HEADER = 20                   # the frame's caption row
MARGIN, GUTTER = 10, 36       # around the drawing; between the two columns
LINK, INK, MUTED = "#0b57d0", "#222222", "#555555"


@dataclass(frozen=True)
class Block:
    """One box of the figure: its name (linked to ``page``), its ``kind`` (colour; see
    COLOURS), the package file that implements it, and whether it belongs to the repeated
    layer (``layer``) and, for an "Add & norm", whether it closes a residual connection."""
    name: str
    kind: str
    page: str
    source: str
    layer: bool = False
    memory: bool = False          # the block that attends over the encoder's output


def text_width(text: str, size: float) -> float:
    """A generous estimate of ``text``'s width in px in a sans-serif font of ``size`` px
    (wide letters and capitals count more); wrapping by it keeps labels inside boxes."""
    narrow, wide = set("ijlrtf.,:;!'()| "), set("mwMW")
    units = sum(0.34 if c in narrow else 0.92 if c in wide else
                0.72 if c.isupper() or c in "→⊕&" else 0.58 for c in text)
    return units * size


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` broken at spaces into lines each estimated at most ``width`` px wide."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_width(f"{lines[-1]} {word}", size) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def _box_height(block: Block) -> float:
    return 2 * PAD + LINE * len(wrap(block.name, BOX_W - 2 * PAD, FONT)) + SMALL + 2


def _text(x, y, s, *, size=FONT, fill=INK, anchor="middle", cls="label", weight="normal"):
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" '
            f'text-anchor="{anchor}" font-weight="{weight}">{escape(s)}</text>')


def _arrow(points, colour=INK, width=1.3) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}" '
            f'marker-end="url(#fig1-head)"/>')


def architecture(encoder: Sequence[Block], decoder: Sequence[Block], *, title: str,
                 captions: dict[str, str], source_url: str, layers: int = 6) -> "Diagram":
    """Figure 1 from its description: ``encoder`` and ``decoder`` bottom to top,
    ``captions`` the words under and over the columns (``"inputs"``, ``"outputs"``,
    ``"probabilities"``), ``source_url`` the folder of the source files."""
    parts: list[str] = []
    columns = {"encoder": (MARGIN + FRAME, encoder), "decoder": (MARGIN + 3 * FRAME + BOX_W + GUTTER, decoder)}
    placed: dict[str, list[tuple[Block, float, float]]] = {}
    height = 0.0
    # first pass: heights, bottom to top, in a coordinate system with y growing upwards
    for name, (x, blocks) in columns.items():
        y, rows, in_layer = 0.0, [], False
        for block in blocks:
            if block.layer and not in_layer:
                y += FRAME                     # into the frame
            if not block.layer and in_layer:
                y += FRAME + HEADER            # out of the frame, past its caption
            in_layer = block.layer
            h = _box_height(block)
            rows.append((block, y, h))
            y += h + GAP
        if in_layer:
            y += FRAME + HEADER - GAP
        placed[name] = rows
        height = max(height, y)
    caption_h = 2 * LINE
    total_h = MARGIN + LINE + height + caption_h + MARGIN
    base = total_h - MARGIN - caption_h           # svg y of the columns' bottom (y = 0)
    width = 2 * MARGIN + 4 * FRAME + 2 * BOX_W + GUTTER
    flip = lambda y: base - y                      # noqa: E731  upwards -> svg

    for name, (x, _) in columns.items():
        rows = placed[name]
        cx = x + BOX_W / 2
        layer_rows = [r for r in rows if r[0].layer]
        if layer_rows:                             # the N x frame and its caption
            y0 = layer_rows[0][1] - FRAME
            y1 = layer_rows[-1][1] + layer_rows[-1][2] + FRAME + HEADER
            parts.append(f'<rect class="frame" x="{x - FRAME}" y="{flip(y1):.1f}" '
                         f'width="{BOX_W + 2 * FRAME}" height="{y1 - y0:.1f}" rx="10" '
                         f'fill="#f2f2f2" stroke="#888" stroke-dasharray="5 3"/>')
            # at the frame's top left, clear of the arrow leaving the layer at its centre
            parts.append(_text(x - FRAME + 7, flip(y1) + 14, f"N× (N = {layers})",
                               size=SMALL, fill=MUTED, anchor="start", cls="caption"))
        under = captions["inputs" if name == "encoder" else "outputs"]
        parts.append(_text(cx, base + LINE + 4, under, fill=MUTED, cls="caption"))
        parts.append(_arrow([(cx, base + 6), (cx, base)]))
        for i, (block, y, h) in enumerate(rows):
            top_y = flip(y + h)
            lines = wrap(block.name, BOX_W - 2 * PAD, FONT)
            names = "".join(_text(cx, top_y + PAD + FONT - 1 + LINE * k, line, fill=LINK)
                            for k, line in enumerate(lines))
            src = _text(cx, top_y + PAD + LINE * len(lines) + SMALL - 2, block.source,
                        size=SMALL, fill=MUTED, cls="source")
            parts.append(
                f'<g class="block"><rect x="{x}" y="{top_y:.1f}" width="{BOX_W}" height="{h:.1f}" '
                f'rx="5" fill="{COLOURS[block.kind]}" stroke="#444"/>'
                f'<a href="{escape(block.page)}.html">{names}</a>'
                f'<a href="{escape(source_url + block.source)}">{src}</a></g>')
            if i:                                   # the arrow from the block below
                parts.append(_arrow([(cx, flip(rows[i - 1][1] + rows[i - 1][2])), (cx, flip(y) + 1)]))
            if block.kind == "norm" and block.layer and i:
                # the residual connection (Section 3.1): from below the sub-layer, around it,
                # into its Add & norm, on the outer side of the column
                start = flip(rows[i - 1][1]) + min(GAP, FRAME) / 2
                side = x - FRAME / 2 if name == "encoder" else x + BOX_W + FRAME / 2
                edge = x if name == "encoder" else x + BOX_W
                mid = top_y + h / 2
                parts.append(f'<polyline points="{cx:.1f},{start:.1f} {side:.1f},{start:.1f} '
                             f'{side:.1f},{mid:.1f}" fill="none" stroke="{INK}" stroke-width="1.1"/>')
                parts.append(_arrow([(side, mid), (edge, mid)], width=1.1))
        last_block, last_y, last_h = rows[-1]
        if name == "decoder":
            parts.append(_arrow([(cx, flip(last_y + last_h)), (cx, flip(last_y + last_h) - 12)]))
            parts.append(_text(cx, flip(last_y + last_h) - 18, captions["probabilities"],
                               fill=MUTED, cls="caption"))
    # the memory: from the top of the encoder's stack to the decoder's block over it
    enc_x, dec_x = columns["encoder"][0], columns["decoder"][0]
    enc_top = max(y + h for b, y, h in placed["encoder"] if b.layer)     # its last block
    target = next((y, h) for b, y, h in placed["decoder"] if b.memory)
    lane = enc_x + BOX_W + FRAME + GUTTER / 2
    rise = flip(enc_top) - FRAME - HEADER - 24
    mid = flip(target[0] + target[1] / 2)
    parts.append(f'<polyline points="{enc_x + BOX_W / 2:.1f},{flip(enc_top):.1f} '
                 f'{enc_x + BOX_W / 2:.1f},{rise:.1f} {lane:.1f},{rise:.1f} {lane:.1f},{mid:.1f}" '
                 f'fill="none" stroke="#c62828" stroke-width="2"/>')
    parts.append(_arrow([(lane, mid), (dec_x, mid)], colour="#c62828", width=2))
    parts.append(_text(enc_x + BOX_W / 2, rise - 8, "memory: keys and values", fill="#c62828",
                       cls="caption", weight="bold"))
    head = ('<defs><marker id="fig1-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            'fill="context-stroke"/></marker></defs>')
    svg = (f'<svg class="book-diagram" viewBox="0 0 {width} {total_h:.0f}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'style="width:100%;max-width:{round(width * 1.3)}px;height:auto;display:block;'
           f'margin:0 auto;font-family:inherit">{head}{"".join(parts)}</svg>')
    return Diagram(title, svg)


@dataclass(frozen=True)
class Diagram:
    """The drawn figure: shown as HTML (a titled ``<figure>``) by Jupyter and the book."""
    title: str
    svg: str

    def __repr__(self) -> str:
        return f"Diagram({self.title!r})"

    def _repr_html_(self) -> str:
        return (f'<figure class="book-diagram" style="margin:1em auto;background:#fff;'
                f'color:{INK};padding:8px;border-radius:6px"><figcaption style="text-align:'
                f'center;font-weight:600;margin-bottom:6px">{escape(self.title)}</figcaption>'
                f'{self.svg}</figure>')
