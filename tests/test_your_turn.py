"""The checks of the learner's parts (transformer.your_turn) and the chapters' "Your turn".

Each mistake below is written as a learner would write it, independently of the checks'
own list of mistakes: the package's part and the harmless variants pass, every planted
mistake fails with a message that names it. The chapters 3-8 each hold the exercise, its
check and its folded solution; the capstone's model is the package's model.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer.attention import (MultiHeadAttention, ScaledDotProductAttention, causal_mask,
                                   scaled_dot_product_attention)
from transformer.config import ModelConfig
from transformer.decoding import beam_search, length_penalty
from transformer.feedforward import PositionwiseFeedForward
from transformer.layers import DecoderLayer, EncoderLayer
from transformer.loss import label_smoothed_nll_loss
from transformer.model import Transformer
from transformer.positional import sinusoidal_encoding
from transformer.schedule import noam_lr
from transformer.your_turn import (CheckFailed, Parts, assemble, beam_search_sentence,
                                   check_attention, check_beam_search, check_decoder_layer,
                                   check_encoder_layer, check_loss, check_multi_head,
                                   check_positional, check_schedule)
from transformer.your_turn.attention import MISTAKES as ATTENTION_MISTAKES
from transformer.your_turn.report import first_matching
from transformer.your_turn.search import ScriptedModel, _random_default

REPO = Path(__file__).resolve().parents[1]


def fails_naming(check, part, name: str) -> str:
    with pytest.raises(CheckFailed) as failure:
        check(part, quiet=True)
    message = str(failure.value)
    assert f"Likely mistake: {name}" in message, message
    return message


# ------------------------------------------------------------------ chapter 3: attention
def learner_attention(bug=None, fill=float("-inf")):
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1)
        if bug != "no scale":
            scores = scores / (q.size(-1) if bug == "d_k" else math.sqrt(q.size(-1)))
        if mask is not None and bug != "after":
            scores = scores.masked_fill(mask if bug == "inverted" else ~mask, fill)
        weights = torch.softmax(scores, dim=-2 if bug == "axis" else -1)
        if mask is not None and bug == "after":
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights
    return attention


ATTENTION_BUGS = {"no scale": "no 1/sqrt(d_k) scaling",
                  "d_k": "scaled by d_k instead of sqrt(d_k)",
                  "axis": "the softmax over the wrong axis",
                  "inverted": "the mask inverted",
                  "after": "the mask applied after the softmax"}


def test_a_mistake_that_changes_nothing_in_a_case_is_never_named_for_it():
    """Weights returned wrong with a right output, in a case with no mask: no mask mistake
    (each gives equation (1) itself there) may be named."""
    def scores_as_weights(q, k, v, mask=None):
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return out, q @ k.transpose(-2, -1)
    with pytest.raises(CheckFailed) as failure:
        check_attention(scores_as_weights, quiet=True)
    assert "the weights differ" in str(failure.value)
    assert "Likely mistake" not in str(failure.value)


def test_hidden_scores_set_to_zero_and_scaling_after_the_softmax_are_named():
    def zero_fill(q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        w = (s if mask is None else s.masked_fill(~mask, 0.0)).softmax(-1)
        return w @ v, w

    def scaled_late(q, k, v, mask=None):
        s = q @ k.transpose(-2, -1)
        w = (s if mask is None else s.masked_fill(~mask, float("-inf"))).softmax(-1)
        w = w / math.sqrt(q.size(-1))
        return w @ v, w
    fails_naming(check_attention, zero_fill, "hidden scores set to 0 instead of -inf")
    fails_naming(check_attention, scaled_late, "the scaling applied after the softmax")


@pytest.mark.parametrize("bug", ATTENTION_BUGS)
def test_a_mistake_in_attention_is_named(bug):
    fails_naming(check_attention, learner_attention(bug), ATTENTION_BUGS[bug])


def einsum_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


@pytest.mark.parametrize("variant", [
    scaled_dot_product_attention, learner_attention(), einsum_attention,
    learner_attention(fill=-1e9),
    lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)],
    ids=["package", "plain", "einsum", "minus 1e9", "fused, output only"])
def test_attention_written_another_right_way_passes(variant):
    assert check_attention(variant, quiet=True).passed


def test_a_query_that_sees_nothing_is_a_note_not_a_failure():
    report = check_attention(learner_attention(fill=-1e9), quiet=True)
    notes = [o for o in report.outcomes if o.note]
    assert report.passed and len(notes) == 1 and "see no key" in notes[0].case


def test_an_unwritten_part_shows_the_books_own_check(capsys):
    def skeleton(q, k, v, mask=None):
        raise NotImplementedError("your turn")
    assert check_attention(skeleton) is None
    out = capsys.readouterr().out
    assert "not written yet" in out and "All 9 cases agree" in out


def test_a_failure_says_where_and_by_how_much(capsys):
    with pytest.raises(CheckFailed):
        check_attention(learner_attention("inverted"))
    out = capsys.readouterr().out
    assert "FAIL  a padding mask" in out and "the weights differ at" in out
    assert re.search(r"\[batch \d+, head \d+, query \d+, key \d+\]: expected", out), out


def test_the_output_of_bfloat16_inputs_must_stay_bfloat16():
    def upcasts(q, k, v, mask=None):
        out, w = scaled_dot_product_attention(q.float(), k.float(), v.float(), mask)
        return out, w
    with pytest.raises(CheckFailed, match="bfloat16"):
        check_attention(upcasts, quiet=True)


@pytest.mark.parametrize("seed", range(25))
def test_property_random_shapes_and_masks_name_the_planted_mistake(seed):
    """On random shapes and masks, a planted mistake whose output differs from equation (1)
    is named as that mistake (or one that gives the same numbers)."""
    g = torch.Generator().manual_seed(seed)
    B, h, Lq, Lk, d_k, d_v = (int(torch.randint(1, 4, (1,), generator=g)),
                              int(torch.randint(1, 4, (1,), generator=g)),
                              *(int(x) for x in torch.randint(2, 9, (4,), generator=g)))
    q, k, v = (torch.randn(B, h, Lq, d_k, generator=g), torch.randn(B, h, Lk, d_k, generator=g),
               torch.randn(B, h, Lk, d_v, generator=g))
    kind = seed % 3
    mask = [torch.rand(B, 1, 1, Lk, generator=g) > 0.3, causal_mask(Lq, Lk),
            torch.rand(B, h, Lq, Lk, generator=g) > 0.4][kind] | (torch.arange(Lk) == 0)
    expected = scaled_dot_product_attention(q, k, v, mask)[1]
    for bug, name in ATTENTION_BUGS.items():
        weights = learner_attention(bug)(q, k, v, mask)[1].nan_to_num(0.0)
        if torch.allclose(weights, expected, atol=1e-5):
            continue
        found = first_matching(ATTENTION_MISTAKES, (q, k, v, mask), weights, 1e-5, 1e-4,
                               pick=lambda o: o[1])
        assert found is not None, (bug, seed)
        same = next(m for m in ATTENTION_MISTAKES if m.name == name).compute(q, k, v, mask)[1]
        assert found.name == name or torch.allclose(found.compute(q, k, v, mask)[1], same,
                                                    atol=1e-5), (bug, found.name)


# ------------------------------------------------------- chapter 4: multi-head attention
class LearnerMultiHead(nn.Module):
    bug = None

    def __init__(self, cfg):
        super().__init__()
        self.n_heads, self.d_k, self.d_v = cfg.n_heads, cfg.d_k, cfg.d_v
        d, hk, hv = cfg.d_model, cfg.n_heads * cfg.d_k, cfg.n_heads * cfg.d_v
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, hk), nn.Linear(d, hk), nn.Linear(d, hv)
        self.out_proj = nn.Linear(hv, d)
        self.attention = ScaledDotProductAttention(cfg.attention_dropout)

    def forward(self, query, key, value, visibility=None):
        B, h = query.size(0), self.n_heads
        if self.bug == "swap q k":
            query, key = key, query

        def split(x, d):
            if self.bug == "split":
                return x.reshape(B, h, -1, d)
            return x.view(B, -1, h, d).transpose(1, 2)
        q, k, v = split(self.q_proj(query), self.d_k), split(self.k_proj(key), self.d_k), \
            split(self.v_proj(value), self.d_v)
        if self.bug == "inverted mask" and visibility is not None:
            visibility = ~visibility
        if self.bug == "sqrt d_model":
            q = q * math.sqrt(self.d_k) / math.sqrt(h * self.d_k)
        heads, _ = self.attention(q, k, v, visibility)
        merged = (heads.reshape(B, -1, h * self.d_v) if self.bug == "merge"
                  else heads.transpose(1, 2).reshape(B, -1, h * self.d_v))
        return merged if self.bug == "no W^O" else self.out_proj(merged)


def learner_multi_head(bug):
    return type(f"MultiHead_{bug}", (LearnerMultiHead,), {"bug": bug})


MULTI_HEAD_BUGS = {"split": "heads split along the wrong dimension",
                   "merge": "heads merged without moving the head axis back",
                   "no W^O": "no output projection W^O",
                   "sqrt d_model": "scaled by sqrt(d_model) instead of sqrt(d_k)",
                   "swap q k": "the queries and the keys swapped",
                   "inverted mask": "the mask inverted"}


@pytest.mark.parametrize("bug", MULTI_HEAD_BUGS)
def test_a_mistake_in_multi_head_attention_is_named(bug):
    fails_naming(check_multi_head, learner_multi_head(bug), MULTI_HEAD_BUGS[bug])


class HeadByHead(LearnerMultiHead):
    """Chapter 4's "heads are subspaces": one head at a time, then concatenated."""

    def forward(self, query, key, value, visibility=None):
        heads = []
        for i in range(self.n_heads):
            rows_k, rows_v = slice(i * self.d_k, (i + 1) * self.d_k), slice(i * self.d_v, (i + 1) * self.d_v)
            q = F.linear(query, self.q_proj.weight[rows_k], self.q_proj.bias[rows_k])
            k = F.linear(key, self.k_proj.weight[rows_k], self.k_proj.bias[rows_k])
            v = F.linear(value, self.v_proj.weight[rows_v], self.v_proj.bias[rows_v])
            m = None if visibility is None else visibility[..., 0, :, :] if visibility.dim() == 4 \
                else visibility
            heads.append(F.scaled_dot_product_attention(q, k, v, attn_mask=m))
        return self.out_proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("variant", [MultiHeadAttention, learner_multi_head(None), HeadByHead],
                         ids=["package", "plain", "head by head, fused"])
