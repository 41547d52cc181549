"""Chapter 6's "Your turn": an encoder layer and a decoder layer (section 3.1), with the
residual connections and LayerNorm where the paper puts them, LayerNorm(x + Sublayer(x)).

``check_encoder_layer(cls)`` and ``check_decoder_layer(cls)`` build ``cls(cfg)`` (the
skeleton's ``__init__``, the package's parameter names: ``self_attn``, [``cross_attn``,]
``feed_forward`` and a residual block around each, ``attn_block`` and ``ff_block``, or
``self_block``, ``cross_block`` and ``ff_block``, each holding its ``norm``; a layer with
``norm1``, ``norm2`` [, ``norm3``] instead is accepted too), copy in the parameters of the package's
:class:`~transformer.layers.EncoderLayer` / :class:`~transformer.layers.DecoderLayer`
with every LayerNorm made different, and compare them in evaluation mode; then check that
dropout is active in training.
"""
from __future__ import annotations

import torch

from ..attention import causal_mask
from ..config import ModelConfig
from ..layers import DecoderLayer, EncoderLayer
from .modules import build_like, compare_module, fail, randomise
from .report import Mistake, Outcome, Report, call, run_check

ENCODER_NAMES = {"attn_block.norm": "norm1", "ff_block.norm": "norm2"}
DECODER_NAMES = {"self_block.norm": "norm1", "cross_block.norm": "norm2",
                 "ff_block.norm": "norm3"}


def _block(rule, norm, sublayer, x):
    """One residual sub-layer, the right way (post) or a wrong one."""
    if rule == "post":
        return norm(x + sublayer(x))
    if rule == "pre":
        return x + sublayer(norm(x))
    if rule == "no residual":
        return norm(sublayer(x))
    if rule == "norm inside":                       # x + LayerNorm(Sublayer(x))
        return x + norm(sublayer(x))
    if rule == "no norm":
        return x + sublayer(x)
    if rule == "skipped":
        return x
    raise ValueError(rule)


def encoder_mistakes(ref: EncoderLayer) -> list[Mistake]:
    n1, n2 = ref.attn_block.norm, ref.ff_block.norm

    def variant(attn="post", ff="post", norms=(n1, n2), use_mask=True):
        def compute(x, visibility=None):
            mask = visibility if use_mask else None
            x = _block(attn, norms[0], lambda h: ref.self_attn(h, h, h, mask), x)
            return _block(ff, norms[1], ref.feed_forward, x)
        return compute

    return [
        Mistake("no residual connections",
                "Each sub-layer's output is LayerNorm(x + Sublayer(x)): add the sub-layer's "
                "input back before the norm.", variant(attn="no residual", ff="no residual")),
        Mistake("no residual around the self-attention",
                "Each sub-layer's output is LayerNorm(x + Sublayer(x)): add the sub-layer's "
                "input back before the norm.", variant(attn="no residual")),
        Mistake("no residual around the feed-forward network",
                "The feed-forward sub-layer too is LayerNorm(x + FFN(x)).",
                variant(ff="no residual")),
        Mistake("LayerNorm in the wrong place: before the sub-layer (pre-norm)",
                "The paper normalises after the residual sum: LayerNorm(x + Sublayer(x)). "
                "x + Sublayer(LayerNorm(x)) is the later pre-norm variant.",
                variant(attn="pre", ff="pre")),
        Mistake("LayerNorm applied to the sub-layer's output, not to the sum",
                "Normalise the sum: LayerNorm(x + Sublayer(x)), not x + LayerNorm(...).",
                variant(attn="norm inside", ff="norm inside")),
        Mistake("the same LayerNorm used for both sub-layers",
                "Each sub-layer has its own residual block and norm: attn_block around the "
                "attention, ff_block around the feed-forward network.",
                variant(norms=(n1, n1))),
        Mistake("the two residual blocks swapped", "attn_block belongs to the attention "
                "sub-layer, ff_block to the feed-forward one.", variant(norms=(n2, n1))),
        Mistake("the padding mask not passed to the self-attention",
                "Hand `visibility` to self.self_attn, so that no position attends to "
                "padding.", variant(use_mask=False)),
        Mistake("the feed-forward sub-layer left out",
                "After the attention sub-layer comes LayerNorm(x + FFN(x)).",
                variant(ff="skipped")),
    ]


