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
        assert fig.tokens[-1] == "<EOS>" and "Vaswani" not in fig.caption
        for e in fig.edges:
            assert 0 <= e.query < len(fig.tokens) and 0 <= e.key < len(fig.tokens)
            assert e.strength in pf.STRENGTHS and e.weight is None
        assert len(set(fig.edges)) == len(fig.edges)
    lines = lambda fig: {(e.head, fig.tokens[e.query], fig.tokens[e.key], e.strength) for e in fig.edges}
    assert lines(making) == {(None, "making", "more", "strong"),
                             (None, "making", "difficult", "strong")}
    assert {(h, k) for h, q, k, s in lines(law) if s == "strong"} == {(5, "Law"), (6, "Law")}
    assert {q for _, q, _, _ in lines(law)} == {"its"}
    assert law.heads == [5, 6] and making.heads == [None]
    assert "Vaswani et al. 2017" in pf.ATTRIBUTION and "attribution" in pf.ATTRIBUTION
    assert "Figure 4" in pf.credit(4) and "attribution" in pf.credit(4)
    with pytest.raises(ValueError):
        pf.Edge(1, 0, 1, "thick")


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
    assert sorted(t.name for t in paper) == ["paper, head 5"] * 2 + ["paper, head 6"] * 2
    model = [t for t in lines if t.xaxis == "x2"]
    drawn_keys = {y for t in model for y in t.y[1::3]}
    assert int(w[1, 2, 8].argmax()) in drawn_keys and {t.y[0] for t in model} == {8}


def test_chapter_9_glues_the_heads_it_finds():
    """The heads the chapter names come from its computation, glued, never typed."""
    nb = json.loads(CHAPTER.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for key in ("ch9_fig3_head", "ch9_fig4_head", "ch9_fig5_heads", "ch9_pronoun_sentence",
                "ch9_pronoun_head", "ch9_pronoun_weight", "ch9_pronoun_uniform"):
        assert f"{{glue:text}}`{key}`" in prose, key
        assert f'glue("{key}"' in code, key
    assert "pf.figure_match(" in code and "pf.edge_weight(" in code
    assert "pf.most_different_heads(" in code
    assert not re.search(r"\blayer \d+, head \d+", prose), "a head typed into the prose"