def test_multi_head_attention_written_another_right_way_passes(variant):
    assert check_multi_head(variant, quiet=True).passed


def test_an_unwritten_part_names_what_still_raises(capsys):
    class Residual(LearnerResidual):
        def forward(self, x, sublayer):
            raise NotImplementedError("your turn: LayerNorm(x + Dropout(sublayer(x)))")
    encoder = learner_encoder()
    class Encoder(encoder):
        def __init__(self, cfg, attention=MultiHeadAttention):
            super().__init__(cfg, attention)
            self.attn_block, self.ff_block = Residual(cfg), Residual(cfg)
    check_encoder_layer(Encoder)
    out = " ".join(capsys.readouterr().out.split())            # as wrapped for the page
    assert "your turn: LayerNorm(x + Dropout(sublayer(x)))" in out


def test_a_layer_with_other_parameters_is_told_to_keep_the_init():
    class Renamed(LearnerMultiHead):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.w_o = self.out_proj
            del self.out_proj
    with pytest.raises(CheckFailed, match="keep the __init__ as given"):
        check_multi_head(Renamed, quiet=True)


# ---------------------------------------------------------- chapter 5: the positional table
def learner_positions(bug=None, base=10000.0):
    def table(max_len, d_model):
        pos = torch.arange(1 if bug == "from 1" else 0, max_len + (bug == "from 1"))[:, None]
        i = torch.arange(0, d_model, 2)
        angle = pos / base ** ((i / 2 if bug == "i" else i) / d_model)
        pe = torch.zeros(max_len, d_model)
        if bug == "halves":
            pe[:, :d_model // 2], pe[:, d_model // 2:] = angle.sin(), angle.cos()
        else:
            first, second = (angle.cos(), angle.sin()) if bug == "swapped" else (angle.sin(), angle.cos())
            pe[:, 0::2], pe[:, 1::2] = first, second
        return pe
    return table


POSITION_BUGS = {"swapped": "sin and cos swapped",
                 "halves": "sines and cosines in two halves instead of interleaved",
                 "i": "the exponent uses i instead of 2i",
                 "from 1": "positions counted from 1"}


@pytest.mark.parametrize("bug", POSITION_BUGS)
def test_a_mistake_in_the_positional_table_is_named(bug):
    fails_naming(check_positional, learner_positions(bug), POSITION_BUGS[bug])


def test_a_wrong_base_is_estimated():
    message = fails_naming(check_positional, learner_positions(base=5000.0),
                           "the base is about 5,000 instead of 10000")
    assert "position" in message and "dimension" in message


def annotated_positions(max_len, d_model):            # the Annotated Transformer's way
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
    return pe


@pytest.mark.parametrize("variant", [sinusoidal_encoding, learner_positions(), annotated_positions,
                                     lambda n, d: sinusoidal_encoding(n, d).double().numpy()],
                         ids=["package", "plain", "exp-log", "numpy float64"])
def test_the_positional_table_written_another_right_way_passes(variant):
    assert check_positional(variant, quiet=True).passed


# ---------------------------------------------------------------- chapter 6: the layers
class LearnerResidual(nn.Module):
    rule = "post"

    def __init__(self, cfg):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, sublayer):
        if self.rule == "pre":
            return x + self.dropout(sublayer(self.norm(x)))
        if self.rule == "no residual":
            return self.norm(self.dropout(sublayer(x)))
        if self.rule == "no dropout":
            return self.norm(x + sublayer(x))
        if self.rule == "dropout last":
            return self.dropout(self.norm(x + sublayer(x)))
        return self.norm(x + self.dropout(sublayer(x)))