def decoder_mistakes(ref: DecoderLayer) -> list[Mistake]:
    n1, n2, n3 = ref.self_block.norm, ref.cross_block.norm, ref.ff_block.norm

    def variant(rules=("post",) * 3, norms=(n1, n2, n3), causal=True, memory_mask=True,
                cross="right", order=("self", "cross"), swap_masks=False):
        def compute(y, memory, self_visibility=None, memory_visibility=None):
            if swap_masks:
                self_visibility, memory_visibility = memory_visibility, self_visibility
            sm = self_visibility if causal else None
            mm = memory_visibility if memory_mask else None
            if cross == "right":
                cross_fn = lambda h: ref.cross_attn(h, memory, memory, mm)    # noqa: E731
            elif cross.startswith("swapped"):  # queries from the encoder
                cross_fn = lambda h: ref.cross_attn(memory, h, h,             # noqa: E731
                                                    mm if cross.endswith("masked") else None)
            else:                              # self-attention instead of cross
                cross_fn = lambda h: ref.cross_attn(h, h, h, sm)              # noqa: E731
            blocks = {"self": (lambda h: ref.self_attn(h, h, h, sm)),
                      "cross": cross_fn}
            for i, part in enumerate(order):
                y = _block(rules[i], norms[i], blocks[part], y)
            return _block(rules[2], norms[2], ref.feed_forward, y)
        return compute

    return [
        Mistake("the causal mask not used in the self-attention",
                "Hand `self_visibility` to self.self_attn: position i may not see the "
                "outputs after it.", variant(causal=False)),
        Mistake("the source padding mask not used in the encoder-decoder attention",
                "Hand `memory_visibility` to self.cross_attn.", variant(memory_mask=False)),
        Mistake("queries and keys/values swapped in the encoder-decoder attention",
                "In encoder-decoder attention the queries come from the decoder and the "
                "keys and values from the encoder's output: cross_attn(h, memory, memory).",
                variant(cross="swapped")),
        Mistake("queries and keys/values swapped in the encoder-decoder attention",
                "In encoder-decoder attention the queries come from the decoder and the "
                "keys and values from the encoder's output: cross_attn(h, memory, memory).",
                variant(cross="swapped, masked")),
        Mistake("the encoder-decoder attention attends to the decoder itself",
                "Its keys and values are the encoder's output, `memory`.",
                variant(cross="self")),
        Mistake("no residual connections",
                "Every sub-layer is LayerNorm(x + Sublayer(x)): add its input back before "
                "the norm.", variant(rules=("no residual",) * 3)),
        Mistake("no residual around the encoder-decoder attention",
                "Every sub-layer is LayerNorm(x + Sublayer(x)).",
                variant(rules=("post", "no residual", "post"))),
        Mistake("no residual around the self-attention",
                "Every sub-layer is LayerNorm(x + Sublayer(x)).",
                variant(rules=("no residual", "post", "post"))),
        Mistake("no residual around the feed-forward network",
                "Every sub-layer is LayerNorm(x + Sublayer(x)).",
                variant(rules=("post", "post", "no residual"))),
        Mistake("LayerNorm in the wrong place: before the sub-layer (pre-norm)",
                "The paper normalises after the residual sum: LayerNorm(x + Sublayer(x)).",
                variant(rules=("pre",) * 3)),
        Mistake("LayerNorm applied to the sub-layer's output, not to the sum",
                "Normalise the sum: LayerNorm(x + Sublayer(x)).",
                variant(rules=("norm inside",) * 3)),
        Mistake("the residual blocks mixed up", "self_block goes around the self-attention, "
                "cross_block around the encoder-decoder attention, ff_block around the "
                "feed-forward network, each with its own norm.",
                variant(norms=(n1, n1, n1))),
        Mistake("the two masks swapped",
                "self_visibility (causal) goes to the self-attention, memory_visibility "
                "(the source padding) to the encoder-decoder attention.",
                variant(swap_masks=True)),
        Mistake("the encoder-decoder attention before the self-attention",
                "The decoder layer first attends to its own earlier outputs (masked), "
                "then to the encoder's output, then applies the feed-forward network.",
                variant(order=("cross", "self"))),
    ]


