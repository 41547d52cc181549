"""Chapter 7's first "Your turn": the label-smoothed loss of section 5.4.

``check_loss(fn)`` compares ``fn(logits, target, smoothing, pad_id)``, the loss summed over
the non-pad target tokens, with :func:`transformer.loss.label_smoothed_nll_loss`: the
cross-entropy H(q', p) with q'(k) = (1 - eps) 1[k = y] + eps / V (Szegedy et al.).
The KL divergence KL(q' || p), which differs from it by the constant entropy of q' and has
the same gradients, passes with a note.
"""
from __future__ import annotations

import math

import torch

from ..loss import label_smoothed_nll_loss
from .report import Mistake, NotWritten, Outcome, Report, call, raised, run_check


def _per_token(logits, target, smoothing, pad_id, target_mass, rest_mass, axis=-1,
               log=True):
    """Cross-entropy with target mass ``target_mass`` and ``rest_mass(V)`` on every other
    class, per token (pad not yet masked)."""
    V = logits.size(-1)
    log_p = logits.float().log_softmax(dim=axis) if log else logits.float().softmax(dim=axis)
    q = torch.full(log_p.shape, rest_mass(V, smoothing))
    q.scatter_(-1, target.unsqueeze(-1), target_mass(V, smoothing))
    return -(q * log_p).sum(-1), q


def _variant(target_mass=lambda V, e: 1 - e + e / V, rest_mass=lambda V, e: e / V,
             mask_pad=True, reduce="sum", axis=-1, log=True, pad_gets_nothing=False,
             fixed_pad=None):
    def compute(logits, target, smoothing, pad_id):
        pad_id = pad_id if fixed_pad is None else fixed_pad
        per_token, _ = _per_token(logits, target, smoothing, pad_id, target_mass, rest_mass,
                                  axis, log)
        if pad_gets_nothing:                          # the Annotated Transformer's q'
            V = logits.size(-1)
            log_p = logits.float().log_softmax(-1)
            q = torch.full(log_p.shape, smoothing / (V - 2))
            q[..., pad_id] = 0.0
            q.scatter_(-1, target.unsqueeze(-1), 1 - smoothing)
            per_token = -(q * log_p).sum(-1)
        real = target != pad_id
        if mask_pad:
            per_token = per_token.masked_fill(~real, 0.0)
        if reduce == "sum":
            return per_token.sum()
        if reduce == "mean over real":
            return per_token.sum() / real.sum().clamp(min=1)
        if reduce == "mean over the batch":
            return per_token.sum() / logits.size(0)
        return per_token.mean()
    return compute


MISTAKES = [
    Mistake("padding not masked",
            "Targets equal to pad_id are not words: give them no loss "
            "(loss.masked_fill(target == pad_id, 0)).", _variant(mask_pad=False)),
    Mistake("the mean instead of the sum",
            "This function returns the loss summed over the real target tokens (the trainer "
            "divides by the number of tokens itself).", _variant(reduce="mean over real")),
    Mistake("the padding id taken as 0", "Mask the targets equal to the pad_id argument, "
            "whatever it is (target == pad_id).", _variant(fixed_pad=0)),
    Mistake("the loss divided by the batch size", "Return the sum over the real target "
            "tokens; the trainer divides by the number of tokens.",
            _variant(reduce="mean over the batch")),
    Mistake("the mean over every position, padding included", "Sum over the real tokens.",
            _variant(reduce="mean all")),
    Mistake("the mean over every position, padding unmasked", "Sum over the real tokens.",
            _variant(reduce="mean all", mask_pad=False)),
    Mistake("the smoothing mass given to the wrong classes (eps / (V - 1) to every class "
            "but the target)",
            "Szegedy et al.'s q' spreads eps uniformly over ALL V classes, the target "
            "included: q'(y) = 1 - eps + eps / V, q'(k) = eps / V.",
            _variant(target_mass=lambda V, e: 1 - e, rest_mass=lambda V, e: e / (V - 1))),
    Mistake("the smoothing mass kept from the padding class (eps / (V - 2), as the Annotated "
            "Transformer does)",
            "This book's q' is Szegedy et al.'s: eps / V on every class, padding included.",
            _variant(pad_gets_nothing=True)),
    Mistake("the target given 1 - eps without its share eps / V",
            "q'(y) = (1 - eps) + eps / V: the target also gets its share of the uniform "
            "part.", _variant(target_mass=lambda V, e: 1 - e)),
    Mistake("eps and 1 - eps swapped",
            "The target gets 1 - eps (most of the mass), the uniform part eps.",
            _variant(target_mass=lambda V, e: e + (1 - e) / V, rest_mass=lambda V, e: (1 - e) / V)),
    Mistake("no smoothing (plain cross-entropy)",
            "Mix the one-hot target with the uniform distribution: (1 - eps) * nll + eps * "
            "mean_k(-log p_k).", _variant(target_mass=lambda V, e: 1.0, rest_mass=lambda V, e: 0.0)),
    Mistake("probabilities where log-probabilities belong",
            "Use log_softmax, not softmax: the loss is -sum_k q'(k) log p(k).",
            _variant(log=False)),
    Mistake("the softmax over the wrong axis",
            "Normalise over the vocabulary, the last axis: logits.log_softmax(dim=-1).",
            _variant(axis=0)),
    Mistake("the softmax over the wrong axis",
            "Normalise over the vocabulary, the last axis: logits.log_softmax(dim=-1).",
            _variant(axis=1)),
]


