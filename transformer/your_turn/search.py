"""Chapter 8's "Your turn": beam search with the length penalty, for one sentence.

:func:`beam_search_sentence` is the search written for one sentence, as plainly as it
goes: the solution of the exercise, and equal to the package's batched
:func:`transformer.decoding.beam_search` (tests/test_your_turn.py).

``check_beam_search(fn)`` runs ``fn(model, src, beam_size, alpha, max_extra)`` on
:class:`ScriptedModel` s, stand-in decoders whose next-token probabilities are written
down, so that each case has one right answer and a known wrong one: a beam that finds
what greedy misses, a length penalty that changes the winner, a hypothesis that must stop
at the end token, beam size 1, the length limit, and random models compared with the
package's search.
"""
from __future__ import annotations

import math
import random

import torch
from torch import nn

from ..config import BOS_ID, EOS_ID, PAD_ID, ModelConfig
from ..decoding import beam_search, length_penalty
from .report import Mistake, NotWritten, Outcome, Report, call, raised, run_check


def beam_search_sentence(model, src, beam_size: int = 4, alpha: float = 0.6,
                         max_extra: int = 50) -> list[int]:
    """One sentence: src (1, S) token ids -> its best output, ids without BOS and EOS."""
    cfg = model.cfg
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)
    max_len = min(int((src != cfg.pad_id).sum()) + max_extra, cfg.max_len - 1)

    def next_log_probs(prefix):           # log P(next token | prefix), a (V,) tensor
        states = model.decode(torch.tensor([prefix]), memory, src_mask)
        return model.project(states)[0, -1].double().log_softmax(-1)

    live, finished = [([cfg.bos_id], 0.0)], []         # (prefix, log P(prefix))
    for t in range(1, max_len + 2):                    # t: the length with the EOS
        candidates = []
        for prefix, score in live:
            log_probs = next_log_probs(prefix)
            log_probs[[cfg.pad_id, cfg.bos_id]] = -math.inf
            if t == 1:                                  # at least one output token
                log_probs[cfg.eos_id] = -math.inf
            if t == max_len + 1:                        # past the limit only EOS is left
                log_probs = torch.full_like(log_probs, -math.inf).index_fill(
                    0, torch.tensor([cfg.eos_id]), float(log_probs[cfg.eos_id]))
            best = log_probs.topk(2 * beam_size)
            candidates += [(score + lp, prefix, token) for lp, token in
                           zip(best.values.tolist(), best.indices.tolist())]
        candidates.sort(key=lambda c: -c[0])
        live = []
        for rank, (score, prefix, token) in enumerate(candidates[:2 * beam_size]):
            if score == -math.inf:
                break
            if token == cfg.eos_id:
                if rank < beam_size:                    # an end among the best k: finished
                    finished.append((score / length_penalty(t, alpha), prefix[1:]))
            elif len(live) < beam_size:
                live.append((prefix + [token], score))
        if len(finished) >= beam_size or not live:
            break
    return max(finished, key=lambda f: f[0])[1]


# ------------------------------------------------------------------- the stand-in model
class ScriptedModel(nn.Module):
    """A decoder with written-down next-token probabilities, in the interface the searches
    use (:class:`transformer.decoding.SearchModel`).

    ``script`` maps an output prefix (a tuple of ids after BOS) to ``{token: probability}``;
    the rest of the mass is spread over the other ordinary tokens, and EOS gets almost none
    unless named. An unscripted prefix asks ``default(prefix)``. A prefix longer than
    ``longest`` raises, so that a search with no length limit stops.
    """

    def __init__(self, script: dict, vocab: int = 12, default=None, longest: int = 64,
                 max_len: int = 64):
        super().__init__()
        self.cfg = ModelConfig(vocab_size=vocab, d_model=8, n_heads=1, d_ff=8,
                               n_encoder_layers=1, n_decoder_layers=1, max_len=max_len)
        self.script, self.default, self.longest = script, default, longest

    def log_probs(self, prefix: tuple) -> torch.Tensor:
        V = self.cfg.vocab_size
        if len(prefix) > self.longest:
            raise RuntimeError(f"the search asked for the next token after {len(prefix)} "
                               f"output tokens, past its length limit of {self.longest}")
        named = self.script.get(prefix)
        if named is None and self.default is not None:
            named = self.default(prefix)
        named = dict(named or {})
        ordinary = [t for t in range(4, V) if t not in named]
        rest = max(1.0 - sum(named.values()), 1e-6)
        probs = torch.full((V,), 1e-12, dtype=torch.float64)
        for token in ordinary:
            probs[token] = rest / len(ordinary)
        for token, p in named.items():
            probs[token] = p
        probs[[PAD_ID, BOS_ID]] = 0.0
        return (probs / probs.sum()).log()

    def source_mask(self, src):
        return (src != self.cfg.pad_id)[:, None, None, :]

    def encode(self, src, src_mask):
        return src.double()[..., None]                       # (B, S, 1)

    def decode(self, tgt_in, memory, src_mask, cache=None):  # (B, T) -> (B, T, V)
        rows = [[self.log_probs(tuple(row[1:t + 1])) for t in range(len(row))]
                for row in tgt_in.tolist()]
        return torch.stack([torch.stack(r) for r in rows]).float()

    def project(self, states):
        return states


