"""Chapter 7's second "Your turn": the learning-rate schedule, equation (3).

``check_schedule(fn)`` compares ``fn(step, d_model, warmup)`` with
:func:`transformer.schedule.noam_lr` at the steps where mistakes show: the first step,
the warm-up's last and the one after it, and far into the decay.
"""
from __future__ import annotations

import math

from ..schedule import noam_lr
from .report import Mistake, NotWritten, Outcome, Report, call, raised, run_check


def _rate(d_power=-0.5, decay=-0.5, warm=-1.5, shift=0, combine=min, d_factor=True):
    def compute(step, d_model, warmup):
        s = step + shift
        if s <= 0:
            return 0.0
        return ((d_model ** d_power) if d_factor else 1.0) * combine(s ** decay,
                                                                      s * warmup ** warm)
    return compute


MISTAKES = [
    Mistake("the warm-up's power is -0.5 instead of -1.5",
            "During warm-up the rate is step * warmup^-1.5: the two branches then meet at "
            "step = warmup.", _rate(warm=-0.5)),
    Mistake("the warm-up's power is -1 instead of -1.5",
            "During warm-up the rate is step * warmup^-1.5.", _rate(warm=-1.0)),
    Mistake("steps counted from 0", "Equation (3) counts steps from 1: the first update "
            "uses step = 1, not 0.", _rate(shift=-1)),
    Mistake("the step count off by one (step + 1)", "Use the step as given, counted from 1.",
            _rate(shift=1)),
    Mistake("max instead of min", "lrate = d_model^-0.5 * min(step^-0.5, step * "
            "warmup^-1.5): the smaller of the two branches.", _rate(combine=max)),
    Mistake("d_model's power is -1 instead of -0.5", "The factor is d_model^-0.5.",
            _rate(d_power=-1.0)),
    Mistake("d_model's power is +0.5 instead of -0.5", "The factor is d_model^-0.5, "
            "1 / sqrt(d_model).", _rate(d_power=0.5)),
    Mistake("the d_model factor left out", "Multiply by d_model^-0.5.", _rate(d_factor=False)),
    Mistake("the step left out of the warm-up branch", "During warm-up the rate grows "
            "linearly: step * warmup^-1.5.",
            lambda step, d_model, warmup: d_model ** -0.5 * min(step ** -0.5, warmup ** -1.5)),
    Mistake("the decay's power is -1 instead of -0.5", "After warm-up the rate falls as "
            "step^-0.5, the inverse square root.", _rate(decay=-1.0)),
]

CASES = [("the paper's base model: d_model = 512, warmup = 4000", 512, 4000,
          [1, 2, 100, 3999, 4000, 4001, 10_000, 100_000]),
         ("a small model: d_model = 128, warmup = 100", 128, 100, [1, 50, 99, 100, 101, 5000]),
         ("warmup = 1", 64, 1, [1, 2, 10])]


def attempt(fn) -> Report:
    report = Report("your learning-rate schedule")
    for title, d_model, warmup, steps in CASES:
        for step in steps:
            expected = noam_lr(step, d_model, warmup)
            try:
                got = float(call(fn, step, d_model, warmup))
            except NotWritten:
                raise
            except Exception as error:
                report.outcomes.append(Outcome(f"{title}, step {step}", False, [raised(error)]))
                return report
            if not math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-12):
                mistake = next((m for m in MISTAKES if math.isclose(
                    _safe(m.compute, step, d_model, warmup), got, rel_tol=1e-6,
                    abs_tol=1e-12) and all(math.isclose(
                        _safe(m.compute, s, d_model, warmup), _safe(fn, s, d_model, warmup),
                        rel_tol=1e-6, abs_tol=1e-12) for s in steps)), None)
                report.outcomes.append(Outcome(f"{title}", False, [
                    f"at step {step} the rate is {got:.6g}, expected {expected:.6g} "
                    f"({got / expected:.3g} times the book's)" if expected else
                    f"at step {step} the rate is {got:.6g}, expected {expected:.6g}"],
                    mistake))
                return report
        report.outcomes.append(Outcome(f"{title}: steps {', '.join(map(str, steps))}", True))
    return report


def _safe(fn, *args) -> float:
    try:
        return float(fn(*args))
    except Exception:
        return math.nan


def check_schedule(fn, quiet: bool = False) -> Report:
    """Check ``fn(step, d_model, warmup)`` against equation (3)."""
    return run_check("your learning-rate schedule", fn, noam_lr, attempt, quiet)