def entropy_of_target(V: int, smoothing: float) -> float:
    """H(q') per token: what the KL divergence leaves out of the cross-entropy."""
    top, rest = 1 - smoothing + smoothing / V, smoothing / V
    return -(top * math.log(top) if top > 0 else 0.0) - (
        (V - 1) * rest * math.log(rest) if rest > 0 else 0.0)


def _cases():
    g = torch.Generator().manual_seed(7)
    r = lambda *shape: torch.randn(*shape, generator=g) * 2                   # noqa: E731
    t = lambda high, *shape: torch.randint(4, high, shape, generator=g)       # noqa: E731
    padded = t(11, 2, 5)
    padded[0, 3:] = 0
    yield "a batch of 2 x 5 targets, vocabulary 11, eps = 0.1, 2 pads", (r(2, 5, 11), padded, 0.1, 0)
    yield "no padding, eps = 0.1", (r(3, 4, 11), t(11, 3, 4), 0.1, 0)
    yield "eps = 0: the plain cross-entropy", (r(2, 5, 11), padded, 0.0, 0)
    yield "eps = 0.3, the pad id 1", (r(2, 6, 9), t(9, 2, 6).masked_fill(
        torch.tensor([[False] * 4 + [True] * 2, [False] * 6]), 1), 0.3, 1)
    yield "a batch of one, a single token", (r(1, 1, 11), t(11, 1, 1), 0.1, 0)
    yield "a large vocabulary: 2 x 40 targets over 1000 classes", (r(2, 40, 1000), t(1000, 2, 40), 0.1, 0)
    yield "bfloat16 logits", (r(2, 5, 11).bfloat16(), padded, 0.1, 0)


def attempt(fn) -> Report:
    report = Report("your label-smoothed loss")
    for title, inputs in _cases():
        logits, target, smoothing, pad_id = inputs
        expected = label_smoothed_nll_loss(*inputs).double()
        tol = 3e-2 if logits.dtype == torch.bfloat16 else 1e-4
        try:
            got = call(fn, *inputs)
        except NotWritten:
            raise
        except Exception as error:
            report.outcomes.append(Outcome(title, False, [raised(error)]))
            return report
        got_t = torch.as_tensor(got) if not torch.is_tensor(got) else got
        if got_t.numel() != 1:
            report.outcomes.append(Outcome(title, False, [
                f"the loss should be one number (a 0-d tensor), got shape "
                f"{tuple(got_t.shape)}"], Mistake("no reduction", "Sum the per-token losses "
                                                  "of the real targets: .sum().", None)))
            return report
        value = float(got_t.detach().double())
        if math.isclose(value, float(expected), rel_tol=tol, abs_tol=tol):
            report.outcomes.append(Outcome(title, True))
            continue
        n = int((target != pad_id).sum())
        gap = float(expected) - value
        if smoothing > 0 and math.isclose(gap, n * entropy_of_target(logits.size(-1), smoothing),
                                          rel_tol=1e-3, abs_tol=tol):
            report.outcomes.append(Outcome(title, True, [
                f"yours is {value:.5g}, the book's {float(expected):.5g}: yours is the KL "
                f"divergence KL(q' || p), lower by the entropy of q' per token. Same "
                f"gradients, so it trains the same; the book reports the cross-entropy "
                f"because perplexity is read from it."]))
            continue
        details = [f"the loss is {value:.6g}, expected {float(expected):.6g} "
                   f"(a difference of {value - float(expected):.3g})"]
        mistake = _consistent_mistake(fn)
        report.outcomes.append(Outcome(title, False, details, mistake))
        return report
    return report


def _consistent_mistake(fn) -> Mistake | None:
    """The first mistake that gives the learner's loss on every case where it runs."""
    for mistake in MISTAKES:
        agree = 0
        for _, (logits, target, smoothing, pad_id) in _cases():
            inputs = (logits.float(), target, smoothing, pad_id)
            try:
                mine = float(torch.as_tensor(fn(logits, target, smoothing, pad_id)).double())
            except Exception:
                continue
            try:
                theirs = float(mistake.compute(*inputs))
            except Exception:
                break
            tol = 3e-2 if logits.dtype == torch.bfloat16 else 1e-4
            if not math.isclose(mine, theirs, rel_tol=tol, abs_tol=tol):
                break
            agree += 1
        else:
            if agree:
                return mistake
    return None


def check_loss(fn, quiet: bool = False) -> Report:
    """Check ``fn(logits, target, smoothing, pad_id)`` (summed over non-pad targets)."""
    return run_check("your label-smoothed loss", fn, label_smoothed_nll_loss, attempt, quiet)
