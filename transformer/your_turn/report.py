"""The engine of every check: cases tried one by one, the first difference described in
plain words, and the likely mistake named.

A check runs the learner's code and the package's own on the same inputs (a
case). Where they differ it tries each :class:`Mistake` of its list, a small
function that computes what code with that one mistake would give, and names the first
whose output equals the learner's. What it prints is a :class:`Report`; a failed check
also raises :class:`CheckFailed`, whose one line is the diagnosis, so that a notebook
cell (and the book's build) stops there.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch


class CheckFailed(AssertionError):
    """A learner's code differs from the package's: the message says where and, where
    the check can tell, which mistake."""


class NotWritten(Exception):
    """The learner's code still raises NotImplementedError (the skeleton as given)."""


@dataclass
class Mistake:
    """A known mistake: ``compute`` takes a case's inputs as the reference does and
    returns what code with this mistake would give."""
    name: str                      # short, e.g. "no 1/sqrt(d_k) scaling"
    hint: str                      # what to change, in plain words
    compute: Callable


@dataclass
class Outcome:
    case: str
    passed: bool
    details: list[str] = field(default_factory=list)
    mistake: Mistake | None = None
    note: bool = False             # an informational line, never a failure


@dataclass
class Report:
    """What a check tried and found; ``print(report)`` or the notebook's display shows it."""
    what: str
    outcomes: list[Outcome] = field(default_factory=list)
    preface: str = ""

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    @property
    def failure(self) -> Outcome | None:
        return next((o for o in self.outcomes if not o.passed), None)

    def __bool__(self) -> bool:
        return self.passed

    def text(self, width: int = 88) -> str:
        """The report, wrapped to ``width`` columns (a notebook's output box)."""
        def wrap(text, indent=""):
            return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                                 break_long_words=False, break_on_hyphens=False)
        lines = [wrap(self.preface)] if self.preface else []
        tried = sum(not o.note for o in self.outcomes)
        lines.append(f"Checking {self.what} against the book's, case by case ({tried} tried):")
        for o in self.outcomes:
            mark = "note" if o.note else ("ok" if o.passed else "FAIL")
            lines.append(f"  {mark:>4}  {o.case}")
            lines += [wrap(d, " " * 8) for d in o.details]
            if o.mistake is not None:
                lines.append(wrap(f"Likely mistake: {o.mistake.name}. {o.mistake.hint}",
                                  " " * 8))
        if self.passed:
            lines.append(f"All {tried} cases agree: {self.what} is right.")
        return "\n".join(lines)

    __str__ = text

    def _repr_pretty_(self, p, cycle):          # IPython shows the text, not a dataclass
        p.text(self.text())

    def one_line(self) -> str:
        failure = self.failure
        if failure is None:
            return f"{self.what}: all cases agree"
        why = f" Likely mistake: {failure.mistake.name}." if failure.mistake else ""
        first = failure.details[0] if failure.details else "it differs"
        return f"{self.what} fails the case '{failure.case}': {first}.{why}"


# ------------------------------------------------------------------ comparing outputs
def _as_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        return None


def describe_difference(expected, got, names: Sequence[str] = (), atol: float = 1e-5,
                        rtol: float = 1e-4, what: str = "the output") -> list[str]:
    """Empty when ``got`` matches ``expected``; else the first thing that differs, in
    words: the type, the shape, the dtype, or which positions and by how much."""
    plural = what.endswith("s")
    has, differs, holds = ("have", "differ", "hold") if plural else ("has", "differs", "holds")
    got_t = _as_tensor(got)
    if got_t is None:
        return [f"{what} should be a tensor, got {type(got).__name__}"]
    if tuple(got_t.shape) != tuple(expected.shape):
        return [f"{what} {has} shape {tuple(got_t.shape)}, expected {tuple(expected.shape)}"
                + (f" ({', '.join(names)})" if names and len(names) == expected.dim() else "")]
    if expected.is_floating_point() and not got_t.is_floating_point():
        return [f"{what} {holds} integers ({got_t.dtype}), expected floating point numbers"]
    exp, got_f = expected.double(), got_t.detach().double()
    bad_nan = got_f.isnan() & ~exp.isnan()
    if bad_nan.any():
        where = _position(bad_nan.nonzero()[0].tolist(), names)
        return [f"{what} {holds} nan at {int(bad_nan.sum())} of {exp.numel()} positions, "
                f"first at {where} (expected {exp[bad_nan][0].item():.4g})"]
    wrong = ~torch.isclose(got_f, exp, rtol=rtol, atol=atol, equal_nan=True)
    if not wrong.any():
        return []
    diff = (got_f - exp).abs().masked_fill(~wrong, -1.0)
    index = divmod_index(int(diff.argmax()), tuple(exp.shape))
    return [f"{what} {differs} at {int(wrong.sum())} of {exp.numel()} positions; the largest "
            f"difference is {diff.max().item():.3g} at {_position(index, names)}: "
            f"expected {exp[index].item():.4g}, got {got_f[index].item():.4g}"]


def divmod_index(flat: int, shape: tuple) -> tuple:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def _position(index, names) -> str:
    index = list(index)
    if names and len(names) == len(index):
        return "[" + ", ".join(f"{n} {i}" for n, i in zip(names, index)) + "]"
    return str(index)


def same(expected, got, atol: float, rtol: float) -> bool:
    got_t = _as_tensor(got)
    if got_t is None or tuple(got_t.shape) != tuple(expected.shape):
        return False
    return bool(torch.allclose(got_t.detach().double(), expected.double(), rtol=rtol,
                               atol=atol, equal_nan=True))


def first_matching(mistakes: Sequence[Mistake], inputs, got, atol: float, rtol: float,
                   pick=lambda out: out, expected=None) -> Mistake | None:
    """The first mistake whose output on ``inputs`` equals what the learner's gave, and
    differs from ``expected`` (a mistake that changes nothing here proves nothing)."""
    for mistake in mistakes:
        try:
            with torch.no_grad():
                candidate = pick(mistake.compute(*inputs))
        except Exception:           # a mistake that cannot run on these shapes
            continue
        if expected is not None and same(expected, candidate, atol, rtol):
            continue
        if same(candidate, got, atol, rtol):
            return mistake
    return None


def call(fn, *args, **kwargs):
    """Run the learner's code; NotImplementedError (the skeleton) becomes NotWritten."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as error:
        raise NotWritten(str(error)) from None


def raised(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"it raised {type(error).__name__}" + (f": {text}" if text else "")


def finish(report: Report, quiet: bool = False) -> Report | None:
    """Print the report (``quiet``: return it instead, for tests and scripts); raise
    :class:`CheckFailed` with its one line if it failed."""
    if not quiet:
        print(report.text())
    if not report.passed:
        raise CheckFailed(report.one_line())
    return report if quiet else None


def run_check(what: str, learner, reference, attempt: Callable[[Callable], Report],
              quiet: bool = False) -> Report | None:
    """Check ``learner`` with ``attempt``; while the learner's code is the unwritten
    skeleton, check the book's own solution instead and say so."""
    try:
        report = attempt(learner)
    except NotWritten as unwritten:
        report = attempt(reference)
        said = f": {unwritten}" if str(unwritten) else ""
        report.preface = (f"{what[:1].upper()}{what[1:]} is not written yet (it raises "
                          f"NotImplementedError{said}), so here is the check run on the "
                          f"book's own solution. Write yours in the cell above and run this "
                          f"cell again.")
    return finish(report, quiet)


def isclose_scalar(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
