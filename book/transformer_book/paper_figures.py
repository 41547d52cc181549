"""The paper's attention figures (its appendix, Figures 3 to 5) as data, and the measures
that find the book's model's head that best matches one of them (chapter 9).

The paper draws a layer's encoder self-attention as lines between two copies of the
sentence: from each word (the query) to the words it attends to (the keys), one colour per
head, each line as opaque as its attention weight. This module holds the lines it shows as
data, in one place: the sentence's tokens as the figure writes them (its padding left out)
and each line as an :class:`Edge` (head, query token, key token, strength, weight), with
``weight`` the line's opacity, which is the head's attention weight to 1/255, and
``strength`` ``"strong"`` from :data:`STRONG` and ``"weak"`` below it, the thresholds the
model's own lines use (:func:`model_edges`), so that
:func:`transformer_book.viz.attention_lines` draws both alike, by one rule (:func:`drawn`).

How the lines were transcribed: not by eye, but from the figures' vector PDFs in the
paper's arXiv source (1706.03762, ``vis/``; ``visualizations.tex`` places them):
``making_more_difficult5_new.pdf`` is Figure 3, ``anaphora_resolution_new.pdf`` and
``anaphora_resolution2_new.pdf`` Figure 4's top and bottom panels,
``attending_to_head_new.pdf`` and ``attending_to_head2_new.pdf`` Figure 5's two heads.
Each is an export of tensor2tensor's attention view: the query tokens are the top row of
rotated text, the keys the bottom row, and each line one stroked segment between them
(the same width in all), its colour the head's and its stroke alpha (``CA``, in 255ths)
the weight; most are form XObjects painted through an ExtGState that carries the alpha,
those of alpha 1 are stroked on the page. The top row is the query side: the lines from
each top token sum to at most one (0.73 to 1.00; lines fainter than 4/255 are not in the
files). Heads are numbered by the colour bar at the top of each file (the figures crop it):
its squares, left to right, are heads 1 to 8 in d3's category10 colours (blue, orange,
green, red, purple, brown, pink, grey), the unselected ones paler; Figure 4's caption
names its purple and brown heads 5 and 6, the 5th and 6th. So Figure 5's two heads are
heads 3 (green, top) and 4 (red, bottom). Figure 4's top panel (every row of head 5) is
not held here; its row of "its" is the bottom panel's head 5, line for line.

Vaswani et al. 2017, Figures 3-5, reproduced for scholarly use with attribution: "Provided
proper attribution is provided, Google hereby grants permission to reproduce the tables
and figures in this paper solely for use in journalistic or scholarly works." (Ashish
Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit, Llion Jones, Aidan N. Gomez, Lukasz
Kaiser, Illia Polosukhin, *Attention Is All You Need*, NeurIPS 2017, arXiv:1706.03762.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

STRENGTHS = ("strong", "weak")
# A line of weight at least STRONG is drawn thick, at least WEAK thin (and each row's
# strongest line always): the paper's lines and the model's alike (drawn, model_edges)
STRONG, WEAK = 0.5, 0.2
ATTRIBUTION = ("Vaswani et al. 2017, Attention Is All You Need, Figures 3-5, "
               "reproduced for scholarly use with attribution")


def credit(number: int) -> str:
    """The attribution of one figure, short enough for a figure's subtitle."""
    return f"Vaswani et al. 2017, Figure {number}, reproduced for scholarly use with attribution"


@dataclass(frozen=True)
class Edge:
    """One line of a figure: ``head`` (1-based; None where no head is named) attends from
    token ``query`` to token ``key`` (indices into the sentence's tokens), drawn thick
    (``"strong"``) or thin (``"weak"``); ``weight``: the attention weight, the model's or
    the paper's (its line's opacity, in 255ths), None where none is known."""
    head: int | None
    query: int
    key: int
    strength: str
    weight: float | None = None

    def __post_init__(self):
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength {self.strength!r} is not one of {STRENGTHS}")


def strength(weight: float) -> str:
    """``"strong"`` from :data:`STRONG`, else ``"weak"``."""
    return "strong" if weight >= STRONG else "weak"


def drawn(edges: Sequence[Edge]) -> list[Edge]:
    """The edges a figure draws: those of weight at least :data:`WEAK`, and each (head,
    query) row's strongest (the first of equals), so that every row draws a line."""
    top: dict[tuple, Edge] = {}
    for e in edges:
        if (e.head, e.query) not in top or e.weight > top[e.head, e.query].weight:
            top[e.head, e.query] = e
    return [e for e in edges if e.weight >= WEAK or top[e.head, e.query] is e]


