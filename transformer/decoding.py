"""Section 6.1: inference.

"We used beam search with a beam size of 4 and length penalty alpha = 0.6 ... We set the
maximum output length during inference to input length + 50, but terminate early when
possible."

* :class:`Search` is the one value that carries a search's settings (beam size, length
  penalty, length margin, stopping rule) from the caller (the command line builds one from
  its options) to :func:`decode`, which runs :func:`greedy_decode` or :func:`beam_search`
  with it; :data:`PAPER_SEARCH` is section 6.1's.
* :func:`greedy_decode` takes the most probable token at every step.
* :func:`beam_search` keeps ``beam_size`` hypotheses per sentence and ranks finished ones
  by the GNMT length-normalised score ``log P(Y) / lp(Y)``, ``lp(Y) = ((5 + |Y|) / 6)^alpha``
  (Wu et al., 2016), where ``|Y|`` counts the output tokens including the final EOS.
* :func:`build_source_batch` makes the searches' input from token lists.

The strings-in, strings-out pipeline over these searches is :mod:`transformer.translation`;
the display heuristic that flags a doubtful translation is :mod:`transformer.doubt`.

Conventions shared by both searches:

* ``src`` is a (B, S) batch right-padded with ``cfg.pad_id`` (the batching module appends
  EOS to every source). The output of sentence ``b`` has at most
  ``max_len_b = min(n_b + max_extra, cfg.max_len - 1)`` tokens, ``n_b`` being its number
  of non-pad source tokens; the ``- 1`` keeps the decoder inside its positional table
  (BOS plus ``max_len_b`` tokens plus the forced EOS).
* Outputs are lists of token ids without BOS and EOS. PAD and BOS are never generated,
  and neither is EOS as the first token: every output holds at least one token (a
  minimum length of 1, as fairseq's and Hugging Face's generators allow).
* Both searches run in ``torch.inference_mode()`` with the model in eval mode (its mode
  is restored afterwards) and drop finished sentences from the batch as they finish.
  A :class:`~transformer.fast.FastTransformer` decodes with a
  :class:`~transformer.fast.KVCache` (one new position per step) unless
  ``use_cache=False``; the plain :class:`~transformer.model.Transformer` recomputes the
  whole prefix each step (the same numbers, tests/test_decoding.py).

Beam search stopping rule (``stopping``):

* ``"count"`` (default; fairseq's rule): at each step the ``2 * beam_size`` best
  extensions are ranked by raw log-probability; those among the first ``beam_size``
  that end in EOS become finished hypotheses, the best ``beam_size`` that do not stay
  live. A sentence is done once it has ``beam_size`` finished hypotheses, or at its
  maximum length, where every live hypothesis is closed with EOS. With ``beam_size=1``
  this is exactly greedy decoding.
* ``"bound"`` (Tensor2Tensor's rule, the code behind the paper): same expansion, but a
  sentence is done only when no live hypothesis can still beat the best finished one:
  log-probabilities only decrease and lp only grows, so a live hypothesis with raw score
  ``s`` can at best finish at ``s / lp(max_len_b + 1)``. Never worse than ``"count"`` by
  the search objective, usually slower, and not equal to greedy at ``beam_size=1``.
"""
from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Protocol, Sequence

import torch

from .batching import pad
from .fast.kv_cache import KVCache
from .validation import check_tokens
from .errors import InputError

__all__ = ["SearchModel", "greedy_decode", "beam_search", "decode", "length_penalty",
           "check_search", "sequence_scores", "build_source_batch", "Search", "PAPER_SEARCH"]

STOPPING = ("count", "bound")             # the beam's stopping rules (module docstring)


