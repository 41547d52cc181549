"""The paper's attention figures as data (book/transformer_book/paper_figures.py) and the
measures chapter 9 finds this model's matching heads with: the sentences and lines of
Figures 3 to 5 are well formed, the model's pieces become the paper's words, the measures
find a planted head, and the chapter glues what they find (never a typed head)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from transformer_book import paper_figures as pf
from transformer_book import viz

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "09_attention_explorer.ipynb"


def test_the_papers_sentences_and_lines():
    making, law, structure = (pf.FIGURES[n] for n in (3, 4, 5))
    assert pf.sentence(making) == ("It is in this spirit that a majority of American governments "
                                   "have passed new laws since 2009 making the registration or "
                                   "voting process more difficult.")
    assert pf.sentence(law) == pf.sentence(structure) == (
        "The Law will never be perfect, but its application should be just - this is what we "
        "are missing, in my opinion.")
    for fig in pf.FIGURES.values():
        assert (fig.layer, fig.layers) == (5, 6)
        assert fig.tokens[-1] == "<EOS>" and "<pad>" not in fig.tokens and "Vaswani" not in fig.caption
        rows = {}
        for e in fig.edges:
            assert 0 <= e.query < len(fig.tokens) and 0 <= e.key < len(fig.tokens)
            assert 0 < e.weight <= 1 and e.weight * 255 == pytest.approx(round(e.weight * 255))
            assert e.strength == ("strong" if e.weight >= pf.STRONG else "weak")
            rows[e.head, e.query] = rows.get((e.head, e.query), 0) + e.weight
        assert all(0.7 < total <= 1 + 1e-9 for total in rows.values()), rows  # softmax rows
        assert len({(e.head, e.query, e.key) for e in fig.edges}) == len(fig.edges)
    assert making.heads == list(range(1, 9)) and law.heads == [5, 6] and structure.heads == [3, 4]
    assert {e.query for e in making.edges} == {17} and {e.query for e in law.edges} == {8}
    assert {(h, q) for h, q in rows} == {(h, q) for h in (3, 4) for q in range(26)}
    assert "Vaswani et al. 2017" in pf.ATTRIBUTION and "attribution" in pf.ATTRIBUTION
    assert "Figure 4" in pf.credit(4) and "attribution" in pf.credit(4)
    with pytest.raises(ValueError):
        pf.Edge(1, 0, 1, "thick")


def test_lines_read_by_hand_from_the_papers_pdfs():
    """A few lines checked by hand in the arXiv source's vector PDFs (the stroke's colour
    and its ExtGState's CA, in 255ths), one or more per figure."""
    def line(number, head, query, key):
        fig = pf.FIGURES[number]
        q, k = fig.tokens.index(query), fig.tokens.index(key)     # each word once
        found = [e for e in fig.edges if (e.head, e.query, e.key) == (head, q, k)]
        return (round(found[0].weight * 255), found[0].strength) if found else None
    # Figure 4, bottom: "its" on "Law" (purple, head 5) and "application" (brown, head 6)
    assert line(4, 5, "its", "Law") == (233, "strong")
    assert line(4, 5, "its", "application") == (9, "weak")
    assert line(4, 6, "its", "Law") == (105, "weak")
    assert line(4, 6, "its", "application") == (128, "strong")
    # Figure 3: "making" on "difficult" (brown, head 6) and on "2009" (pink, head 7)
    assert line(3, 6, "making", "difficult") == (250, "strong")
    assert line(3, 7, "making", "2009") == (136, "strong")
    assert line(3, 6, "making", "more") is None
    # Figure 5: "what" on "missing" (green, head 3); "this" on "what" (red, head 4, an
    # opaque line stroked on the page rather than in a form)
    assert line(5, 3, "what", "missing") == (248, "strong")
    assert line(5, 4, "this", "what") == (254, "strong")
    assert [(round(e.weight * 255), e.key) for e in pf.FIGURES[5].edges
            if (e.head, e.query) == (4, 15)] == [(255, 16)]              # "is" on "what"


def test_the_words_a_figures_row_reaches():
    making, law = pf.FIGURES[3], pf.FIGURES[4]
    keys = lambda fig: [fig.tokens[k] for k in pf.paper_keys(fig, fig.tokens.index(fig.query))]
    assert keys(making) == ["more", "difficult"] and keys(law) == ["Law", "application"]
    planted = pf.PaperFigure(9, 5, 6, ("a", "b", "c"), "a", "", (
        pf.Edge(1, 0, 1, "strong", 0.9), pf.Edge(2, 0, 2, "weak", 0.45), pf.Edge(2, 0, 1, "weak", 0.3)))
    assert pf.paper_keys(planted, 0) == [1, 2]          # b: (0.9 + 0.3) / 2, c: 0.45 / 2


def test_a_figure_draws_the_lines_of_the_models_rule():
    edges = [pf.Edge(1, 0, k, pf.strength(w), w) for k, w in enumerate([0.1, 0.15, 0.05])]
    edges += [pf.Edge(2, 0, 0, "strong", 0.6), pf.Edge(2, 0, 1, "weak", 0.19),
              pf.Edge(2, 0, 2, "weak", 0.2)]
    assert [(e.head, e.key) for e in pf.drawn(edges)] == [(1, 1), (2, 0), (2, 2)]
    panel = pf.paper_panel(pf.FIGURES[5], [4])
    assert panel["title"] == "the paper: layer 5 of 6, head 4"
    assert {e.head for e in panel["edges"]} == {4}
    assert {e.query for e in panel["edges"]} == set(range(26))
    assert pf.paper_panel(pf.FIGURES[3])["title"] == "the paper: layer 5 of 6, heads 1 to 8"