def learner_encoder(rule="post", mask=True):
    residual = type("Residual", (LearnerResidual,), {"rule": rule})

    class Encoder(nn.Module):
        def __init__(self, cfg, attention=MultiHeadAttention):
            super().__init__()
            self.self_attn = attention(cfg)
            self.feed_forward = PositionwiseFeedForward(cfg)
            self.attn_block, self.ff_block = residual(cfg), residual(cfg)

        def forward(self, x, visibility=None):
            seen = visibility if mask else None
            x = self.attn_block(x, lambda h: self.self_attn(h, h, h, seen))
            return self.ff_block(x, self.feed_forward)
    return Encoder


ENCODER_BUGS = {("pre", True): "LayerNorm in the wrong place: before the sub-layer (pre-norm)",
                ("no residual", True): "no residual connections",
                ("no dropout", True): "no dropout",
                ("dropout last", True): "dropout applied after the LayerNorm",
                ("post", False): "the padding mask not passed to the self-attention"}


@pytest.mark.parametrize("bug", ENCODER_BUGS, ids=[f"{r}, mask {m}" for r, m in ENCODER_BUGS])
def test_a_mistake_in_the_encoder_layer_is_named(bug):
    fails_naming(check_encoder_layer, learner_encoder(*bug), ENCODER_BUGS[bug])