class SearchModel(Protocol):
    """What the searches need of a model: the plain and the fast Transformer, and the
    stand-ins whose next-token scores are written down (tests/helpers.py's
    ``StandInModel``, the "Your turn" check's ``ScriptedModel``).

    * ``cfg``: the ids (``pad_id``, ``bos_id``, ``eos_id``), ``vocab_size``, ``max_len``;
    * ``source_mask(src)`` and ``encode(src, src_mask)``: the memory, one row per sentence
      (rows are dropped with ``index_select(0, ...)`` as sentences finish);
    * ``decode(tgt_in, memory, src_mask)``: (B, T) prefixes -> (B, T, ...) states, of which
      the searches read the last position; with a ``decode_rows`` method too, the model is
      the fast form and is also called ``decode(last, memory, src_mask, cache)``;
    * ``project(states)``: the next token's scores, (B, T, V), log-softmaxed by the search;
    * ``eval()``, ``train(mode)``, ``training`` (a torch module's), and ``parameters()``
      where it has any (the device of ``src``).
    """

    cfg: object
    training: bool

    def source_mask(self, src: torch.Tensor): ...

    def encode(self, src: torch.Tensor, src_mask) -> torch.Tensor: ...

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask, *cache): ...

    def project(self, states) -> torch.Tensor: ...

    def eval(self): ...

    def train(self, mode: bool = True): ...


# ----------------------------------------------------------------------------- helpers
def length_penalty(length, alpha: float):
    """GNMT length penalty lp(Y) = ((5 + |Y|) / 6) ** alpha, of one length (an int) or of
    a tensor of lengths."""
    return ((5.0 + length) / 6.0) ** alpha


@contextmanager
def _inference(model):
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def _device(model) -> torch.device | None:
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return None


def _check_src(model, src) -> torch.Tensor:
    check_tokens(model.cfg, src)                  # the model's own rules (transformer.validation)
    device = _device(model)
    return src.long() if device is None else src.long().to(device)


def _cache(model, use_cache: bool | None) -> KVCache | None:
    """A new KV cache when the model can use one (and ``use_cache`` is not False)."""
    can_cache = hasattr(model, "decode_rows")     # the fast form (transformer.fast)
    if use_cache and not can_cache:
        raise ValueError(f"use_cache=True needs the fast form: {type(model).__name__} recomputes "
                         f"the prefix (use transformer.fast_form(model))")
    return KVCache() if can_cache and use_cache is not False else None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_search(beam_size=None, alpha=None, max_extra=None, stopping=None) -> None:
    """The one check of the search settings (each that is given): ``beam_size`` a positive
    integer, ``alpha`` a finite number >= 0, ``max_extra`` an integer >= 0, ``stopping``
    one of :data:`STOPPING`. Raises ``ValueError`` naming the setting and the value;
    :class:`Search`, the decoders and the command line's options all call it."""
    if beam_size is not None and not (_is_int(beam_size) and beam_size >= 1):
        raise InputError(f"beam_size must be a positive integer, got {beam_size!r}")
    if alpha is not None and not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool)
                                  and math.isfinite(alpha) and alpha >= 0):
        raise InputError(f"alpha (length penalty) must be a finite number >= 0, got {alpha!r}")
    if max_extra is not None and not (_is_int(max_extra) and max_extra >= 0):
        raise InputError(f"max_extra must be a non-negative integer, got {max_extra!r}")
    if stopping is not None and stopping not in STOPPING:
        raise InputError(f"stopping must be 'count' or 'bound', got {stopping!r}")


@dataclass(frozen=True)
class Search:
    """The settings of a search, one value from whoever asks (the command line builds one
    from ``--beam``, ``--alpha`` and ``--max-extra``) to :func:`decode`: hypotheses kept per
    sentence (1: greedy), the length penalty's exponent, how many tokens an output may
    exceed its input by, and the beam's stopping rule. The defaults are section 6.1's
    (:data:`PAPER_SEARCH`). Checked when made (:func:`check_search`); :meth:`replace` is a
    copy with some settings changed, :meth:`to_dict` and :meth:`from_dict` its JSON form
    (the ``decoding`` of an export's manifest, which the page searches with)."""
    beam_size: int = 4
    alpha: float = 0.6
    max_extra: int = 50
    stopping: str = "count"
    MIN_OUTPUT_TOKENS: ClassVar[int] = 1   # EOS is never the first token (module docstring)

    def __post_init__(self):
        check_search(self.beam_size, self.alpha, self.max_extra, self.stopping)

    def replace(self, **changes) -> "Search":
        """This search with the settings ``changes`` (``beam_size=1``, ...); a name that is
        not a setting raises TypeError naming the settings."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise TypeError(f"{', '.join(unknown)} is not a search setting (a Search has "
                            f"{', '.join(names)})")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The JSON form: each setting, and the minimum output length the search keeps."""
        return {**dataclasses.asdict(self), "min_output_tokens": self.MIN_OUTPUT_TOKENS}

    @classmethod
    def from_dict(cls, data: dict) -> "Search":
        """The search of :meth:`to_dict`'s ``data``; InputError names what is wrong."""
        data = dict(data)
        minimum = data.pop("min_output_tokens", cls.MIN_OUTPUT_TOKENS)
        if minimum != cls.MIN_OUTPUT_TOKENS:
            raise InputError(f"min_output_tokens {minimum!r}: this package's search keeps "
                             f"{cls.MIN_OUTPUT_TOKENS}")
        try:
            return cls().replace(**data)
        except TypeError as exc:
            raise InputError(str(exc)) from None


