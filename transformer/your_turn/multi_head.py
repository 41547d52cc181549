"""Chapter 4's "Your turn": multi-head attention (projections, splitting and merging the
heads, W^O), section 3.2.2.

``check_multi_head(cls)`` builds ``cls(cfg)``, copies in the parameters of the package's
:class:`transformer.attention.MultiHeadAttention` (the skeleton's ``q_proj``, ``k_proj``,
``v_proj`` and ``out_proj``) and compares ``forward(query, key, value, visibility)``.
"""
from __future__ import annotations

import math

import torch

from ..attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from ..config import ModelConfig
from .modules import build_like, compare_module, fail, randomise
from .report import Mistake, Report, run_check


def mistakes(ref: MultiHeadAttention) -> list[Mistake]:
    """Each mistake as a function of (query, key, value, visibility), with ``ref``'s
    parameters."""
    h, d_k, d_v = ref.n_heads, ref.d_k, ref.d_v

    def split(x, d):                                   # right: (B, L, h*d) -> (B, h, L, d)
        return x.unflatten(-1, (h, d)).transpose(1, 2)

    def split_wrong(x, d):                             # (B, L, h*d) viewed as (B, h, L, d)
        return x.reshape(x.size(0), h, x.size(1), d)

    def merge(x):
        return x.transpose(1, 2).flatten(2)

    def merge_wrong(x):                                # no transpose back
        return x.reshape(x.size(0), x.size(2), -1)

    def attend(q, k, v, mask, scale=None):
        if scale is None:
            return scaled_dot_product_attention(q, k, v, mask)[0]
        scores = (q @ k.transpose(-2, -1)) * scale
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, -1).nan_to_num(0.0) @ v

    def variant(q_from="query", k_from="key", v_from="value", splitter=split, merger=merge,
                out=True, scale=None, use_mask=True, proj=("q", "k", "v"), invert=False):
        projections = {"q": ref.q_proj, "k": ref.k_proj, "v": ref.v_proj}

        def compute(query, key, value, visibility=None):
            src = {"query": query, "key": key, "value": value}
            q = splitter(projections[proj[0]](src[q_from]), d_k)
            k = splitter(projections[proj[1]](src[k_from]), d_k)
            v = splitter(projections[proj[2]](src[v_from]), d_v)
            mask = visibility if use_mask else None
            if invert and mask is not None:
                mask = ~mask
            heads = merger(attend(q, k, v, mask, scale))
            return ref.out_proj(heads) if out else heads
        return compute

    return [
        Mistake("heads split along the wrong dimension",
                "Reshape (B, L, h*d_k) to (B, L, h, d_k) and then swap the L and h axes "
                "(.transpose(1, 2)); viewing it directly as (B, h, L, d_k) mixes positions "
                "and heads.", variant(splitter=split_wrong)),
        Mistake("heads merged without moving the head axis back",
                "Before flattening (B, h, L, d_v) into (B, L, h*d_v), transpose it to "
                "(B, L, h, d_v): Concat(head_1, ..., head_h) puts each position's heads "
                "side by side.", variant(merger=merge_wrong)),
        Mistake("both split and merge without the transpose",
                "Split: .unflatten(-1, (h, d_k)).transpose(1, 2); merge: .transpose(1, 2)"
                ".flatten(2).", variant(splitter=split_wrong, merger=merge_wrong)),
        Mistake("no output projection W^O",
                "MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O: apply self.out_proj "
                "to the merged heads.", variant(out=False)),
        Mistake("scaled by sqrt(d_model) instead of sqrt(d_k)",
                "Inside each head the keys have d_k = d_model / h numbers: divide by "
                "sqrt(d_k), which scaled_dot_product_attention does when given the split "
                "heads.", variant(scale=1 / math.sqrt(h * d_k))),
        Mistake("no 1/sqrt(d_k) scaling", "Divide each head's scores by sqrt(d_k).",
                variant(scale=1.0)),
        Mistake("the mask inverted",
                "visibility is True where a query MAY attend; pass it on as it is.",
                variant(invert=True)),
        Mistake("the mask not passed on",
                "Hand `visibility` to the attention of every head.", variant(use_mask=False)),
        Mistake("the queries and the keys swapped",
                "The queries come from `query` (through W^Q), the keys from `key` (W^K).",
                variant(q_from="key", k_from="query")),
        Mistake("the values taken from the keys",
                "V is `value` projected by W^V (self.v_proj(value)), not the keys.",
                variant(v_from="key")),
        Mistake("the projections W^Q and W^K swapped",
                "Project the queries with self.q_proj and the keys with self.k_proj.",
                variant(proj=("k", "q", "v"))),
    ]


def _reference(cfg: ModelConfig, seed: int) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return randomise(MultiHeadAttention(cfg), seed).eval()


def attempt(cls) -> Report:
    report = Report("your MultiHeadAttention")
    g = torch.Generator().manual_seed(4)
    r = lambda *shape: torch.randn(*shape, generator=g)                        # noqa: E731
    configs = [(ModelConfig(d_model=32, n_heads=4), "d_model = 32, h = 4"),
               (ModelConfig(d_model=24, n_heads=1), "one head, d_model = 24"),
               (ModelConfig(d_model=64, n_heads=8), "d_model = 64, h = 8, d_k = 8")]
    pad = torch.tensor([True] * 5 + [False] * 2)[None, None, None, :]          # (1, 1, 1, 7)
    names = ("batch", "position", "feature")
    for index, (cfg, label) in enumerate(configs):
        ref = _reference(cfg, index)
        mine, why = build_like(cls, cfg, ref, {}, "MultiHeadAttention")
        if why:
            return fail(report, f"building the layer ({label})", why)
        d = cfg.d_model
        x, memory, other = r(2, 5, d), r(2, 7, d), r(2, 7, d)
        cases = [(f"self-attention, batch 2, 5 positions ({label})", (x, x, x, None))]
        if index == 0:
            cases += [
                ("encoder-decoder attention: 5 queries over 7 keys and values",
                 (x, memory, memory, None)),
                ("keys and values that differ", (x, memory, other, None)),
                ("a padding mask (batch, 1, 1, keys)", (x[:1], memory[:1], memory[:1], pad)),
                ("the causal mask of 7 positions", (memory, memory, memory, causal_mask(7))),
                ("a batch of one, a single token", (x[:1, :1], x[:1, :1], x[:1, :1], None)),
                ("a long input: 200 positions", (r(1, 200, d),) * 3 + (causal_mask(200),)),
            ]
        for title, inputs in cases:
            if not compare_module(report, title, mine, ref, inputs, mistakes(ref), 1e-4,
                                  names):
                return report
        if index == 0:
            mine16 = mine.to(torch.bfloat16)
            bf16 = tuple(t.bfloat16() for t in (x, memory, memory)) + (None,)
            ok = compare_module(report, "bfloat16 weights and inputs", mine16, ref, bf16,
                                [], 6e-2, names, cast=lambda t: t if t is None else t.float())
            mine.float()
            if not ok:
                return report
    return report


def check_multi_head(cls, quiet: bool = False) -> Report:
    """Check the class ``cls`` (built as ``cls(cfg)``) against the package's
    :class:`~transformer.attention.MultiHeadAttention`."""
    return run_check("your MultiHeadAttention", cls, MultiHeadAttention, attempt, quiet)