def random_rows(layers, heads, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(layers, heads, n, n, generator=g).softmax(-1)


def test_pieces_become_the_papers_words():
    pieces = ["▁The", "▁L", "aw", "▁its", "▁", "2", "0", ".", "⟨/s⟩"]
    w = random_rows(2, 3, len(pieces))
    words, ww = pf.word_level(w, pieces)
    assert words == ["The", "Law", "its", "20", ".", "⟨/s⟩"]
    assert ww.shape == (2, 3, 6, 6)
    assert torch.allclose(ww.sum(-1), torch.ones(()))
    assert torch.allclose(ww[:, :, 1, 1], w[:, :, 1, 1] + w[:, :, 1, 2])   # "Law": its pieces
    assert torch.allclose(ww[:, :, 3], w[:, :, 5] @ torch.tensor(            # "20": row of "2"
        [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0],
         [0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0],
         [0, 0, 0, 0, 0, 1]], dtype=w.dtype))
    assert pf.word_pieces(words, "<EOS>") == [5] and pf.word_pieces(words, "law") == [1]


def test_the_measures_find_a_planted_head():
    fig = pf.FIGURES[4]
    words = [t if t != "<EOS>" else "⟨/s⟩" for t in fig.tokens]
    w = torch.full((3, 4, len(words), len(words)), 1 / len(words))
    its, law, application = (words.index(t) for t in ("its", "Law", "application"))
    w[1, 2, its] = 0.0
    w[1, 2, its, law], w[1, 2, its, application] = 0.7, 0.3
    score = pf.figure_match(fig, w, words)
    assert score.shape == (3, 4)
    assert pf.best_head(score) == (2, 3, pytest.approx(1.0))
    assert pf.edge_weight(w, words, "its", ["Law"])[1, 2] == pytest.approx(0.7)
    assert pf.edge_weight(w, words, "its", ["Law"])[0, 0] == pytest.approx(1 / len(words))
    with pytest.raises(ValueError):
        pf.word_pieces(words, "dog")


def test_model_lines_follow_the_weights():
    rows = torch.tensor([[0.6, 0.25, 0.15], [0.1, 0.15, 0.75], [0.34, 0.33, 0.33]])
    edges = {(e.query, e.key, e.strength) for e in pf.model_edges(rows, head=2)}
    assert edges == {(0, 0, "strong"), (0, 1, "weak"), (1, 2, "strong"),
                     (2, 0, "weak"), (2, 1, "weak"), (2, 2, "weak")}
    flat = torch.tensor([[0.1] * 10])
    assert [(e.key, e.strength) for e in pf.model_edges(flat, head=1)] == [(0, "weak")]
    assert {e.query for e in pf.model_edges(rows, 1, queries=[1])} == {1}


def test_the_two_most_different_heads():
    n = 5
    w = torch.full((2, 3, n, n), 1 / n)
    w[1, 0] = torch.eye(n)                                    # itself
    w[1, 2] = torch.eye(n).roll(1, -1)                        # the next word
    assert pf.most_different_heads(w) == (2, 1, 3, pytest.approx(1.0))


def test_the_figure_draws_the_paper_beside_the_model():
    fig = pf.FIGURES[4]
    words = [t if t != "<EOS>" else "⟨/s⟩" for t in fig.tokens]
    w = random_rows(2, 4, len(words))
    drawn = viz.attention_lines([pf.paper_panel(fig), pf.model_panel(words, w, 2, 3, 2, [8])],
                                title="t", subtitle=pf.ATTRIBUTION)
    titles = [a.text for a in drawn.layout.annotations]
    assert titles == ["the paper: layer 5 of 6, heads 5 and 6", "this model: layer 2 of 2, head 3"]
    texts = [t for t in drawn.data if t.mode == "text"]
    assert [re.sub("</?b>", "", s) for s in texts[0].text] == list(fig.tokens)
    assert texts[0].text[fig.tokens.index("its")] == "<b>its</b>"
    lines = [t for t in drawn.data if t.mode == "lines"]
    paper = [t for t in lines if t.xaxis == "x"]
    # head 5: "Law" thick ("application", 9/255, is not drawn); head 6: "application"
    # thick, "Law" thin
    assert sorted((t.name, t.line.width) for t in paper) == [
        ("paper, head 5", 4), ("paper, head 6", 1.5), ("paper, head 6", 4)]
    # the paper's colours for its heads (d3's category10, its figures' colour bar): Figure
    # 4's caption names head 5 purple and head 6 brown; the model's head 3 is green
    purple, brown, green = "#9467BD", "#8C564B", "#2CA02C"
    assert {(t.name, t.line.color) for t in paper} == {("paper, head 5", purple),
                                                       ("paper, head 6", brown)}
    model = [t for t in lines if t.xaxis == "x2"]
    assert {t.line.color for t in model} == {green}
    drawn_keys = {y for t in model for y in t.y[1::3]}
    assert int(w[1, 2, 8].argmax()) in drawn_keys and {t.y[0] for t in model} == {8}


def test_chapter_9_glues_the_heads_it_finds():
    """The heads the chapter names come from its computation, glued, never typed."""
    nb = json.loads(CHAPTER.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for key in ("ch9_fig3_head", "ch9_fig4_head", "ch9_fig5_heads", "ch9_fig5_paper_heads",
                "ch9_pronoun_sentence",
                "ch9_pronoun_head", "ch9_pronoun_weight", "ch9_pronoun_uniform"):
        assert f"{{glue:text}}`{key}`" in prose, key
        assert f'glue("{key}"' in code, key
    assert "pf.figure_match(" in code and "pf.edge_weight(" in code
    assert "pf.most_different_heads(" in code and "pf.paper_panel(fig5, [h])" in code
    assert not re.search(r"\blayer \d+, head \d+", prose), "a head typed into the prose"