PAPER_SEARCH = Search()
"""Section 6.1's search: "beam search with a beam size of 4 and length penalty alpha = 0.6
... maximum output length ... input length + 50". The command line, the export (and
through its manifest the page) and the ablation start from it."""


def _max_lengths(model, src: torch.Tensor, max_extra: int) -> torch.Tensor:
    """(B,) maximum number of output tokens (EOS excluded) per sentence."""
    n = (src != model.cfg.pad_id).sum(1) + max_extra
    return n.clamp(max=max(model.cfg.max_len - 1, 0))


def _banned_tokens(cfg) -> list[int]:
    return sorted({cfg.pad_id, cfg.bos_id} - {cfg.eos_id})


def _next_log_probs(model, prefix, memory, src_mask, cache, banned):
    """Log-probabilities (rows, V) of the token after ``prefix`` (rows, t); ``banned``
    tokens get -inf (EOS too while the prefix holds no output token yet)."""
    if cache is not None:
        states = model.decode(prefix[:, -1:], memory, src_mask, cache)
    else:  # recompute the whole prefix, project only the last position
        states = model.decode(prefix, memory, src_mask)[:, -1:]
    logits = model.project(states)[:, -1]
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    log_probs = logits.log_softmax(-1)
    if prefix.size(1) == 1:                       # minimum output length 1
        banned = banned + [model.cfg.eos_id]
    if banned:
        log_probs[:, banned] = float("-inf")
    return log_probs


def _select_rows(src_mask, index):
    return None if src_mask is None else src_mask.index_select(0, index)


# ------------------------------------------------------------------------ greedy
def greedy_decode(model: SearchModel, src: torch.Tensor,
                  max_extra: int = PAPER_SEARCH.max_extra,
                  use_cache: bool | None = None) -> list[list[int]]:
    """Most probable token at each step; batched; returns ids without BOS/EOS."""
    check_search(max_extra=max_extra)
    cfg = model.cfg
    with _inference(model):
        src = _check_src(model, src)
        B = src.size(0)
        if B == 0:
            return []
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        max_len = _max_lengths(model, src, max_extra)
        banned = _banned_tokens(cfg)
        results: list[list[int]] = [[] for _ in range(B)]

        active = (max_len > 0).nonzero().flatten()          # active sentence ids
        if active.numel() < B:
            memory, src_mask = memory.index_select(0, active), _select_rows(src_mask, active)
        prefix = torch.full((active.numel(), 1), cfg.bos_id, dtype=torch.long, device=src.device)
        cache = _cache(model, use_cache)
        t = 0
        while active.numel():
            log_probs = _next_log_probs(model, prefix, memory, src_mask, cache, banned)
            token = log_probs.argmax(-1)                                   # (active,)
            prefix = torch.cat([prefix, token[:, None]], dim=1)
            t += 1
            done = (token == cfg.eos_id) | (t >= max_len.index_select(0, active))
            if bool(done.any()):
                for r in done.nonzero().flatten().tolist():
                    out = prefix[r, 1:].tolist()
                    if out and out[-1] == cfg.eos_id:
                        out.pop()
                    results[int(active[r])] = out
                remaining = (~done).nonzero().flatten()
                active, prefix = active[remaining], prefix[remaining]
                memory = memory.index_select(0, remaining)
                src_mask = _select_rows(src_mask, remaining)
                if cache is not None:
                    cache.reorder(remaining)
        return results


