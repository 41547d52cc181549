"""Chapter 5's "Your turn": the sinusoidal positional encoding of section 3.5.

``check_positional(fn)`` compares ``fn(max_len, d_model)``, a (max_len, d_model) table,
with :func:`transformer.positional.sinusoidal_encoding`.
"""
from __future__ import annotations

import math

import torch

from ..positional import sinusoidal_encoding
from .report import (Mistake, NotWritten, Outcome, Report, call, describe_difference,
                     first_matching, raised, run_check)


def _table(angle_of, even=torch.sin, odd=torch.cos, layout="interleaved", start=0):
    """A table built the way a mistake builds it: ``angle_of(pos, two_i, d_model)``."""
    def compute(max_len, d_model):
        pos = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
        two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
        angle = angle_of(pos, two_i, d_model)
        pe = torch.empty(max_len, d_model, dtype=torch.float64)
        if layout == "interleaved":
            pe[:, 0::2], pe[:, 1::2] = even(angle), odd(angle)
        else:                                       # sines in the first half, cosines after
            pe[:, :d_model // 2], pe[:, d_model // 2:] = even(angle), odd(angle)
        return pe
    return compute


def _right(pos, two_i, d):
    return pos / 10000.0 ** (two_i / d)


def _per_dimension(max_len, d_model):
    """Every dimension its own frequency: 10000^(j / d_model) for dimension j."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angle = pos / 10000.0 ** (j / d_model)
    return torch.where(j.long() % 2 == 0, torch.sin(angle), torch.cos(angle))


MISTAKES = [
    Mistake("sin and cos swapped",
            "PE(pos, 2i) is the sine and PE(pos, 2i+1) the cosine: sines in the even "
            "columns (0, 2, 4, ...).", _table(_right, even=torch.cos, odd=torch.sin)),
    Mistake("sines and cosines in two halves instead of interleaved",
            "Section 3.5 interleaves them: column 2i is a sine, column 2i+1 the cosine of "
            "the same angle (pe[:, 0::2] and pe[:, 1::2]). Putting all sines first, as "
            "tensor2tensor does, works as well for a model but is not the paper's table.",
            _table(_right, layout="halves")),
    Mistake("the exponent uses i instead of 2i",
            "The wavelength of pair i is 10000^(2i / d_model): with 2i running 0, 2, 4, ... "
            "(torch.arange(0, d_model, 2)).",
            _table(lambda pos, two_i, d: pos / 10000.0 ** (two_i / 2 / d))),
    Mistake("every dimension given its own frequency",
            "A sine and its cosine share one frequency: columns 2i and 2i+1 both use "
            "10000^(2i / d_model).", _per_dimension),
    Mistake("the base is 1000 instead of 10000",
            "The wavelengths form a geometric progression up to 10000 * 2 pi.",
            _table(lambda pos, two_i, d: pos / 1000.0 ** (two_i / d))),
    Mistake("the position multiplied by the wavelength term instead of divided",
            "The angle is pos / 10000^(2i / d_model).",
            _table(lambda pos, two_i, d: pos * 10000.0 ** (two_i / d))),
    Mistake("positions counted from 1",
            "The first position is 0: torch.arange(max_len).", _table(_right, start=1)),
]


def implied_base(table: torch.Tensor, d_model: int) -> float | None:
    """The base a table's second sine column implies: sin(1 / base^(2/d)) at position 1."""
    if table.dim() != 2 or table.size(0) < 2 or d_model < 4:
        return None
    value = float(table[1, 2])
    if not -1 < value < 1 or value <= 0:
        return None
    angle = math.asin(value)
    return angle ** (-d_model / 2) if angle > 0 else None


CASES = [("max_len = 50, d_model = 16", (50, 16), 1e-5),
         ("a single position, d_model = 4", (1, 4), 1e-5),
         ("the paper's width: 100 positions, d_model = 512", (100, 512), 1e-5),
         ("a long table: 5000 positions, d_model = 64", (5000, 64), 2e-3)]


def attempt(fn) -> Report:
    report = Report("your positional encoding")
    for title, (max_len, d_model), tol in CASES:
        expected = sinusoidal_encoding(max_len, d_model)
        try:
            got = call(fn, max_len, d_model)
        except NotWritten:
            raise
        except Exception as error:
            report.outcomes.append(Outcome(title, False, [raised(error)]))
            return report
        details = describe_difference(expected, got, ("position", "dimension"), atol=tol,
                                      rtol=0, what="the table")
        if details:
            mistake = first_matching(MISTAKES, (max_len, d_model), got, max(tol, 1e-4), 0)
            if mistake is None and torch.is_tensor(got) and got.shape == expected.shape:
                base = implied_base(got.double(), d_model)
                if base and abs(math.log10(base) - 4) > 0.05:
                    mistake = Mistake(
                        f"the base is about {base:,.0f} instead of 10000",
                        "The angle is pos / 10000^(2i / d_model). If your base is 10000, "
                        "check the exponent: 2i / d_model as a float (no integer division), "
                        "2i counted once, and natural logarithms (math.log) if you use exp "
                        "and log.", None)
            report.outcomes.append(Outcome(title, False, details, mistake))
            return report
        report.outcomes.append(Outcome(title, True))
    return report


def check_positional(fn, quiet: bool = False) -> Report:
    """Check ``fn(max_len, d_model)`` against section 3.5's table."""
    return run_check("your positional encoding", fn, sinusoidal_encoding, attempt, quiet)