def _random_default(seed: int, vocab: int):
    def default(prefix):
        rng = random.Random(f"{seed}:{prefix}")
        weights = [math.exp(3 * rng.gauss(0, 1)) for _ in range(2, vocab)]
        if not prefix:
            weights[0] = 0.0                                  # no EOS first
        total = sum(weights)
        return {t: w / total for t, w in zip(range(2, vocab), weights)}
    return default


GREEDY_TRAP = {(): {4: 0.55, 5: 0.45}, (4,): {6: 0.34, 7: 0.33, 8: 0.32},
               (4, 6): {EOS_ID: 0.3}, (4, 7): {EOS_ID: 0.3}, (4, 8): {EOS_ID: 0.3},
               (5,): {9: 0.95}, (5, 9): {EOS_ID: 0.95}}
LENGTH = {(): {4: math.exp(-1.0), 5: math.exp(-0.5)}, (4,): {EOS_ID: math.exp(-1.0)},
          (5,): {6: math.exp(-0.6)}, (5, 6): {7: math.exp(-0.6)},
          (5, 6, 7): {EOS_ID: math.exp(-0.6)}}
AFTER_EOS = {(): {4: 0.9}, (4,): {EOS_ID: 0.9}}
COUNTS_EOS = {(): {4: math.exp(-1.0), 5: math.exp(-0.5)}, (4,): {EOS_ID: math.exp(-1.0)},
              (5,): {6: math.exp(-0.7)}, (5, 6): {7: math.exp(-0.7)},
              (5, 6, 7): {EOS_ID: math.exp(-0.7)}}
EOS_FIRST = {(): {EOS_ID: 0.9, 4: 0.09}, (4,): {EOS_ID: 0.9}}
PENALTY = ("the length penalty missing or miscomputed",
           "Rank finished hypotheses by log P(Y) / lp(Y), lp(Y) = ((5 + |Y|) / 6)^alpha, with "
           "|Y| counting the EOS: dividing the (negative) log-probability by lp >= 1 favours "
           "longer outputs.")


def _after_eos(prefix):
    return {6: 0.99} if EOS_ID in prefix else None


def _cases():
    """(title, model, src, beam_size, alpha, max_extra, expected or None, {wrong: mistake})."""
    src = torch.tensor([[4, 5, 6, EOS_ID]])
    yield ("a beam of 4 finds the sentence greedy search misses", ScriptedModel(
        GREEDY_TRAP, longest=10), src, 4, 0.6, 6, [5, 9], {(4, 6): Mistake(
            "the search keeps only one hypothesis (greedy)",
            "Keep the beam_size best extensions of all the live hypotheses at each step, "
            "not just the single best token.", None)})
    yield ("the length penalty (alpha = 0.6) prefers the longer sentence", ScriptedModel(
        LENGTH, longest=10), src, 4, 0.6, 6, [5, 6, 7], {(4,): Mistake(*PENALTY, None)})
    yield ("|Y| counts the end token (alpha = 1): the shorter sentence wins", ScriptedModel(
        COUNTS_EOS, longest=10), src, 4, 1.0, 6, [4], {(5, 6, 7): Mistake(
            "|Y| in the length penalty without the end token",
            "lp(Y) = ((5 + |Y|) / 6)^alpha counts the EOS in |Y| (section 7 of Wu et al.; "
            "the package's length_penalty(t, alpha) with t tokens including the EOS).", None)})
    yield ("the end token is not allowed as the first token", ScriptedModel(
        EOS_FIRST, longest=10), src, 4, 0.6, 6, [4], {(): Mistake(
            "an empty output: EOS allowed first",
            "Every output holds at least one token: at the first step give the EOS a "
            "log-probability of -inf.", None)})
    yield ("alpha = 0: no length penalty, the shorter sentence wins", ScriptedModel(
        LENGTH, longest=10), src, 4, 0.0, 6, [4], {(5, 6, 7): Mistake(
            "the length penalty ignores alpha", "lp(Y) = ((5 + |Y|) / 6)^alpha is 1 when "
            "alpha = 0.", None)})
    yield ("a hypothesis that wrote the end token stops growing", ScriptedModel(
        AFTER_EOS, default=_after_eos, longest=10), src, 4, 0.6, 6, [4], {})
    yield ("beam size 1 is greedy search", ScriptedModel(GREEDY_TRAP, longest=10), src, 1,
           0.6, 6, [4, 6], {(5, 9): Mistake(
               "beam_size ignored", "Keep exactly beam_size live hypotheses.", None)})
    yield ("the length limit: input length + max_extra tokens at most", ScriptedModel(
        {}, default=lambda prefix: {4: 0.99}, longest=7), torch.tensor([[5, 6, EOS_ID]]), 2,
        0.6, 3, [4] * 6, {})
    for seed in range(4):
        yield (f"a random model (seed {seed}), compared with the book's search",
               ScriptedModel({}, vocab=10, default=_random_default(seed, 10), longest=12),
               torch.tensor([[4, 5, 6, 7, EOS_ID]]), 4, 0.6, 5, None, {})