# ------------------------------------------------------------------------- beam
def _close_at_limit(log_probs: torch.Tensor, at_limit: torch.Tensor, k: int, eos: int) -> None:
    """At a sentence's length limit, close every live hypothesis of it with EOS: in place,
    its ``k`` rows of ``log_probs`` keep only EOS's log-probability."""
    if bool(at_limit.any()):
        limit_rows = at_limit.repeat_interleave(k)
        eos_col = log_probs[:, eos].clone()
        log_probs[limit_rows] = float("-inf")
        log_probs[limit_rows, eos] = eos_col[limit_rows]


def _search_over(stopping: str, finished: list[list[tuple[float, list[int]]]],
                 scores: torch.Tensor, max_len: torch.Tensor, k: int,
                 alpha: float) -> torch.Tensor:
    """Which active sentences the rule ``stopping`` ends (see the module docstring), given
    each one's ``finished`` hypotheses (penalised score, ids), its live beams' ``scores``
    (sorted, best first) and its length limit: ``"count"`` once ``k`` have finished; else
    once the best finished one beats the best any live beam could still reach."""
    device = scores.device
    if stopping == "count":
        return torch.tensor([len(f) for f in finished], device=device) >= k
    best_fin = torch.tensor([max((f[0] for f in hyps), default=-math.inf) for hyps in finished],
                            dtype=torch.float64, device=device)
    lp_max = length_penalty(max_len.double() + 1, alpha)
    best_possible = scores[:, 0] / lp_max       # scores are sorted, col 0 best
    return (best_fin >= best_possible) & torch.isfinite(best_fin)


def beam_search(model: SearchModel, src: torch.Tensor, beam_size: int = PAPER_SEARCH.beam_size,
                alpha: float = PAPER_SEARCH.alpha, max_extra: int = PAPER_SEARCH.max_extra,
                use_cache: bool | None = None,
                stopping: str = "count") -> list[list[int]]:
    """Batched beam search with the GNMT length penalty; returns each sentence's best
    hypothesis (ids without BOS/EOS). See the module docstring for ``stopping``."""
    check_search(beam_size, alpha, max_extra, stopping)
    cfg = model.cfg
    V, k, eos = cfg.tgt_vocab_size, beam_size, cfg.eos_id
    if 2 * k > k * V:
        raise ValueError(f"beam_size={k} needs a vocabulary of at least 2 tokens")
    with _inference(model):
        src = _check_src(model, src)
        B = src.size(0)
        if B == 0:
            return []
        device = src.device
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        max_len = _max_lengths(model, src, max_extra)
        banned = _banned_tokens(cfg)
        finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]

        # Rows are sentence-major: row i * k + j is beam j of the i-th active sentence.
        sent = torch.arange(B, device=device)                       # active sentence ids
        memory = memory.repeat_interleave(k, dim=0)
        src_mask = None if src_mask is None else src_mask.repeat_interleave(k, dim=0)
        scores = torch.full((B, k), float("-inf"), dtype=torch.float64, device=device)
        scores[:, 0] = 0.0                      # all beams start equal: expand only one
        prefix = torch.full((B * k, 1), cfg.bos_id, dtype=torch.long, device=device)
        cache = _cache(model, use_cache)
        beam_offsets = torch.arange(k, device=device)
        t = 0                                   # tokens generated so far (BOS excluded)
        while sent.numel():
            n = sent.numel()
            log_probs = _next_log_probs(model, prefix, memory, src_mask, cache, banned)
            at_limit = t >= max_len.index_select(0, sent)                  # (n,)
            _close_at_limit(log_probs, at_limit, k, eos)
            cand = scores.unsqueeze(-1) + log_probs.view(n, k, V).double()  # (n, k, V)
            top_scores, top_idx = cand.view(n, k * V).topk(2 * k, dim=1)    # (n, 2k)
            origin, token = top_idx // V, top_idx % V
            is_eos = token == eos

            # Finished: EOS extensions ranked within the first k.
            new_eos = is_eos[:, :k] & torch.isfinite(top_scores[:, :k])
            if bool(new_eos.any()):
                lp = length_penalty(t + 1, alpha)
                for i, j in new_eos.nonzero().tolist():
                    row = i * k + int(origin[i, j])
                    finished[int(sent[i])].append(
                        (float(top_scores[i, j]) / lp, prefix[row, 1:].tolist()))

            # Live: the best k extensions that do not end in EOS (at most k do).
            rank = torch.where(is_eos, 2 * k, 0) + torch.arange(2 * k, device=device)
            live = rank.argsort(dim=1)[:, :k]                                # (n, k)
            scores = top_scores.gather(1, live)
            origin, token = origin.gather(1, live), token.gather(1, live)
            t += 1

            done = at_limit | _search_over(stopping, [finished[s] for s in sent.tolist()],
                                           scores, max_len.index_select(0, sent), k, alpha)
            remaining = (~done).nonzero().flatten()
            # reorder and drop: the rows the surviving hypotheses came from
            rows = (remaining[:, None] * k + origin.index_select(0, remaining)).flatten()
            prefix = torch.cat([prefix.index_select(0, rows),
                                token.index_select(0, remaining).flatten()[:, None]], dim=1)
            if remaining.numel() < n:
                sent_rows = (remaining[:, None] * k + beam_offsets).flatten()
                memory = memory.index_select(0, sent_rows)
                src_mask = _select_rows(src_mask, sent_rows)
            scores, sent = scores.index_select(0, remaining), sent.index_select(0, remaining)
            if cache is not None:
                cache.reorder(rows)

        results = []
        for hyps in finished:
            best = max(hyps, key=lambda h: h[0])      # first of equals: earliest, best raw
            results.append(best[1])
        return results


