"""Chapter 11's verdicts on Table 3 (book/transformer_book/table3.py): a row that did not train
is never said to agree with the paper, a paper difference below the threshold is never read
as an effect, and the committed study gets the verdicts its figures call for."""
from __future__ import annotations

import itertools

import pytest

from transformer.tools import ablation
from transformer_book import table3
from transformer_book import records


def change(bleu=2.0, bleu_err=0.5, ppl=1.0, paper_bleu=-1.0):
    return {"bleu": bleu, "bleu_err": bleu_err, "ppl": ppl, "paper_bleu": paper_bleu}


def test_a_row_that_did_not_train_never_agrees():
    # a BLEU change of the paper's sign, far outside the seed spread, but three times the
    # base's perplexity: the model is far behind the base, not showing the paper's effect
    assert table3.verdict(change(bleu=-3.0, ppl=3.0, paper_bleu=-1.0)) == table3.NOT_TRAINED
    for bleu, err, ppl, paper in itertools.product(
            (-6.0, -0.3, 0.0, 0.3, 6.0), (None, 0.1, 1.0), (2.01, 2.5, 10.0),
            (None, -2.1, -0.4, -0.3, 0.0, 0.2, 0.4, 1.0)):
        assert table3.verdict(change(bleu, err, ppl, paper)) == table3.NOT_TRAINED


def test_a_small_paper_difference_is_no_clear_effect():
    for paper in (-0.3, -0.1, 0.0, 0.2, 0.3):
        assert table3.verdict(change(bleu=-5.0, paper_bleu=paper)) == table3.NO_PAPER_EFFECT
    # 0.4 is an effect, also where floating point makes 26.2 - 25.8 = 0.39999...
    assert table3.verdict(change(bleu=5.0, paper_bleu=round(26.2 - 25.8, 2))) == table3.AGREES
    assert table3.verdict(change(bleu=-5.0, paper_bleu=0.4)) == table3.DISAGREES
    assert table3.verdict(change(bleu=0.2, bleu_err=0.5, paper_bleu=-1.0)) == table3.NOISE
    assert table3.verdict(change(paper_bleu=None)) == table3.NOT_IN_PAPER


@pytest.fixture(scope="module")
def committed():
    results = records.load("table3")
    return table3.changes(results, ablation.ROWS)


def test_the_committed_study(committed):
    verdicts = {name: table3.verdict(c) for name, c in committed.items()}
    # C-N4 (N = 4): dev perplexity 107 against the base's 50, BLEU 1.9: it did not train,
    # though its BLEU change has the sign of the paper's N = 8 row
    assert committed["C-N4"]["ppl"] > table3.DID_NOT_TRAIN
    assert verdicts["C-N4"] == verdicts["C-N6"] == verdicts["norm-post-nowarmup"] == table3.NOT_TRAINED
    assert verdicts["D-ls0.2"] == verdicts["E-learned"] == table3.NO_PAPER_EFFECT    # paper -0.1
    assert verdicts["C-N1"] == table3.DISAGREES and verdicts["A-h1"] != table3.NO_PAPER_EFFECT
    assert all(v != table3.AGREES for n, v in verdicts.items() if committed[n]["ppl"] > table3.DID_NOT_TRAIN)
    # the paper's side: rows of Table 3 as the paper prints them (base 25.8 BLEU, 4.92 ppl)
    assert committed["D-ls0"]["paper_bleu"] == -0.5 and committed["D-ls0.2"]["paper_bleu"] == -0.1
