"""The fast form equals the plain form: every speed-up in transformer/fast/, checked
against the paper's plain code (outputs and gradients, fp32, post- and pre-norm)."""
import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from helpers import toy_config
from transformer import FastTransformer, Transformer, fast_form, plain_form
from transformer.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from transformer.decoding import beam_search, greedy_decode
from transformer.fast import (CheapDropout, FastLabelSmoothingLoss, FastMultiHeadAttention,
                              KVCache, Layout, Packing, SequenceLoss)
from transformer.recording import record_attention
from transformer.loss import LabelSmoothingLoss, label_smoothed_nll_loss

TOL = 1e-5
CFG = toy_config(dropout=0.0)                # the same numbers from both forms, trained too
NORMS = pytest.mark.parametrize("norm", ["post", "pre"])


def config(norm="post", **overrides):
    return toy_config(**{"dropout": 0.0, "norm_position": norm, **overrides})


def both_forms(norm="post", seed=0, **overrides):
    """A plain model with random biases and LayerNorm affines, and its fast form."""
    torch.manual_seed(seed)
    plain = Transformer(config(norm, **overrides))
    with torch.no_grad():             # biases start at zero: make every one count
        for p in plain.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p), alpha=0.3)
    return plain, fast_form(plain)


def padded_batch(seed=0, batch=4, src_len=9, tgt_len=7, aligned=True):
    """src, tgt_in, tgt_out, right-padded. ``aligned``: tgt_in = <bos> y and tgt_out = y <eos>
    have the same pad positions, as the trainer's batches do; else tgt_out has one pad more."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, CFG.vocab_size, (batch, src_len), generator=g)
    tgt_in = torch.randint(4, CFG.vocab_size, (batch, tgt_len), generator=g)
    tgt_out = torch.randint(4, CFG.vocab_size, (batch, tgt_len), generator=g)
    for i in range(1, batch):                    # row 0 full length, the others shorter
        src[i, src_len - 2 * i:] = CFG.pad_id
        tgt_in[i, tgt_len - i:] = CFG.pad_id
        tgt_out[i, tgt_len - i - (0 if aligned else 1):] = CFG.pad_id
    return src, tgt_in, tgt_out


def max_diff(a, b):
    return (a - b).abs().max().item()


# ------------------------------------------------------------- the fused kernel
@pytest.mark.parametrize("self_attention", [True, False])
def test_fused_attention_equals_equation_1_outputs_and_gradients(self_attention, device):
    torch.manual_seed(0)
    plain = MultiHeadAttention(CFG).to(device)
    fast = FastMultiHeadAttention(CFG).to(device)
    fast.load_state_dict(plain.state_dict())
    q_len, k_len = (6, 6) if self_attention else (5, 8)
    query = torch.randn(3, q_len, CFG.d_model, device=device, requires_grad=True)
    memory = query if self_attention else torch.randn(3, k_len, CFG.d_model, device=device,
                                                      requires_grad=True)
    keep = torch.ones(3, 1, 1, k_len, dtype=torch.bool, device=device)
    keep[1, ..., k_len // 2:] = False
    if self_attention:                       # the decoder's: the causal mask, as a flag
        plain_mask, fast_mask = causal_mask(q_len, device=device), Layout(causal=True)
    else:
        plain_mask, fast_mask = keep, keep
    outputs, grads = [], []
    for layer, mask in ((plain, plain_mask), (fast, fast_mask)):
        out = layer(query, memory, memory, mask)
        inputs = [query] + ([] if self_attention else [memory]) + list(layer.parameters())
        outputs.append(out)
        grads.append(torch.autograd.grad((out * out).sum(), inputs))
    assert max_diff(*outputs) <= TOL
    for g_plain, g_fast in zip(*grads):
        assert max_diff(g_plain, g_fast) <= TOL


# ------------------------------------------------------------ padding-free rows
@NORMS
def test_fast_forward_equals_plain_forward_at_real_positions(norm):
    plain, fast = both_forms(norm)
    src, tgt_in, _ = padded_batch()
    is_real = tgt_in != CFG.pad_id
    for model in (fast, FastTransformer(fast.cfg, skip_padding=False)):
        model.load_state_dict(plain.state_dict())
        model.eval()
        with torch.no_grad():
            assert max_diff(model(src, tgt_in)[is_real], plain.eval()(src, tgt_in)[is_real]) <= TOL


def plain_loss_and_grads(model, batch):
    src, tgt_in, tgt_out = batch
    model.zero_grad(set_to_none=True)
    loss = label_smoothed_nll_loss(model(src, tgt_in), tgt_out, 0.1, CFG.pad_id)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def fast_loss_and_grads(model, batch):
    model.zero_grad(set_to_none=True)
    loss = SequenceLoss(model, FastLabelSmoothingLoss(0.1, CFG.pad_id))(*batch)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("skip_padding", [True, False])
@NORMS
def test_training_loss_and_every_gradient_equal_the_plain_form(norm, skip_padding, aligned,
                                                               device):
    # fused kernel + packed rows + the projection fused into the loss, against the plain
    # model's logits and label_smoothed_nll_loss (dropout 0: the masks are random)
    plain, fast = both_forms(norm)
    plain, fast = plain.to(device), fast.to(device)
    fast.skip_padding = skip_padding
    batch = [t.to(device) for t in padded_batch(aligned=aligned)]
    loss_plain, grads_plain = plain_loss_and_grads(plain.train(), batch)
    loss_fast, grads_fast = fast_loss_and_grads(fast.train(), batch)
    assert abs(loss_fast.item() - loss_plain.item()) <= TOL * loss_plain.item()
    assert grads_fast.keys() == grads_plain.keys()
    for name, g in grads_plain.items():
        assert max_diff(grads_fast[name], g) <= TOL, name


def forward_flops(model, batch):
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*batch[:2])
    return counter.get_total_flops()


def test_skipping_padding_saves_the_padding_share_of_the_work():
    _, fast = both_forms()
    padded_layout = FastTransformer(CFG, skip_padding=False)
    batch = padded_batch()
    padded, packed = forward_flops(padded_layout, batch), forward_flops(fast, batch)
    src, tgt_in = batch[:2]
    real = (src != CFG.pad_id).float().mean() * 0.5 + (tgt_in != CFG.pad_id).float().mean() * 0.5
    assert packed < padded * (1 + real) / 2          # well below: most of the saving is made
    unpadded = padded_batch(batch=1)                 # one sentence: nothing to skip
    assert forward_flops(fast, unpadded) == forward_flops(padded_layout, unpadded)


def test_pack_and_unpack_are_inverse_with_zeros_at_padding():
    is_real = torch.tensor([[True, True, False], [True, False, False]])
    packing = Packing(is_real)
    x = torch.arange(2 * 3 * 2, dtype=torch.float).view(2, 3, 2)
    rows = packing.pack(x)
    assert len(packing) == 3 and rows.tolist() == [[0, 1], [2, 3], [6, 7]]
    back = packing.unpack(rows)
    assert torch.equal(back[is_real], x[is_real]) and not back[~is_real].any()
    with pytest.raises(ValueError, match="bool"):
        Packing(torch.ones(2, 3))


def test_padding_a_real_token_can_see_is_not_skipped():
    # Left-padded targets: under the causal mask real tokens see the pads before them, so
    # skipping those would change the output; the fast form keeps the padded layout there.
    # Likewise a source mask that lets queries see padding (here: all True).
    plain, fast = both_forms()
    src, tgt_in, _ = padded_batch()
    left_padded = torch.cat([torch.full((4, 2), CFG.pad_id), tgt_in[:, :5]], dim=1)
    see_all = torch.ones(4, 1, 1, src.size(1), dtype=torch.bool)
    with torch.no_grad():
        states = [m.decode(left_padded, m.encode(src, see_all), see_all)
                  for m in (plain.eval(), fast.eval())]
    assert max_diff(*states) <= TOL
    assert Packing.of_right_padded(left_padded, CFG.pad_id) is None
    per_query = torch.ones(4, 1, src.size(1), src.size(1), dtype=torch.bool)
    assert Packing.of_mask(per_query) is None                     # not (B, 1, 1, S)
    assert Packing.of_mask(see_all) is None                       # nothing to skip


def test_target_states_are_the_rows_asked_for():
    plain, fast = both_forms()
    src, tgt_in, tgt_out = padded_batch()
    with torch.no_grad():
        full = plain.eval().decode(tgt_in, plain.encode(src, plain.source_mask(src)),
                                   plain.source_mask(src))
        full = full * (tgt_in != CFG.pad_id)[..., None]      # the fast form: 0 at padding
        for is_target in (tgt_in != CFG.pad_id, tgt_out != CFG.pad_id,
                          torch.rand(tgt_in.shape) < 0.5):
            got = fast.eval().target_states(src, tgt_in, is_target)
            assert max_diff(got, full[is_target]) <= TOL


# ------------------------------------------------------------------ the losses
def test_fast_losses_equal_label_smoothed_nll_loss():
    torch.manual_seed(0)
    states, weight = torch.randn(37, 16), torch.randn(23, 16)
    target = torch.randint(1, 23, (37,))
    target[30:] = 0                                                 # pad rows
    results = []
    for kind in ("plain", "written-out gradient", "fused projection"):
        s, w = states.clone().requires_grad_(), weight.clone().requires_grad_()
        if kind == "plain":
            loss = LabelSmoothingLoss(0.1)(s @ w.t(), target, reduction="sum")
        elif kind == "written-out gradient":
            loss = FastLabelSmoothingLoss(0.1)(s @ w.t(), target, reduction="sum")
        else:
            real = target != 0
            loss = FastLabelSmoothingLoss(0.1).from_states(s[real], w, target[real])
        (2.5 * loss).backward()
        results.append((loss.detach(), s.grad, w.grad))
    (ref, ref_s, ref_w), *others = results
    for loss, g_s, g_w in others:
        assert abs(loss.item() - ref.item()) <= TOL * ref.item()
        assert max_diff(g_s, ref_s) <= TOL and max_diff(g_w, ref_w) <= TOL


# ---------------------------------------------------------------- the KV cache
@NORMS
def test_incremental_decoding_with_the_cache_equals_the_plain_decoder(norm, device):
    plain, fast = both_forms(norm)
    plain, fast = plain.to(device).eval(), fast.to(device).eval()
    src, tgt_in, _ = (t.to(device) for t in padded_batch())
    tgt_in = tgt_in[:, :6].clone()
    tgt_in[tgt_in == CFG.pad_id] = 5                # every position real while decoding
    with torch.no_grad():
        src_mask = plain.source_mask(src)
        full = plain.decode(tgt_in, plain.encode(src, src_mask), src_mask)
        memory, cache = fast.encode(src, src_mask), KVCache()
        steps = [fast.decode(tgt_in[:, i:i + 1], memory, src_mask, cache) for i in range(6)]
    assert cache.length == 6
    assert max_diff(torch.cat(steps, 1), full) <= TOL


def test_cached_search_equals_the_plain_models_search(device):
    plain, fast = both_forms(dropout=0.1)
    plain, fast = plain.to(device), fast.to(device)
    src = padded_batch(batch=6)[0].to(device)         # random ids, right-padded
    src[torch.arange(6), (src != CFG.pad_id).sum(1) - 1] = CFG.eos_id
    assert greedy_decode(fast, src, max_extra=6) == greedy_decode(plain, src, max_extra=6)
    assert beam_search(fast, src, max_extra=6) == beam_search(plain, src, max_extra=6)
    with pytest.raises(ValueError, match="fast form"):
        greedy_decode(plain, src, use_cache=True)


# ------------------------------------------------------------------- dropout
def test_cheap_dropout_replaces_every_dropout_and_nothing_else():
    fast = FastTransformer(config(dropout=0.1, activation_dropout=0.2))
    dropouts = [m for m in fast.modules() if isinstance(m, nn.Dropout)]
    assert dropouts and all(type(m) is CheapDropout for m in dropouts)
    assert sorted({m.p for m in dropouts}) == [0.1, 0.2]
    plain = Transformer(fast.cfg)
    assert all(type(m) is nn.Dropout for m in plain.modules() if isinstance(m, nn.Dropout))
    assert plain.state_dict().keys() == fast.state_dict().keys()


# ------------------------------------------------------------------ recording
@pytest.mark.parametrize("form", ["plain", "fast"])
def test_recording_leaves_outputs_unchanged_and_gives_equation_1s_weights(form):
    plain, fast = both_forms()
    model = (plain if form == "plain" else fast).eval()
    src, tgt_in, _ = padded_batch()
    is_real = tgt_in != CFG.pad_id
    with torch.no_grad():
        before = model(src, tgt_in)
        with record_attention(model) as rec:
            recorded = model(src, tgt_in)
        after = model(src, tgt_in)
    assert max_diff(before[is_real], recorded[is_real]) <= TOL and torch.equal(before, after)
    assert rec.stacked("encoder.self").shape == (2, 4, 4, 9, 9)
    assert rec.stacked("decoder.cross").shape == (2, 4, 4, 7, 9)
    dec_self = rec.stacked("decoder.self")
    assert torch.all(dec_self.triu(1) == 0)                        # causal
    # layer 0's encoder self-attention by hand, from the plain layer's own projections
    layer = plain.encoder_layers[0].self_attn
    with torch.no_grad():
        x = plain.src_pos(plain.src_embed(src))
        q, k = layer.split_heads(layer.q_proj(x), 8), layer.split_heads(layer.k_proj(x), 8)
        v = layer.split_heads(layer.v_proj(x), 8)
        _, expected = scaled_dot_product_attention(q, k, v, plain.source_mask(src))
    src_real = src != CFG.pad_id
    by_query = rec.weights["encoder.0.self"].transpose(1, 2)        # (B, S, h, S)
    assert max_diff(by_query[src_real], expected.transpose(1, 2)[src_real]) <= TOL
    assert all(type(m.attention).__name__ != "RecordingAttention"
               for m in model.modules() if isinstance(m, MultiHeadAttention))


def test_recording_a_lone_layer():
    mha = FastMultiHeadAttention(toy_config(d_model=64)).eval()
    x = torch.randn(2, 10, 64)
    with record_attention(mha) as rec:
        out = mha(x, x, x, Layout(causal=True))
    (name, weights), = rec.weights.items()
    assert name == "attention" and weights.shape == (2, 4, 10, 10)
    assert torch.all(weights.triu(1) == 0)
    assert max_diff(out, mha(x, x, x, Layout(causal=True))) <= TOL
    with pytest.raises(TypeError, match="no MultiHeadAttention"):
        with record_attention(nn.Linear(2, 2)):
            pass


# --------------------------------------------------------------- checkpoints
def test_both_forms_load_the_same_checkpoints():
    plain, fast = both_forms(positional="learned", share_embeddings=False)
    assert type(fast) is FastTransformer and type(plain_form(fast)) is Transformer
    for source, target in ((plain, FastTransformer(plain.cfg)), (fast, Transformer(fast.cfg))):
        target.load_state_dict(source.state_dict())            # strict: the same names
        assert all(torch.equal(a, b) for a, b in zip(source.state_dict().values(),
                                                     target.state_dict().values()))
    torch.manual_seed(5)
    a = Transformer(CFG)
    torch.manual_seed(5)
    b = FastTransformer(CFG)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    state = torch.random.get_rng_state()
    fast_form(a)
    assert torch.equal(state, torch.random.get_rng_state())    # converting draws nothing