def learner_decoder(bug=None):
    class Decoder(nn.Module):
        def __init__(self, cfg, attention=MultiHeadAttention):
            super().__init__()
            self.self_attn, self.cross_attn = attention(cfg), attention(cfg)
            self.feed_forward = PositionwiseFeedForward(cfg)
            self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, y, memory, self_visibility=None, memory_visibility=None):
            causal = None if bug in ("no causal", "masks swapped") else self_visibility
            if bug == "masks swapped":
                causal, memory_visibility = memory_visibility, self_visibility
            blocks = [(self.norm1, lambda h: self.self_attn(h, h, h, causal)),
                      (self.norm2, (lambda h: self.cross_attn(memory, h, h, memory_visibility))
                       if bug == "swap" else
                       (lambda h: self.cross_attn(h, memory, memory, memory_visibility)))]
            if bug == "order":
                blocks = [(self.norm1, blocks[1][1]), (self.norm2, blocks[0][1])]
            for norm, sublayer in blocks + [(self.norm3, self.feed_forward)]:
                y = norm(y + self.dropout(sublayer(y)))
            return y
    return Decoder


DECODER_BUGS = {"swap": "queries and keys/values swapped in the encoder-decoder attention",
                "no causal": "the causal mask not used in the self-attention",
                "order": "the encoder-decoder attention before the self-attention",
                "masks swapped": "the two masks swapped"}