@dataclass(frozen=True)
class PaperFigure:
    """One of the paper's attention figures: its number, layer (1-based, of ``layers``),
    the sentence's tokens, the word whose row it draws (None: every word's), its caption
    (quoted) and the edges it shows."""
    number: int
    layer: int
    layers: int
    tokens: tuple[str, ...]
    query: str | None
    caption: str
    edges: tuple[Edge, ...]

    @property
    def heads(self) -> list[int | None]:
        return sorted({e.head for e in self.edges}, key=lambda h: (h is None, h or 0))


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(text.split()) + ("<EOS>",)


def _lines(lines: dict[int, dict[int, dict[int, int]]]) -> tuple[Edge, ...]:
    """Edges from {head: {query: {key: opacity in 255ths}}} (token indices), as the PDF
    draws them (the module's docstring says how they were read)."""
    return tuple(Edge(head, q, k, strength(alpha / 255), alpha / 255)
                 for head, rows in lines.items() for q, keys in rows.items()
                 for k, alpha in keys.items())


MAKING = _tokens("It is in this spirit that a majority of American governments have passed "
                 "new laws since 2009 making the registration or voting process more "
                 "difficult .")
LAW = _tokens("The Law will never be perfect , but its application should be just - this is "
              "what we are missing , in my opinion .")

FIGURES: dict[int, PaperFigure] = {
    3: PaperFigure(
        3, 5, 6, MAKING, "making",
        "An example of the attention mechanism following long-distance dependencies in the "
        "encoder self-attention in layer 5 of 6. Many of the attention heads attend to a "
        "distant dependency of the verb 'making', completing the phrase 'making...more "
        "difficult'. Attentions here shown only for the word 'making'. Different colors "
        "represent different heads.",
        # making_more_difficult5_new.pdf: the row of "making" (17), all eight heads
        _lines({1: {17: {23: 134, 24: 116}}, 2: {17: {17: 17, 23: 220, 24: 16}},
                3: {17: {23: 96, 24: 153}}, 4: {17: {23: 41, 24: 213}},
                5: {17: {17: 142, 23: 9, 24: 43, 26: 50}}, 6: {17: {24: 250}},
                7: {17: {14: 22, 16: 136, 17: 37, 25: 14, 26: 27}},
                8: {17: {17: 5, 23: 207, 24: 41}}})),
    4: PaperFigure(
        4, 5, 6, LAW, "its",
        "Two attention heads, also in layer 5 of 6, apparently involved in anaphora "
        "resolution. Top: Full attentions for head 5. Bottom: Isolated attentions from just "
        "the word 'its' for attention heads 5 and 6. Note that the attentions are very sharp "
        "for this word.",
        # anaphora_resolution2_new.pdf, the bottom panel: the row of "its" (8), heads 5 and 6
        _lines({5: {8: {1: 233, 9: 9}}, 6: {8: {0: 5, 1: 105, 9: 128}}})),
    5: PaperFigure(
        5, 5, 6, LAW, None,
        "Many of the attention heads exhibit behaviour that seems related to the structure "
        "of the sentence. We give two such examples above, from two different heads from "
        "the encoder self-attention at layer 5 of 6. The heads clearly learned to perform "
        "different tasks.",
        # every word's row: attending_to_head_new.pdf (top, head 3) and
        # attending_to_head2_new.pdf (bottom, head 4)
        _lines({3: {0: {1: 247}, 1: {0: 73, 1: 151, 25: 22},
                    2: {0: 13, 1: 22, 2: 25, 3: 14, 4: 54, 5: 34, 24: 14, 25: 46},
                    3: {2: 15, 3: 59, 4: 13, 6: 13, 7: 8, 11: 8, 12: 4, 24: 20, 25: 63},
                    4: {1: 128, 5: 10, 9: 105}, 5: {0: 8, 1: 184, 9: 44},
                    6: {6: 6, 7: 27, 8: 66, 10: 30, 11: 35, 12: 41, 24: 15, 25: 14},
                    7: {6: 16, 7: 8, 8: 94, 10: 33, 11: 49, 12: 6, 24: 9, 25: 22},
                    8: {1: 10, 9: 240}, 9: {0: 12, 1: 56, 8: 19, 9: 36, 12: 10, 24: 25, 25: 79},
                    10: {8: 38, 9: 10, 11: 84, 12: 6, 24: 33, 25: 58}, 11: {1: 8, 9: 240},
                    12: {1: 12, 8: 6, 9: 115, 11: 5, 12: 75, 25: 19},
                    13: {13: 11, 14: 45, 15: 22, 16: 16, 17: 12, 18: 12, 19: 9, 20: 31,
                         24: 51, 25: 30},
                    14: {9: 13, 16: 14, 17: 10, 19: 192, 24: 5, 25: 8},
                    15: {17: 4, 19: 214, 24: 9, 25: 11}, 16: {19: 248}, 17: {18: 16, 19: 227},
                    18: {17: 5, 19: 221, 25: 9},
                    19: {1: 16, 8: 5, 9: 26, 16: 5, 17: 46, 18: 40, 19: 55, 25: 30},
                    20: {21: 16, 22: 13, 23: 205, 24: 9}, 21: {20: 9, 21: 16, 22: 12, 23: 212},
                    22: {21: 29, 22: 23, 23: 185}, 23: {18: 10, 21: 108, 22: 36, 23: 63, 24: 6, 25: 6},
                    24: {0: 27, 1: 64, 9: 38, 18: 4, 24: 10, 25: 51},
                    25: {0: 34, 1: 25, 2: 8, 3: 10, 4: 11, 6: 5, 7: 4, 8: 14, 9: 24, 12: 4,
                         17: 4, 24: 16, 25: 27}},
                4: {0: {1: 250}, 1: {0: 6, 1: 247}, 2: {3: 22, 4: 218, 5: 6}, 3: {3: 231, 5: 12},
                    4: {3: 8, 5: 242}, 5: {5: 252}, 6: {7: 243},
                    7: {3: 6, 7: 154, 8: 14, 10: 53, 22: 9}, 8: {8: 7, 9: 243}, 9: {9: 246},
                    10: {3: 13, 8: 9, 10: 26, 11: 48, 12: 17, 13: 14, 14: 94, 15: 15},
                    11: {12: 253}, 12: {12: 227, 24: 12}, 13: {13: 13, 14: 65, 15: 55, 16: 106},
                    14: {16: 254}, 15: {16: 255}, 16: {16: 222, 17: 5, 18: 12, 19: 6},
                    17: {18: 12, 19: 238}, 18: {19: 254}, 19: {19: 254},
                    20: {18: 11, 19: 7, 21: 29, 22: 177, 23: 17}, 21: {22: 243, 23: 5},
                    22: {20: 5, 22: 221, 23: 15}, 23: {20: 47, 21: 87, 22: 65, 23: 33, 25: 8},
                    24: {24: 95, 25: 135}, 25: {24: 233, 25: 18}}})),
}