def _dropout_case(report: Report, mine, x_args) -> bool:
    """In training, the output must change from call to call (dropout is active)."""
    title = "in training (model.train()), dropout changes the output from call to call"
    mine.train()
    try:
        torch.manual_seed(0)
        with torch.no_grad():
            first, second = call(mine, *x_args), call(mine, *x_args)
    finally:
        mine.eval()
    zeros = float((first == 0).float().mean())
    if zeros > 0.1:
        report.outcomes.append(Outcome(title, False, [
            f"{zeros:.0%} of the outputs are exactly 0 in training"], Mistake(
                "dropout applied after the LayerNorm",
                "Dropout goes on the sub-layer's output, before the residual sum and the "
                "norm: LayerNorm(x + Dropout(Sublayer(x))).", None)))
        return False
    if torch.equal(first, second):
        report.outcomes.append(Outcome(title, False, [
            "two calls in training mode gave the same output"], Mistake(
                "no dropout", "Section 5.4: apply dropout to the output of each sub-layer "
                "before it is added to the sub-layer input: "
                "LayerNorm(x + self.dropout(Sublayer(x))).", None)))
        return False
    report.outcomes.append(Outcome(title, True))
    return True


def _attempt(cls, reference_cls, names, mistakes_of, what, decoder: bool) -> Report:
    report = Report(f"your {what}")
    g = torch.Generator().manual_seed(6)
    r = lambda *shape: torch.randn(*shape, generator=g)                        # noqa: E731
    cfg = ModelConfig(d_model=32, n_heads=4, d_ff=64, dropout=0.0)
    torch.manual_seed(6)
    ref = randomise(reference_cls(cfg), 6).eval()
    mine, why = build_like(cls, cfg, ref, names, what)
    if why:
        return fail(report, "building the layer", why)
    pad = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])[:, None, None, :]   # (2,1,1,7)
    x, memory = r(2, 7, 32), r(2, 7, 32)
    if not decoder:
        cases = [("a batch of 2 sentences of 7 positions, no mask", (x, None)),
                 ("padding: the second sentence's last 2 positions", (x, pad)),
                 ("a batch of one, a single token", (x[:1, :1], None)),
                 ("a long input: 120 positions", (r(1, 120, 32), None))]
    else:
        y = r(2, 5, 32)
        cases = [("7 target positions over 7 source positions, causal and padding masks",
                  (x, memory, causal_mask(7), pad)),
                 ("5 target positions over 7 source positions", (y, memory, causal_mask(5),
                                                                 pad)),
                 ("the same, with no masks", (y, memory, None, None)),
                 ("a batch of one, a single target token", (y[:1, :1], memory[:1],
                                                            causal_mask(1), pad[:1])),
                 ("a long input: 90 target and 120 source positions",
                  (r(1, 90, 32), r(1, 120, 32), causal_mask(90), None))]
    names_out = ("batch", "position", "feature")
    for title, inputs in cases:
        if not compare_module(report, title, mine, ref, inputs, mistakes_of(ref), 1e-4,
                              names_out):
            return report
    mine16 = mine.to(torch.bfloat16)
    bf16 = tuple(t.bfloat16() if torch.is_tensor(t) and t.is_floating_point() else t
                 for t in cases[0][1])
    ok = compare_module(report, "bfloat16 weights and inputs", mine16, ref, bf16, [], 0.1,
                        names_out, cast=lambda t: t.float() if torch.is_tensor(t)
                        and t.is_floating_point() else t)
    mine.float()
    if not ok:
        return report
    cfg_drop = ModelConfig(d_model=32, n_heads=4, d_ff=64, dropout=0.5)
    torch.manual_seed(6)
    dropping = call(cls, cfg_drop)
    _dropout_case(report, dropping, cases[0][1])
    return report


def check_encoder_layer(cls, quiet: bool = False) -> Report:
    """Check the class ``cls`` (``cls(cfg)``, ``forward(x, visibility=None)``) against the
    package's :class:`~transformer.layers.EncoderLayer`."""
    return run_check("your EncoderLayer", cls, EncoderLayer, lambda c: _attempt(
        c, EncoderLayer, ENCODER_NAMES, encoder_mistakes, "EncoderLayer", False), quiet)


def check_decoder_layer(cls, quiet: bool = False) -> Report:
    """Check the class ``cls`` (``cls(cfg)``, ``forward(y, memory, self_visibility=None,
    memory_visibility=None)``) against the package's :class:`~transformer.layers.DecoderLayer`."""
    return run_check("your DecoderLayer", cls, DecoderLayer, lambda c: _attempt(
        c, DecoderLayer, DECODER_NAMES, decoder_mistakes, "DecoderLayer", True), quiet)
