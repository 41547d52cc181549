"""Section 6.1's metric: corpus BLEU, computed with sacrebleu on detokenised text.

The paper reports tokenised BLEU from its own scripts; we report sacrebleu's standard
13a-tokenised, case-sensitive corpus BLEU (and chrF) with the signature that makes the
number reproducible (Post, 2018). Scores from the two pipelines are close, not equal.
"""
from __future__ import annotations

from typing import Sequence

from sacrebleu.metrics import BLEU, CHRF

from .errors import InputError

__all__ = ["score", "format_score"]


def _check(name: str, texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, got a single str")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return texts


def score(hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus BLEU and chrF of detokenised ``hypotheses`` against one reference each.

    Returns ``{"bleu", "chrf"}`` (0-100 floats), ``"bleu_signature"``,
    ``"chrf_signature"``, the BLEU details ``"precisions"`` (1- to 4-gram, %),
    ``"bp"``, ``"sys_len"``, ``"ref_len"``, and ``"n"`` (number of sentences).
    """
    hypotheses = _check("hypotheses", hypotheses)
    references = _check("references", references)
    if len(hypotheses) != len(references):
        raise InputError(f"got {len(hypotheses)} hypotheses but {len(references)} references; "
                         f"they must pair up one to one")
    if not hypotheses:
        raise InputError("cannot score an empty corpus (0 hypotheses, 0 references)")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": float(b.score), "chrf": float(c.score),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "precisions": [float(p) for p in b.precisions], "bp": float(b.bp),
        "sys_len": int(b.sys_len), "ref_len": int(b.ref_len), "n": len(hypotheses),
    }


def format_score(result: dict) -> str:
    """``BLEU = 34.1 (signature nrefs:1|case:mixed|...|version:2.6.0)  chrF2 = 60.2``."""
    return (f"BLEU = {result['bleu']:.1f} (signature {result['bleu_signature']})  "
            f"chrF2 = {result['chrf']:.1f}")