@pytest.mark.parametrize("bug", DECODER_BUGS)
def test_a_mistake_in_the_decoder_layer_is_named(bug):
    fails_naming(check_decoder_layer, learner_decoder(bug), DECODER_BUGS[bug])


@pytest.mark.parametrize("check, variant", [
    (check_encoder_layer, EncoderLayer), (check_encoder_layer, learner_encoder()),
    (check_decoder_layer, DecoderLayer), (check_decoder_layer, learner_decoder())],
    ids=["encoder, package", "encoder, own residual", "decoder, package", "decoder, own names"])
def test_layers_written_another_right_way_pass(check, variant):
    assert check(variant, quiet=True).passed


# -------------------------------------------------------- chapter 7: the loss and schedule
def learner_loss(bug=None):
    def loss(logits, target, smoothing, pad_id):
        V = logits.size(-1)
        log_p = (logits.float().softmax(-1) if bug == "probs" else logits.float().log_softmax(-1))
        eps = 0.0 if bug == "no smoothing" else smoothing
        if bug == "swap":
            eps = 1 - eps
        rest = eps / (V - 1) if bug == "V-1" else eps / V
        q = torch.full(log_p.shape, rest)
        q.scatter_(-1, target.unsqueeze(-1), 1 - eps + (0 if bug == "V-1" else eps / V))
        per_token = -(q * log_p).sum(-1)
        if bug != "pad":
            per_token = per_token.masked_fill(target == (0 if bug == "pad 0" else pad_id), 0.0)
        if bug == "batch":
            return per_token.sum() / logits.size(0)
        return per_token.sum() / ((target != pad_id).sum() if bug == "mean" else 1)
    return loss


LOSS_BUGS = {"pad": "padding not masked", "mean": "the mean instead of the sum",
             "V-1": "the smoothing mass given to the wrong classes",
             "swap": "eps and 1 - eps swapped",
             "no smoothing": "no smoothing (plain cross-entropy)",
             "probs": "probabilities where log-probabilities belong",
             "pad 0": "the padding id taken as 0",
             "batch": "the loss divided by the batch size"}


@pytest.mark.parametrize("bug", LOSS_BUGS)
def test_a_mistake_in_the_loss_is_named(bug):
    fails_naming(check_loss, learner_loss(bug), LOSS_BUGS[bug])


def torch_loss(logits, target, smoothing, pad_id):
    return F.cross_entropy(logits.float().flatten(0, -2), target.flatten(), reduction="sum",
                           label_smoothing=smoothing, ignore_index=pad_id)


def kl_loss(logits, target, smoothing, pad_id):
    log_p = logits.float().log_softmax(-1)
    q = torch.full(log_p.shape, smoothing / logits.size(-1))
    q.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(q[..., :1], 1 - smoothing))
    return F.kl_div(log_p, q, reduction="none").sum(-1).masked_fill(target == pad_id, 0).sum()


