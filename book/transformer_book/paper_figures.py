"""The paper's attention figures (its appendix, Figures 3 to 5) as data, and the measures
that find the book's model's head that best matches one of them (chapter 9).

The paper draws a layer's encoder self-attention as lines between two copies of the
sentence: from each word (left) to the words it attends to (right), one colour per head,
a thick line for a large weight. This module holds the lines it shows as data, in one
place: the sentence's tokens as the figure writes them (its padding left out) and each
shown edge as (head, query token, key token, strength), strength ``"strong"`` (a thick
line) or ``"weak"`` (a thin one). :func:`model_edges` turns the book's model's weights into
edges of the same form, so that :func:`transformer_book.viz.attention_lines` draws both
alike.

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
# The model's edges: a weight of at least STRONG draws a thick line, at least WEAK a thin one
STRONG, WEAK = 0.5, 0.2
ATTRIBUTION = ("Vaswani et al. 2017, Attention Is All You Need, Figures 3-5, "
               "reproduced for scholarly use with attribution")


def credit(number: int) -> str:
    """The attribution of one figure, short enough for a figure's subtitle."""
    return f"Vaswani et al. 2017, Figure {number}, reproduced for scholarly use with attribution"


@dataclass(frozen=True)
class Edge:
    """One line of a figure: ``head`` (1-based; None where the paper does not say which
    head drew it) attends from token ``query`` to token ``key`` (indices into the
    sentence's tokens), drawn thick (``"strong"``) or thin (``"weak"``); ``weight``: the
    model's weight (the paper's figures show none)."""
    head: int | None
    query: int
    key: int
    strength: str
    weight: float | None = None

    def __post_init__(self):
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength {self.strength!r} is not one of {STRENGTHS}")


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


def _edges(tokens: Sequence[str], rows: Sequence[tuple[int | None, str, str, str]]) -> tuple[Edge, ...]:
    """Edges named by their words (each word must occur once in ``tokens``)."""
    def at(word):
        if list(tokens).count(word) != 1:
            raise ValueError(f"{word!r} is not one token of the sentence")
        return list(tokens).index(word)
    return tuple(Edge(head, at(q), at(k), strength) for head, q, k, strength in rows)


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
        # many heads, each its own colour; the caption does not number them
        _edges(MAKING, [(None, "making", "more", "strong"),
                        (None, "making", "difficult", "strong")])),
    4: PaperFigure(
        4, 5, 6, LAW, "its",
        "Two attention heads, also in layer 5 of 6, apparently involved in anaphora "
        "resolution. Top: Full attentions for head 5. Bottom: Isolated attentions from just "
        "the word 'its' for attention heads 5 and 6. Note that the attentions are very sharp "
        "for this word.",
        # the bottom panel: from "its", heads 5 and 6 (the top panel's full head 5 is not drawn)
        _edges(LAW, [(5, "its", "Law", "strong"), (5, "its", "application", "weak"),
                     (6, "its", "Law", "strong"), (6, "its", "application", "weak")])),
    5: PaperFigure(
        5, 5, 6, LAW, None,
        "Many of the attention heads exhibit behaviour that seems related to the structure "
        "of the sentence. We give two such examples above, from two different heads from "
        "the encoder self-attention at layer 5 of 6. The heads clearly learned to perform "
        "different tasks.",
        # every word's row of two heads: the lines are not transcribed here (see the paper)
        ()),
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


def figure_match(fig: PaperFigure, weights, words: Sequence[str]):
    """(layers, heads): how far each head of the model draws the paper's lines: the mean,
    over the figure's query words, of the weight its row puts on the words the paper's
    lines from it reach. A head that drew exactly the paper's lines scores 1."""
    queries = sorted({e.query for e in fig.edges})
    scores = [edge_weight(weights, words, fig.tokens[q],
                          [fig.tokens[e.key] for e in fig.edges if e.query == q])
              for q in queries]
    return sum(scores) / len(scores)


def best_head(score) -> tuple[int, int, float]:
    """The 1-based (layer, head) of the largest entry of a (layers, heads) score, and it."""
    layer, head = divmod(int(score.argmax()), score.size(1))
    return layer + 1, head + 1, float(score.max())


def model_edges(rows, head: int | None, queries: Sequence[int] | None = None) -> list[Edge]:
    """Edges in the paper's form from one head's (S, S) weights: for each query row (all,
    or ``queries``) the keys of weight at least :data:`WEAK` (``"strong"`` from
    :data:`STRONG`) and always the row's strongest key, so that every row draws a line."""
    edges = []
    for q in (range(rows.size(0)) if queries is None else queries):
        row = rows[q]
        top = int(row.argmax())
        for k, w in enumerate(row.tolist()):
            if w >= WEAK or k == top:
                edges.append(Edge(head, q, k, "strong" if w >= STRONG else "weak", w))
    return edges


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


def paper_panel(fig: PaperFigure) -> dict:
    """The paper's figure as a panel of :func:`transformer_book.viz.attention_lines`."""
    heads = [h for h in fig.heads if h is not None]
    which = f"heads {' and '.join(map(str, heads))}" if heads else "many heads"
    return {"title": f"the paper: layer {fig.layer} of {fig.layers}, {which}",
            "tokens": fig.tokens, "edges": fig.edges, "legend": "paper"}


def model_panel(pieces: Sequence[str], weights, layer: int, head: int, layers: int,
                queries: Sequence[int] | None = None) -> dict:
    """One head of the model's (layers, heads, S, S) encoder self-attention as a panel: the
    rows ``queries`` (default: every row), in the paper's form (:func:`model_edges`)."""
    return {"title": f"this model: layer {layer} of {layers}, head {head}",
            "tokens": list(pieces), "legend": "model",
            "edges": model_edges(weights[layer - 1, head - 1], head, queries)}
