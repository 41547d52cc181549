"""Chapter 3's "Your turn": scaled dot-product attention with a mask, equation (1).

``check_attention(fn)`` runs ``fn(q, k, v, mask)`` beside
:func:`transformer.attention.scaled_dot_product_attention`. ``fn`` may return
``(output, weights)`` like the package's, or the output alone (PyTorch's fused
attention, for instance): then only the output is compared.
"""
from __future__ import annotations

import math

import torch

from ..attention import causal_mask, scaled_dot_product_attention
from .report import (Mistake, NotWritten, Outcome, Report, call, describe_difference, first_matching,
                     raised, run_check)

# ----------------------------------------------------------------- the known mistakes


def _weights(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)


def _attend(scale, mask_rule="before", axis=-1, transpose_k=True, scale_after=False):
    def compute(q, k, v, mask=None):
        kt = k.transpose(-2, -1) if transpose_k else k
        scores = (q @ kt) * (1.0 if scale_after else scale(q, k, v))
        if mask is not None and mask_rule == "before":
            scores = scores.masked_fill(~mask, float("-inf"))
        elif mask is not None and mask_rule == "inverted":
            scores = scores.masked_fill(mask, float("-inf"))
        elif mask is not None and mask_rule == "zero":
            scores = scores.masked_fill(~mask, 0.0)
        weights = torch.softmax(scores, dim=axis).nan_to_num(0.0)
        if scale_after:
            weights = weights * scale(q, k, v)
        if mask is not None and mask_rule == "after":
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights
    return compute


def _inv_sqrt_dk(q, k, v):
    return 1 / math.sqrt(q.size(-1))


MISTAKES = [
    Mistake("no 1/sqrt(d_k) scaling",
            "Divide the scores Q K^T by sqrt(d_k), the size of the last axis of q, before "
            "the softmax.", _attend(lambda q, k, v: 1.0)),
    Mistake("scaled by d_k instead of sqrt(d_k)",
            "The paper divides by the square root of d_k: math.sqrt(q.size(-1)).",
            _attend(lambda q, k, v: 1 / q.size(-1))),
    Mistake("scaled by sqrt(d_v) instead of sqrt(d_k)",
            "d_k is the width of the queries and keys (q.size(-1)), not of the values.",
            _attend(lambda q, k, v: 1 / math.sqrt(v.size(-1)))),
    Mistake("scaled by the number of keys",
            "Divide by sqrt(d_k), the width of a key (q.size(-1)), not by how many keys "
            "there are (k.size(-2)).", _attend(lambda q, k, v: 1 / math.sqrt(k.size(-2)))),
    Mistake("multiplied by sqrt(d_k) instead of dividing",
            "The scores are divided by sqrt(d_k), which makes them smaller.",
            _attend(lambda q, k, v: math.sqrt(q.size(-1)))),
    Mistake("the softmax over the wrong axis",
            "Each query's weights over the keys must sum to 1: softmax(scores, dim=-1), the "
            "keys' axis.", _attend(_inv_sqrt_dk, axis=-2)),
    Mistake("the mask inverted",
            "In this book a mask is True where a query MAY attend: hide the positions where "
            "it is False (scores.masked_fill(~mask, float('-inf'))).",
            _attend(_inv_sqrt_dk, mask_rule="inverted")),
    Mistake("the mask applied after the softmax",
            "Set the hidden scores to -inf BEFORE the softmax, so that the weights of what "
            "may be seen still sum to 1; zeroing weights afterwards leaves rows that no "
            "longer sum to 1.", _attend(_inv_sqrt_dk, mask_rule="after")),
    Mistake("the mask ignored",
            "Use the mask: scores.masked_fill(~mask, float('-inf')) before the softmax, "
            "when a mask is given.", _attend(_inv_sqrt_dk, mask_rule="none")),
    Mistake("hidden scores set to 0 instead of -inf",
            "A score of 0 still gets weight after the softmax (e^0 = 1): set the hidden "
            "scores to float('-inf') so that their weight is exactly 0.",
            _attend(_inv_sqrt_dk, mask_rule="zero")),
    Mistake("the scaling applied after the softmax",
            "Divide the scores by sqrt(d_k) before the softmax: the point is to keep the "
            "softmax out of its flat regions.", _attend(_inv_sqrt_dk, scale_after=True)),
    Mistake("K not transposed",
            "The scores are Q K^T: k.transpose(-2, -1), so that each query meets each key.",
            _attend(_inv_sqrt_dk, transpose_k=False)),
]

NAMES_3 = ("batch", "query", "key")
NAMES_4 = ("batch", "head", "query", "key")