@pytest.mark.parametrize("variant", [label_smoothed_nll_loss, learner_loss(), torch_loss, kl_loss],
                         ids=["package", "plain", "F.cross_entropy", "KL divergence"])
def test_the_loss_written_another_right_way_passes(variant):
    assert check_loss(variant, quiet=True).passed


def test_the_kl_divergence_passes_with_its_reason():
    report = check_loss(kl_loss, quiet=True)
    assert any("KL divergence" in d for o in report.outcomes for d in o.details)


def learner_schedule(bug=None):
    def lrate(step, d_model, warmup=4000):
        s = step - 1 if bug == "from 0" else step
        warm = (1 if bug == "no step" else s) * warmup ** (-0.5 if bug == "warm power" else -1.5)
        pick = max if bug == "max" else min
        return d_model ** (-1 if bug == "d_model" else -0.5) * pick(max(s, 1e-12) ** -0.5, warm)
    return lrate


SCHEDULE_BUGS = {"warm power": "the warm-up's power is -0.5 instead of -1.5",
                 "from 0": "steps counted from 0", "max": "max instead of min",
                 "d_model": "d_model's power is -1 instead of -0.5",
                 "no step": "the step left out of the warm-up branch"}


@pytest.mark.parametrize("bug", SCHEDULE_BUGS)
def test_a_mistake_in_the_schedule_is_named(bug):
    fails_naming(check_schedule, learner_schedule(bug), SCHEDULE_BUGS[bug])


def branchy_schedule(step, d_model, warmup=4000):
    rate = step / warmup ** 1.5 if step < warmup else 1 / math.sqrt(step)
    return rate / math.sqrt(d_model)


@pytest.mark.parametrize("variant", [noam_lr, learner_schedule(), branchy_schedule],
                         ids=["package", "plain", "if-else"])
def test_the_schedule_written_another_right_way_passes(variant):
    assert check_schedule(variant, quiet=True).passed


# ---------------------------------------------------------------- chapter 8: beam search
def learner_search(bug=None, stop="count"):
    """A learner's one-sentence search: the k best of all extensions, finished ones kept
    apart; ``stop="bound"`` stops only when no live hypothesis can win."""
    def search(model, src, beam_size=4, alpha=0.6, max_extra=50):
        cfg, src_mask = model.cfg, model.source_mask(src)
        memory = model.encode(src, src_mask)
        max_len = min(int((src != cfg.pad_id).sum()) + max_extra, cfg.max_len - 1)
        k = 1 if bug == "greedy" else (4 if bug == "fixed beam" else beam_size)
        lp = ((lambda n: 1.0) if bug == "no penalty" else (lambda n: 1 / length_penalty(n, alpha))
              if bug == "multiplies" else (lambda n: length_penalty(n - 1, alpha))
              if bug == "no EOS in |Y|" else (lambda n: length_penalty(n, alpha)))
        live, finished = [([cfg.bos_id], 0.0)], []
        for t in range(1, max_len + 2 if bug != "no limit" else 10_000):
            options = []
            for prefix, score in live:
                states = model.decode(torch.tensor([prefix]), memory, src_mask)
                log_p = model.project(states)[0, -1].double().log_softmax(-1)
                if t == max_len + 1 and bug != "no limit":
                    options.append((score + float(log_p[cfg.eos_id]), prefix + [cfg.eos_id]))
                    continue
                options += [(score + float(v), prefix + [i]) for i, v in enumerate(log_p.tolist())
                            if i not in (cfg.pad_id, cfg.bos_id)
                            and (t > 1 or i != cfg.eos_id or bug == "EOS first")]
            options.sort(key=lambda o: -o[0])
            live = []
            for score, prefix in options[:k]:
                if prefix[-1] == cfg.eos_id and bug != "grows":
                    finished.append((score / lp(len(prefix) - 1), prefix[1:-1]))
                else:
                    live.append((prefix, score))
            best = max((f[0] for f in finished), default=-math.inf)
            if stop == "count" and len(finished) >= k or not live:
                break
            if stop == "bound" and best >= max(s for _, s in live) / lp(max_len + 1):
                break
        if bug == "grows":
            return max(live, key=lambda h: h[1] / lp(len(h[0])))[0][1:]
        return max(finished)[1]
    return search