def sentence(fig: PaperFigure) -> str:
    """The figure's sentence as plain text (what the book's model reads)."""
    text = " ".join(t for t in fig.tokens if t != "<EOS>")
    for mark in (" ,", " ."):
        text = text.replace(mark, mark[1:])
    return text


# ------------------------------------------------------------- the model's side
def word_level(weights, pieces: Sequence[str]):
    """The model's (layers, heads, S, S) attention over BPE pieces as attention over whole
    words, the paper's tokens: the words (``viz.piece_words``; a lone ``▁`` joins the word
    after it) and (layers, heads, W, W) weights, each word's row that of its first piece
    and each key word's weight the sum over its pieces (rows still sum to one)."""
    import torch

    from .viz import piece_words, word_starts

    starts, words = word_starts(pieces), piece_words(pieces)
    groups: list[list[int]] = []
    for i, s in enumerate(starts):
        if groups and (s == starts[i - 1] or not words[i - 1]):
            groups[-1].append(i)                 # the word goes on (or follows a lone ▁)
        else:
            groups.append([i])
    names = [words[g[-1]] for g in groups]
    rows = torch.tensor([next((i for i in g if words[i]), g[0]) for g in groups])
    member = torch.zeros(len(pieces), len(groups), dtype=weights.dtype)
    for j, g in enumerate(groups):
        member[g, j] = 1
    return names, weights[:, :, rows] @ member


def word_pieces(words: Sequence[str], word: str) -> list[int]:
    """The positions of the pieces whose whole word (``viz.piece_words``) is ``word``
    (case-insensitive; the paper's ``<EOS>`` is the model's ``⟨/s⟩``)."""
    word = "⟨/s⟩" if word == "<EOS>" else word
    found = [i for i, w in enumerate(words) if w.lower() == word.lower()]
    if not found:
        raise ValueError(f"{word!r} is not among the words {list(words)}")
    return found