def _cases():
    """(title, (q, k, v, mask), tolerance, names of the weights' axes, note-only)."""
    g = torch.Generator().manual_seed(3)
    r = lambda *shape: torch.randn(*shape, generator=g)                       # noqa: E731
    keys = torch.tensor([[1., 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    values = torch.tensor([[1., 0], [0, 1], [1, 1]])
    query = torch.tensor([[2., 0, 2, 0], [0, 2, 0, 2], [0, 0, 0, 0]])
    padding = torch.tensor([True] * 5 + [False] * 2)[None, None, None, :]      # (1, 1, 1, 7)
    yield ("the worked example: 3 tokens, d_k = 4, no mask", (query, keys, values, None),
           1e-5, ("query", "key"), False)
    yield ("a batch of 2, 5 queries, 7 keys, d_k = 64 and d_v = 32",
           (r(2, 5, 64), r(2, 7, 64), r(2, 7, 32), None), 1e-5, NAMES_3, False)
    yield ("heads: (batch 2, 3 heads, 6 queries, 6 keys, d_k = 6)",
           (r(2, 3, 6, 6), r(2, 3, 6, 6), r(2, 3, 6, 5), None), 1e-5, NAMES_4, False)
    yield ("a single query and a single key", (r(1, 1, 8), r(1, 1, 8), r(1, 1, 3), None),
           1e-5, NAMES_3, False)
    yield ("a padding mask (batch, 1, 1, keys): the last 2 of 7 keys are padding",
           (r(1, 2, 4, 16), r(1, 2, 7, 16), r(1, 2, 7, 16), padding), 1e-5, NAMES_4, False)
    yield ("the causal mask (queries, keys) of 6 positions",
           (r(2, 6, 8), r(2, 6, 8), r(2, 6, 8), causal_mask(6)), 1e-5, NAMES_3, False)
    yield ("padding and causal masks together, 4 heads",
           (r(1, 4, 7, 16), r(1, 4, 7, 16), r(1, 4, 7, 16), causal_mask(7) & padding),
           1e-5, NAMES_4, False)
    yield ("a long input: 300 queries and 300 keys, d_k = 64",
           (r(1, 300, 64), r(1, 300, 64), r(1, 300, 64), causal_mask(300)), 1e-5, NAMES_3,
           False)
    yield ("bfloat16 inputs (the output keeps their dtype)",
           tuple(t.bfloat16() for t in (r(2, 5, 32), r(2, 7, 32), r(2, 7, 16)))
           + (torch.tensor([True] * 6 + [False]),),
           3e-2, NAMES_3, False)
    yield ("a query that may see no key at all gets zeros (chapter 3, 'Masks')",
           (r(1, 3, 8), r(1, 3, 8), r(1, 3, 8), torch.tensor([[True, True, False],
                                                             [False, False, False],
                                                             [True, False, False]])),
           1e-5, NAMES_3, True)


def _split(result):
    """(output, weights or None) of what the learner's function returned."""
    if isinstance(result, (tuple, list)):
        if len(result) == 2:
            return result[0], result[1]
        if len(result) == 1:
            return result[0], None
    return result, None


def attempt(fn) -> Report:
    report = Report("your attention")
    for title, inputs, tol, names, note_only in _cases():
        q, k, v, mask = inputs
        expected_out, expected_w = scaled_dot_product_attention(
            *(t.float() for t in (q, k, v)), mask)
        try:
            with torch.no_grad():
                got_out, got_w = _split(call(fn, q, k, v, mask))
        except NotWritten:
            raise
        except Exception as error:
            report.outcomes.append(Outcome(title, False, [raised(error)]))
            return report
        details = []
        if q.dtype == torch.bfloat16 and getattr(got_out, "dtype", None) != torch.bfloat16:
            details.append(f"the output's dtype is {getattr(got_out, 'dtype', None)}; for "
                           f"bfloat16 inputs it should be bfloat16 too (do not create "
                           f"float32 tensors inside)")
        if not details and got_w is not None:
            details = describe_difference(expected_w, got_w, names, atol=tol, rtol=tol,
                                          what="the weights")
        details = details or describe_difference(expected_out, got_out, atol=tol, rtol=tol,
                                                 what="the output")
        if note_only:
            if details:
                report.outcomes.append(Outcome(title, True, details + [
                    "(Not counted as a mistake: with -inf in every score the softmax gives "
                    "nan; the package turns such rows into zeros.)"], note=True))
            continue
        if details:
            inputs32 = tuple(t.float() if torch.is_tensor(t) and t.is_floating_point() else t
                             for t in inputs)
            mistake = None
            if got_w is not None and describe_difference(expected_w, got_w, atol=tol, rtol=tol):
                mistake = first_matching(MISTAKES, inputs32, got_w, tol, tol,
                                         pick=lambda o: o[1], expected=expected_w)
            if mistake is None and describe_difference(expected_out, got_out, atol=tol, rtol=tol):
                mistake = first_matching(MISTAKES, inputs32, got_out, tol, tol,
                                         pick=lambda o: o[0], expected=expected_out)
            report.outcomes.append(Outcome(title, False, details, mistake))
            return report
        report.outcomes.append(Outcome(title, True))
    return report


def check_attention(fn, quiet: bool = False) -> Report:
    """Check ``fn(q, k, v, mask=None)`` against equation (1) as the package computes it:
    prints what it tried, and raises :class:`CheckFailed` naming the first difference
    and the likely mistake."""
    return run_check("your attention", fn, scaled_dot_product_attention, attempt, quiet)
