"""The paper's Figure 1 (Section 3, "Model Architecture") as an SVG drawn from one
description, each block linked to the chapter that builds it and to its source file.

:func:`architecture` lays out two columns, bottom to top as data flows: the encoder and
the decoder, each a list of :class:`Block`, the blocks of one layer framed as "N ×"; the
encoder's output (the *memory*) is routed to the decoder's block that attends over it,
and each "Add & norm" gets the residual connection around its sub-layer (Section 3.1).
Text is wrapped to its box by an estimate of its width (:func:`text_width`, generous), and
the SVG scales with its container (a ``viewBox``), so the diagram is the same at every
screen width; tests/test_site_figures.py checks in Chromium that no two labels overlap and
each lies inside its box. Rendered as ``text/html`` (myst-nb puts it into the page as is,
so the links work); plain Python, no plotly.
"""
from __future__ import annotations

import re
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
    columns = {"encoder": (MARGIN + FRAME, encoder), "decoder": (MARGIN + 3 * FRAME + BOX_W + GUTTER, decoder)}
    stacks = {name: _stack(blocks) for name, (_, blocks) in columns.items()}
    placed = {name: rows for name, (rows, _) in stacks.items()}
    height = max([0.0] + [top for _, top in stacks.values()])
    caption_h = 2 * LINE
    total_h = MARGIN + LINE + height + caption_h + MARGIN
    base = total_h - MARGIN - caption_h           # svg y of the columns' bottom (y = 0)
    width = 2 * MARGIN + 4 * FRAME + 2 * BOX_W + GUTTER
    parts: list[str] = []
    for name, (x, _) in columns.items():
        parts += _column(name, x, placed[name], base, captions, source_url, layers)
    parts += _memory(columns["encoder"][0], columns["decoder"][0], placed, base)
    head = ('<defs><marker id="fig1-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            'fill="context-stroke"/></marker></defs>')
    svg = (f'<svg class="book-diagram" viewBox="0 0 {width} {total_h:.0f}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'style="width:100%;max-width:{round(width * 1.3)}px;height:auto;display:block;'
           f'margin:0 auto;font-family:inherit">{head}{"".join(parts)}</svg>')
    return Diagram(title, svg)


def _stack(blocks: Sequence[Block]) -> tuple[list[tuple[Block, float, float]], float]:
    """A column's blocks placed bottom to top, with y growing upwards from the column's
    bottom: ``(block, y, height)`` each, and the column's height, the N x frame's margins
    and caption counted."""
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
    return rows, y


def _column(name: str, x: float, rows: list[tuple[Block, float, float]], base: float,
            captions: dict[str, str], source_url: str, layers: int) -> list[str]:
    """The SVG of one column whose bottom is at svg y ``base``: its N x frame and caption,
    the words under it, its blocks (linked to their pages and sources) and the arrows
    between them, the residual connections, and over the decoder the words of its output."""
    flip = lambda y: base - y                      # noqa: E731  upwards -> svg
    parts: list[str] = []
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
    return parts


def _memory(enc_x: float, dec_x: float, placed: dict[str, list[tuple[Block, float, float]]],
            base: float) -> list[str]:
    """The memory's arrow: from the top of the encoder's stack to the decoder's block that
    reads it (the one marked ``memory``), with its words."""
    flip = lambda y: base - y                      # noqa: E731  upwards -> svg
    enc_top = max(y + h for b, y, h in placed["encoder"] if b.layer)     # its last block
    target = next((y, h) for b, y, h in placed["decoder"] if b.memory)
    lane = enc_x + BOX_W + FRAME + GUTTER / 2
    rise = flip(enc_top) - FRAME - HEADER - 24
    mid = flip(target[0] + target[1] / 2)
    return [f'<polyline points="{enc_x + BOX_W / 2:.1f},{flip(enc_top):.1f} '
            f'{enc_x + BOX_W / 2:.1f},{rise:.1f} {lane:.1f},{rise:.1f} {lane:.1f},{mid:.1f}" '
            f'fill="none" stroke="#c62828" stroke-width="2"/>',
            _arrow([(lane, mid), (dec_x, mid)], colour="#c62828", width=2),
            _text(enc_x + BOX_W / 2, rise - 8, "memory: keys and values", fill="#c62828",
                  cls="caption", weight="bold")]


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


# ------------------------------------------------------------------ Figure 2
# Section 3.2's Figure 2: a small flow of operations, bottom to top, each box linked to the
# chapter section that explains it and to the line of the package that computes it.
COL_W = 112                   # px per column of a flow
V_GAP = 24                    # px between two rows of boxes (an arrow)
INPUT_H = 2 * LINE            # the row of input labels under the boxes
STACK = 5                     # px offset of each copy behind a box drawn h times


@dataclass(frozen=True)
class Box:
    """One operation of a flow: its ``name``; its ``kind`` (colour; see COLOURS and
    FLOW_COLOURS); ``page``, the book page (with an optional ``#anchor``) that explains
    it; ``code``, its source as ``(file under transformer/, line, function)`` (see
    :func:`code_line`; the box names the function, which a move of the code keeps, and
    links the line);
    where it sits (``row`` from the bottom, ``col`` the column of its centre, ``span`` its
    width in columns); ``stacked``: drawn as h copies (one per head)."""
    key: str
    name: str
    kind: str
    page: str
    code: tuple[str, int, str]
    row: int
    col: float
    span: float = 1.0
    stacked: bool = False


FLOW_COLOURS = {"matmul": "#ddd4ef", "scale": "#f3f1b5", "mask": "#f9d3d3",
                "softmax": "#cfe9cf", "concat": "#f3f1b5", "sdpa": "#d9cdf0"}


def code_line(module: str, snippet: str) -> tuple[str, int, str]:
    """``(file, line, function)`` of the one line of ``module`` (``"transformer.attention"``)
    that contains ``snippet``: the file relative to the package folder (``attention.py``),
    and the qualified name of the innermost function around it
    (``MultiHeadAttention.forward``). Fails when the snippet is missing or not unique, so a
    figure cannot link a stale line."""
    import ast
    import importlib
    import inspect
    from pathlib import Path

    mod = importlib.import_module(module)
    lines = inspect.getsource(mod).splitlines()
    found = [i + 1 for i, line in enumerate(lines) if snippet in line]
    if len(found) != 1:
        raise ValueError(f"{snippet!r} is on {len(found)} lines of {module}, not exactly one")
    path = Path(inspect.getsourcefile(mod))
    package = Path(inspect.getsourcefile(importlib.import_module(module.split(".")[0]))).parent
    return path.relative_to(package).as_posix(), found[0], _function_at(ast.parse("\n".join(lines)), found[0])


def _function_at(tree, line: int, outer: str = "") -> str:
    """The qualified name of the innermost function (or class) of ``tree`` holding ``line``."""
    import ast
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.lineno <= line <= node.end_lineno:
            return _function_at(node, line, f"{outer}{node.name}.")
    return outer.rstrip(".")


def wrap_name(name: str, width: float, size: float) -> list[str]:
    """A Python name broken after its dots and underscores into lines each estimated at
    most ``width`` px wide (``scaled_dot_product_`` / ``attention()``)."""
    lines: list[str] = []
    for part in re.findall(r"[^._]+[._]?|[._]", name):
        if lines and text_width(lines[-1] + part, size) <= width:
            lines[-1] += part
        else:
            lines.append(part)
    return lines


def _source_label(box: Box) -> list[str]:
    """The lines naming a box's function: its own name (``forward()``), the class and the
    file in the link's title."""
    return wrap_name(box.code[2].rsplit(".", 1)[-1] + "()", _flow_box_width(box) - 2 * PAD, SMALL)


def _flow_box_height(box: Box) -> float:
    return (2 * PAD + LINE * len(wrap(box.name, _flow_box_width(box) - 2 * PAD, FONT))
            + (SMALL + 3) * len(_source_label(box)))


def _flow_box_width(box: Box) -> float:
    return box.span * COL_W - 16


def flow(boxes: Sequence[Box], edges: Sequence[tuple[str, str]], *, title: str,
         inputs: dict[str, float], output: str, source_url: str, heads: str = "h") -> "Diagram":
    """A flow of operations (the paper's Figure 2) as an SVG: ``boxes`` placed by row and
    column, ``inputs`` the labels under the lowest row (name -> column), ``output`` the
    words over the top box, ``edges`` the arrows between box keys or input names. An arrow
    goes straight up when its start lies over the target box; otherwise it bends, or, when
    it skips rows, climbs beside the boxes and enters the target from the side."""
    by_key = {b.key: b for b in boxes}
    if len(by_key) != len(boxes):
        raise ValueError("two boxes share a key")
    for a, b in edges:
        if (a not in by_key and a not in inputs) or b not in by_key:
            raise ValueError(f"edge {a!r} -> {b!r} names no box or input")
    n_rows = max(b.row for b in boxes) + 1
    row_h = [max([_flow_box_height(b) for b in boxes if b.row == r] or [0]) for r in range(n_rows)]
    cols = [b.col - b.span / 2 for b in boxes] + [c - 0.5 for c in inputs.values()]
    left = min(cols)
    right = max([b.col + b.span / 2 for b in boxes] + [c + 0.5 for c in inputs.values()])
    extra = 3 * STACK + 14 if any(b.stacked for b in boxes) else 0     # the stack and its "h"
    width = 2 * MARGIN + (right - left) * COL_W + extra
    top_caption = LINE + 12
    height = 2 * MARGIN + top_caption + sum(row_h) + V_GAP * n_rows + INPUT_H
    x_of = lambda col: MARGIN + (col - left) * COL_W                    # noqa: E731
    rect = _flow_rects(boxes, row_h, height, x_of)
    parts: list[str] = []
    for b in boxes:
        parts += _flow_box(b, rect[b.key], boxes, source_url, heads)
    label_y = height - MARGIN - INPUT_H / 2 + 4
    for name, col in inputs.items():
        parts.append(_text(x_of(col), label_y, name, cls="caption", weight="bold"))
    for a, b in edges:
        if a in inputs:
            start, source_row = (x_of(inputs[a]), label_y - FONT), -1
        else:
            ax0, ay0, aw, _ = rect[a]
            start = ax0 + aw / 2, ay0 - (2 * STACK if by_key[a].stacked else 0)
            source_row = by_key[a].row
        parts.append(_flow_edge(start, rect[b], by_key[b].row == source_row + 1))
    top = min(boxes, key=lambda b: rect[b.key][1])
    tx0, ty0, tw, _ = rect[top.key]
    parts.append(_arrow([(tx0 + tw / 2, ty0), (tx0 + tw / 2, ty0 - 12)]))
    parts.append(_text(tx0 + tw / 2, ty0 - 18, output, fill=MUTED, cls="caption"))
    marker = "fig2-head"
    head = (f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            'fill="context-stroke"/></marker></defs>')
    body = "".join(parts).replace("url(#fig1-head)", f"url(#{marker})")
    svg = (f'<svg class="book-diagram" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'style="width:100%;max-width:{round(width * 1.3)}px;height:auto;display:block;'
           f'margin:0 auto;font-family:inherit">{head}{body}</svg>')
    return Diagram(title, svg)


def _flow_rects(boxes: Sequence[Box], row_h: list[float], height: float,
                x_of) -> dict[str, tuple[float, float, float, float]]:
    """Each box's ``(x, y, width, height)`` in svg units: the rows stacked upwards from the
    inputs' row, the boxes of a row on its floor and centred in its height."""
    row_bottom = []                                                     # svg y of each row's floor
    y = height - MARGIN - INPUT_H - V_GAP
    for r in range(len(row_h)):
        row_bottom.append(y)
        y -= row_h[r] + V_GAP
    rect = {}
    for b in boxes:                     # boxes of a row share its floor, centred vertically
        w, h = _flow_box_width(b), _flow_box_height(b)
        x0 = x_of(b.col) - w / 2
        y0 = row_bottom[b.row] - row_h[b.row] + (row_h[b.row] - h) / 2
        rect[b.key] = (x0, y0, w, h)
    return rect


def _flow_box(b: Box, rect: tuple[float, float, float, float], boxes: Sequence[Box],
              source_url: str, heads: str) -> list[str]:
    """The SVG of one box at ``rect``: its copies behind it when it is stacked, its name
    linked to its page, its function linked to its line, and the heads' letter beside the
    rightmost stacked box of its row."""
    x0, y0, w, h = rect
    parts: list[str] = []
    colour = FLOW_COLOURS.get(b.kind) or COLOURS[b.kind]
    if b.stacked:                   # the copies behind: one per head
        for k in (2, 1):
            parts.append(f'<rect class="copy" x="{x0 + k * STACK:.1f}" y="{y0 - k * STACK:.1f}" '
                         f'width="{w:.1f}" height="{h:.1f}" rx="5" fill="{colour}" '
                         f'stroke="#777"/>')
    lines = wrap(b.name, w - 2 * PAD, FONT)
    cx = x0 + w / 2
    names = "".join(_text(cx, y0 + PAD + FONT - 1 + LINE * k, line, fill=LINK)
                    for k, line in enumerate(lines))
    file, line, function = b.code
    src = f"<title>{escape(f'transformer/{file}, {function}')}</title>" + "".join(
        _text(cx, y0 + PAD + LINE * len(lines) + SMALL - 2 + (SMALL + 3) * k, part,
              size=SMALL, fill=MUTED, cls="source")
        for k, part in enumerate(_source_label(b)))
    parts.append(
        f'<g class="block"><rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" '
        f'rx="5" fill="{colour}" stroke="#444"/>'
        f'<a href="{escape(_page_link(b.page))}">{names}</a>'
        f'<a href="{escape(f"{source_url}{file}#L{line}")}">{src}</a></g>')
    if b.stacked and not any(o.stacked and o.row == b.row and o.col > b.col for o in boxes):
        parts.append(_text(x0 + w + 2 * STACK + 4, y0 + h / 2 - 2 * STACK + 4, heads,
                           fill=MUTED, anchor="start", cls="caption", weight="bold"))
    return parts


def _flow_edge(start: tuple[float, float], target: tuple[float, float, float, float],
               next_row: bool) -> str:
    """The arrow from ``start`` into the box at ``target``: straight up when ``start`` lies
    over the box; else a bend in the gap when the box is on the ``next_row``; else up beside
    the boxes and in from the side."""
    (sx, sy), (tx0, ty0, tw, th) = start, target
    bottom = ty0 + th
    if tx0 + 4 <= sx <= tx0 + tw - 4:                               # straight up
        return _arrow([(sx, sy), (sx, bottom + 1)])
    if next_row:                                                    # a bend in the gap
        mid = (sy + bottom) / 2
        tx = tx0 + tw / 2
        return _arrow([(sx, sy), (sx, mid), (tx, mid), (tx, bottom + 1)])
    side = tx0 + tw if sx > tx0 + tw else tx0                       # up beside, in sideways
    return _arrow([(sx, sy), (sx, ty0 + th / 2), (side, ty0 + th / 2)])


def _page_link(page: str) -> str:
    """``"03_attention#masks"`` -> ``"03_attention.html#masks"``."""
    name, _, anchor = page.partition("#")
    return f"{name}.html" + (f"#{anchor}" if anchor else "")