SEARCH_BUGS = {"greedy": "the search keeps only one hypothesis (greedy)",
               "no penalty": "the length penalty missing or miscomputed",
               "multiplies": "the length penalty missing or miscomputed",
               "no EOS in |Y|": "|Y| in the length penalty without the end token",
               "EOS first": "an empty output: EOS allowed first",
               "grows": "a beam that keeps growing after the end token",
               "fixed beam": "beam_size ignored",
               "no limit": "no length limit"}


@pytest.mark.parametrize("bug", SEARCH_BUGS)
def test_a_mistake_in_beam_search_is_named(bug):
    fails_naming(check_beam_search, learner_search(bug), SEARCH_BUGS[bug])


@pytest.mark.parametrize("variant", [beam_search_sentence, learner_search(),
                                     learner_search(stop="bound"),
                                     lambda m, s, **kw: beam_search(m, s, **kw)],
                         ids=["solution", "finished kept apart", "bound stopping", "batched"])
def test_beam_search_written_another_right_way_passes(variant):
    assert check_beam_search(variant, quiet=True).passed


@pytest.mark.parametrize("seed", range(12))
def test_the_one_sentence_solution_is_the_packages_search(seed):
    model = ScriptedModel({}, vocab=9, default=_random_default(1000 + seed, 9), longest=30)
    src = torch.tensor([[4, 5, 6, 2]])
    for k in (1, 2, 4):
        for alpha in (0.0, 0.6, 1.0):
            assert beam_search_sentence(model, src, k, alpha, 5) == beam_search(
                model, src, beam_size=k, alpha=alpha, max_extra=5)[0], (seed, k, alpha)


def test_a_check_names_at_least_25_mistakes_across_the_chapters():
    planted = [ATTENTION_BUGS, MULTI_HEAD_BUGS, POSITION_BUGS, ENCODER_BUGS, DECODER_BUGS,
               LOSS_BUGS, SCHEDULE_BUGS, SEARCH_BUGS]
    assert all(len(bugs) >= 3 for bugs in planted)
    assert sum(map(len, planted)) + 1 >= 25          # + the estimated base


def test_the_capstone_says_when_a_layer_bypasses_self_attention():
    class Bypass(LearnerMultiHead):
        def forward(self, query, key, value, visibility=None):
            B, h = query.size(0), self.n_heads
            q, k, v = (p(x).view(B, -1, h, self.d_k).transpose(1, 2) for p, x in
                       ((self.q_proj, query), (self.k_proj, key), (self.v_proj, value)))
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=visibility)
            return self.out_proj(heads.transpose(1, 2).flatten(2))
    cfg = ModelConfig(vocab_size=20, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1,
                      n_decoder_layers=1, max_len=40)
    model = assemble(cfg, Parts(multi_head=Bypass))
    with pytest.raises(ValueError, match="does not call self.attention"):
        model.attention_maps(torch.randint(4, 20, (1, 5)), torch.randint(4, 20, (1, 3)))


# ------------------------------------------------------------------------- the capstone
def test_the_capstone_with_the_books_parts_is_the_packages_model():
    cfg = ModelConfig(vocab_size=20, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                      n_decoder_layers=2, max_len=40)
    torch.manual_seed(0)
    package, mine = Transformer(cfg).eval(), assemble(cfg, Parts()).eval()
    state = {("embed.weight" if k == "src_embed.weight" else k): v
             for k, v in package.state_dict().items()
             if k not in ("tgt_embed.weight", "output_weight")}
    mine.load_state_dict(state)
    src, tgt_in = torch.randint(4, 20, (3, 7)), torch.randint(4, 20, (3, 5))
    src[1, 5:] = 0
    with torch.no_grad():
        assert torch.allclose(mine(src, tgt_in), package(src, tgt_in), atol=1e-5)
        maps = mine.attention_maps(src, tgt_in)
    assert maps["decoder.1.cross"].shape == (3, 4, 5, 7)
    assert maps["decoder.1.cross"][1, :, :, 5:].abs().max() == 0       # padding unseen