def normalised_score(model, src, output, alpha) -> float:
    """log P(output + EOS | src) / lp(|output| + 1): what the search maximises."""
    prefix, total = (), 0.0
    for token in list(output) + [EOS_ID]:
        total += float(model.log_probs(prefix)[token])
        prefix += (token,)
    return total / length_penalty(len(output) + 1, alpha)


def _as_ids(got):
    if torch.is_tensor(got):
        got = got.flatten().tolist()
    got = list(got)
    if len(got) == 1 and isinstance(got[0], (list, tuple)) or (
            len(got) == 1 and torch.is_tensor(got[0])):
        got = list(got[0].tolist() if torch.is_tensor(got[0]) else got[0])
    return [int(t) for t in got]


def attempt(fn) -> Report:
    report = Report("your beam search")
    for title, model, src, k, alpha, max_extra, expected, wrong in _cases():
        if expected is None:
            expected = beam_search(model, src, beam_size=k, alpha=alpha, max_extra=max_extra)[0]
        try:
            with torch.no_grad():
                got = _as_ids(call(fn, model, src, beam_size=k, alpha=alpha,
                                   max_extra=max_extra))
        except NotWritten:
            raise
        except Exception as error:
            mistake = (Mistake("no length limit", "Stop after max_len = input length + "
                               "max_extra tokens: at that step only the end token is left.",
                               None) if "past its length limit" in str(error) else None)
            report.outcomes.append(Outcome(title, False, [raised(error)], mistake))
            return report
        details, mistake = _difference(model, src, alpha, expected, got, wrong)
        if details and title.startswith("a random model"):
            mine, book = (normalised_score(model, src, got, alpha),
                          normalised_score(model, src, expected, alpha))
            if EOS_ID not in got and mine >= book - 1e-9:
                report.outcomes.append(Outcome(title, True, [
                    f"yours returned {got}, the book's {expected}: yours scores "
                    f"{mine:.4f} against {book:.4f} (log P / lp), as good or better, so a "
                    f"different search order is fine"]))
                continue
            details.append(f"yours scores {mine:.4f}, the book's {book:.4f} (log P / lp)")
        if details:
            report.outcomes.append(Outcome(title, False, details, mistake))
            return report
        report.outcomes.append(Outcome(title, True))
    return report


def _difference(model, src, alpha, expected, got, wrong):
    if got == expected:
        return [], None
    details = [f"it returned {got}, expected {expected}"]
    if got and got[0] == BOS_ID:
        return details, Mistake("the output starts with BOS", "Return the tokens after "
                                "BOS, without it.", None)
    if got and got[-1] == EOS_ID and got[:-1] == expected:
        return details, Mistake("the output ends with EOS", "Return the tokens without the "
                                "final end token.", None)
    if EOS_ID in got:
        return details, Mistake("a beam that keeps growing after the end token",
                                "A hypothesis that ends in EOS is finished: set it aside "
                                "and stop extending it.", None)
    return details, wrong.get(tuple(got))


def check_beam_search(fn, quiet: bool = False) -> Report:
    """Check ``fn(model, src, beam_size, alpha, max_extra)`` (one sentence, (1, S))."""
    return run_check("your beam search", fn, beam_search_sentence, attempt, quiet)