def edge_weight(weights, words: Sequence[str], query: str, keys: Sequence[str]):
    """(layers, heads): the weight the row of ``query``'s first piece puts on the pieces of
    the words ``keys``, in every layer and head of ``weights`` (layers, heads, S, S)."""
    q = word_pieces(words, query)[0]
    k = sorted({i for key in keys for i in word_pieces(words, key)})
    return weights[:, :, q, k].sum(-1)


def paper_keys(fig: PaperFigure, query: int) -> list[int]:
    """The keys the figure's row of token ``query`` reaches: those its heads give, on
    average over the figure's heads, at least :data:`WEAK` ("more" and "difficult" from
    "making" in Figure 3; "Law" and "application" from "its" in Figure 4)."""
    heads = fig.heads
    total: dict[int, float] = {}
    for e in fig.edges:
        if e.query == query:
            total[e.key] = total.get(e.key, 0.0) + e.weight
    return sorted(k for k, w in total.items() if w / len(heads) >= WEAK)


def figure_match(fig: PaperFigure, weights, words: Sequence[str]):
    """(layers, heads): how far each head of the model draws the paper's lines: the mean,
    over the figure's query words, of the weight its row puts on the words the paper's
    row reaches (:func:`paper_keys`). A head that put all its weight there scores 1."""
    queries = sorted({e.query for e in fig.edges})
    scores = [edge_weight(weights, words, fig.tokens[q], [fig.tokens[k] for k in paper_keys(fig, q)])
              for q in queries]
    return sum(scores) / len(scores)


def best_head(score) -> tuple[int, int, float]:
    """The 1-based (layer, head) of the largest entry of a (layers, heads) score, and it."""
    layer, head = divmod(int(score.argmax()), score.size(1))
    return layer + 1, head + 1, float(score.max())


def model_edges(rows, head: int | None, queries: Sequence[int] | None = None) -> list[Edge]:
    """Edges in the paper's form from one head's (S, S) weights: for each query row (all,
    or ``queries``) the keys a figure draws (:func:`drawn`: weight at least :data:`WEAK`,
    ``"strong"`` from :data:`STRONG`, and always the row's strongest key)."""
    return drawn([Edge(head, q, k, strength(w), w)
                  for q in (range(rows.size(0)) if queries is None else queries)
                  for k, w in enumerate(rows[q].tolist())])


def most_different_heads(weights) -> tuple[int, int, int, float]:
    """The 1-based layer and two heads of that layer whose maps differ most, and how much:
    the mean total-variation distance between their rows (half the summed absolute
    difference; 0 for the same map, 1 for maps that never share a key)."""
    best = (0, 0, 0, -1.0)
    for layer in range(weights.size(0)):
        w = weights[layer]                                          # (heads, S, S)
        tv = (w[:, None] - w[None]).abs().sum(-1).mean(-1) / 2       # (heads, heads)
        a, b = divmod(int(tv.argmax()), tv.size(1))
        if float(tv.max()) > best[3]:
            best = (layer + 1, min(a, b) + 1, max(a, b) + 1, float(tv.max()))
    return best


def _heads(heads: Sequence[int]) -> str:
    if len(heads) == 1:
        return f"head {heads[0]}"
    if len(heads) > 2 and list(heads) == list(range(heads[0], heads[-1] + 1)):
        return f"heads {heads[0]} to {heads[-1]}"
    return f"heads {', '.join(map(str, heads[:-1]))} and {heads[-1]}"


def paper_panel(fig: PaperFigure, heads: Sequence[int] | None = None) -> dict:
    """The paper's figure (its ``heads``, default all) as a panel of
    :func:`transformer_book.viz.attention_lines`: the lines :func:`drawn` keeps, by the
    rule of the model's."""
    heads = list(heads) if heads is not None else [h for h in fig.heads if h is not None]
    return {"title": f"the paper: layer {fig.layer} of {fig.layers}, {_heads(heads)}",
            "tokens": fig.tokens, "legend": "paper",
            "edges": drawn([e for e in fig.edges if e.head in heads])}


def model_panel(pieces: Sequence[str], weights, layer: int, head: int, layers: int,
                queries: Sequence[int] | None = None) -> dict:
    """One head of the model's (layers, heads, S, S) encoder self-attention as a panel: the
    rows ``queries`` (default: every row), in the paper's form (:func:`model_edges`)."""
    return {"title": f"this model: layer {layer} of {layers}, head {head}",
            "tokens": list(pieces), "legend": "model",
            "edges": model_edges(weights[layer - 1, head - 1], head, queries)}