def test_the_capstone_uses_the_learners_parts():
    calls = []

    def attention(q, k, v, mask=None):
        calls.append(q.shape)
        return scaled_dot_product_attention(q, k, v, mask)
    cfg = ModelConfig(vocab_size=20, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1,
                      n_decoder_layers=1, max_len=40)
    model = assemble(cfg, Parts(attention=attention, multi_head=learner_multi_head(None),
                                encoder_layer=learner_encoder(), decoder_layer=learner_decoder()))
    model(torch.randint(4, 20, (2, 6)), torch.randint(4, 20, (2, 4)))
    assert len(calls) == 3                    # encoder self, decoder self, decoder cross
    assert Parts(attention=attention).yours() == ["attention"]


# ----------------------------------------------------------------------- the chapters
YOUR_TURN = {"03_attention": ["check_attention"], "04_multi_head": ["check_multi_head"],
             "05_positional": ["check_positional"],
             "06_model": ["check_encoder_layer", "check_decoder_layer"],
             "07_training": ["check_schedule", "check_loss"],
             "08_decoding": ["check_beam_search"]}


def cells(name):
    return json.loads((REPO / "book" / f"{name}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("chapter", YOUR_TURN)
def test_each_chapter_has_its_your_turn_check_and_folded_solution(chapter):
    nb = cells(chapter)
    text = ["".join(c["source"]) for c in nb]
    skeletons = [i for i, c in enumerate(nb) if "your-turn" in c["metadata"].get("tags", [])]
    assert skeletons, f"{chapter}: no skeleton cell tagged your-turn"
    for i in skeletons:
        assert nb[i]["cell_type"] == "code" and "raise NotImplementedError" in text[i]
        hidden = {"remove-cell", "hide-cell", "remove-input", "nbval-skip", "raises-exception"}
        assert not hidden & set(nb[i]["metadata"].get("tags", [])), "the skeleton is shown"
    for check in YOUR_TURN[chapter]:
        calls = [i for i, t in enumerate(text) if re.search(rf"^{check}\(\w+\)", t, re.M)]
        assert calls and nb[calls[0]]["cell_type"] == "code", (chapter, check)
        assert calls[0] > max(skeletons[:1]), "the check follows its skeleton"
        assert not {"nbval-skip", "raises-exception"} & set(
            nb[calls[0]]["metadata"].get("tags", [])), "a failing check must fail the build"
    solutions = [t for t in text if ":class: dropdown" in t and "Solution" in t]
    assert len(solutions) == len([t for t in text if re.match(r"\(ch\d-your-turn", t)])
    for solution in solutions:
        for path, name in re.findall(r"literalinclude\}\s*\.\./transformer/(\S+)\n:pyobject: (\w+)",
                                     solution):
            assert f"def {name}" in (REPO / "transformer" / path).read_text() or \
                f"class {name}" in (REPO / "transformer" / path).read_text()
    config = (REPO / "_config.yml").read_text()
    repository = re.search(r"url: https://github.com/(\S+)", config).group(1)
    links = re.findall(r"colab\.research\.google\.com/github/(\S+?)/blob/main/book/(\w+)\.ipynb",
                       "\n".join(text))
    assert links and all(r == repository and c == chapter for r, c in links), links


def test_the_capstone_is_in_the_learning_path_after_chapter_8():
    toc = (REPO / "_toc.yml").read_text()
    assert toc.index("book/08_decoding") < toc.index("book/your_transformer") < toc.index(
        "book/09_attention_explorer")