def decode(model, src: torch.Tensor, search: Search = PAPER_SEARCH,
           use_cache: bool | None = None) -> list[list[int]]:
    """The outputs of ``search`` over the batch ``src``: :func:`greedy_decode` for a beam of
    1 with the "count" rule (the same search, faster), else :func:`beam_search`."""
    if not isinstance(search, Search):
        raise TypeError(f"search must be a transformer.decoding.Search, got "
                        f"{type(search).__name__}")
    if search.beam_size == 1 and search.stopping == "count":
        return greedy_decode(model, src, max_extra=search.max_extra, use_cache=use_cache)
    return beam_search(model, src, beam_size=search.beam_size, alpha=search.alpha,
                       max_extra=search.max_extra, use_cache=use_cache, stopping=search.stopping)


def sequence_scores(model, src: torch.Tensor, hypotheses: Sequence[Sequence[int]]) -> torch.Tensor:
    """Model log-probability log P(hyp + EOS | src) of each hypothesis, by teacher forcing.

    Returns a (B,) float64 tensor; useful to compare what greedy and beam search found.
    """
    cfg = model.cfg
    if len(hypotheses) != src.size(0):
        raise ValueError(f"got {len(hypotheses)} hypotheses for {src.size(0)} sources")
    with _inference(model):
        src = _check_src(model, src)
        tgt = pad([list(h) for h in hypotheses], cfg.pad_id, first=cfg.bos_id,
                  last=cfg.eos_id).to(src.device)                  # BOS + hyp + EOS
        logits = model(src, tgt[:, :-1])
        log_probs = logits.double().log_softmax(-1).gather(-1, tgt[:, 1:, None]).squeeze(-1)
        valid = torch.arange(tgt.size(1) - 1, device=src.device)[None, :] < torch.tensor(
            [len(h) + 1 for h in hypotheses], device=src.device)[:, None]
        return (log_probs * valid).sum(1).cpu()


# ---------------------------------------------------------------- the input
def build_source_batch(ids: Sequence[Sequence[int]], pad_id: int, eos_id: int,
                       max_len: int | None = None, device=None) -> torch.Tensor:
    """Token lists -> (B, S) long tensor: each row is ``tokens + [eos]``, right-padded.

    Sources longer than ``max_len`` (EOS included) are cut to fit, keeping the EOS.
    """
    rows = [list(seq) if max_len is None else list(seq)[:max_len - 1] for seq in ids]
    out = pad(rows, pad_id, last=eos_id)
    return out if device is None else out.to(device)
