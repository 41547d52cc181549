"""sacrebleu corpus BLEU and chrF on detokenised text."""
import re

import pytest

from transformer.evaluate import format_score, score

REFS = ["The cat sat on the mat.", "A man is riding a bicycle down the street.",
        "Two children are playing football in the park."]


def test_identical_text_scores_100():
    result = score(REFS, REFS)
    assert result["bleu"] == pytest.approx(100.0)
    assert result["chrf"] == pytest.approx(100.0)
    assert result["bp"] == pytest.approx(1.0) and result["n"] == 3


def test_unrelated_text_scores_near_zero():
    hyps = ["Quantum chromodynamics explains gluons", "Stocks fell sharply yesterday",
            "Bake for forty minutes at low heat"]
    result = score(hyps, REFS)
    assert result["bleu"] < 1.0
    assert result["chrf"] < 20.0


def test_partial_overlap_is_between():
    result = score(["The cat sat on a rug.", "A man is riding a horse.",
                    "Children are playing in the park."], REFS)
    assert 5.0 < result["bleu"] < 90.0
    assert result["sys_len"] < result["ref_len"] and result["bp"] < 1.0


def test_signature_and_format():
    result = score(REFS, REFS)
    assert re.fullmatch(r"nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:[\d.]+",
                        result["bleu_signature"])
    assert result["chrf_signature"].startswith("nrefs:1|")
    line = format_score(result)
    assert re.fullmatch(r"BLEU = 100\.0 \(signature nrefs:1\|.*tok:13a.*\)  chrF2 = 100\.0", line)


def test_mismatched_lengths_name_both_counts():
    with pytest.raises(ValueError, match=r"2 hypotheses but 3 references"):
        score(REFS[:2], REFS)
    with pytest.raises(ValueError, match="empty"):
        score([], [])
    with pytest.raises(TypeError, match="single str"):
        score("The cat", REFS[:1])
