"""Properties any correct encoder-decoder must have, checked on random inputs."""
import torch
from hypothesis import given, settings, strategies as st

from helpers import toy_config
from transformer import FastTransformer, KVCache, Transformer, record_attention
from transformer.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from transformer.fast import FastMultiHeadAttention, Layout

CFG = toy_config()              # dropout 0.1: eval mode must switch it off
MODELS = {norm: Transformer(toy_config(norm_position=norm)).eval()
          for norm in ("post", "pre")}
FAST = {norm: FastTransformer(model.cfg).eval() for norm, model in MODELS.items()}
for _norm, _fast in FAST.items():
    _fast.load_state_dict(MODELS[_norm].state_dict())
SETTINGS = settings(max_examples=25, deadline=None)


def tokens(seed, batch, length):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, CFG.vocab_size, (batch, length), generator=g)


@SETTINGS
@given(seed=st.integers(0, 10**6), t=st.integers(0, 6), norm=st.sampled_from(["post", "pre"]),
       fast=st.booleans())
def test_decoder_position_t_ignores_later_targets(seed, t, norm, fast):
    model = (FAST if fast else MODELS)[norm]
    src, tgt = tokens(seed, 2, 6), tokens(seed + 1, 2, 8)
    changed = tgt.clone()
    changed[:, t + 1:] = tokens(seed + 2, 2, 8)[:, t + 1:]     # t + 1 <= 7: always a change
    assert not torch.equal(changed, tgt)
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-5)
    # and the later positions do see the change (the test can fail)
    assert not torch.allclose(a[:, t + 1:], b[:, t + 1:], atol=1e-5)


@SETTINGS
@given(seed=st.integers(0, 10**6), extra_src=st.integers(1, 5), extra_tgt=st.integers(0, 5),
       norm=st.sampled_from(["post", "pre"]), fast=st.booleans())
def test_appending_padding_changes_nothing(seed, extra_src, extra_tgt, norm, fast):
    model = (FAST if fast else MODELS)[norm]
    src, tgt = tokens(seed, 3, 5), tokens(seed + 1, 3, 6)
    pad = CFG.pad_id
    src_padded = torch.cat([src, torch.full((3, extra_src), pad)], 1)
    tgt_padded = torch.cat([tgt, torch.full((3, extra_tgt), pad)], 1)
    with torch.no_grad():
        a, b = model(src, tgt), model(src_padded, tgt_padded)
    assert torch.allclose(a, b[:, :6], atol=1e-5)


@SETTINGS
@given(seed=st.integers(0, 10**6), q_len=st.integers(1, 9), k_len=st.integers(1, 9),
       causal=st.booleans())
def test_explicit_and_fused_attention_agree(seed, q_len, k_len, causal):
    torch.manual_seed(seed)
    plain = MultiHeadAttention(CFG).eval()
    fast = FastMultiHeadAttention(CFG).eval()
    fast.load_state_dict(plain.state_dict())
    q, kv = torch.randn(2, q_len, 32), torch.randn(2, k_len, 32)
    keep = torch.ones(2, 1, 1, k_len, dtype=torch.bool)
    keep[1, ..., k_len // 2 + 1:] = False
    if causal:
        q_len, q = k_len, kv
    explicit = plain(q, kv, kv, keep & causal_mask(q_len, k_len) if causal else keep)
    fused = fast(q, kv, kv, Layout(keep, causal))
    assert torch.allclose(fused, explicit, atol=1e-5)
    with record_attention(fast) as rec:
        recorded = fast(q, kv, kv, Layout(keep, causal))
    assert torch.allclose(recorded, explicit, atol=1e-5)
    (weights,) = rec.weights.values()
    assert weights.shape == (2, 4, q_len, k_len)
    assert torch.all(weights[1, ..., k_len // 2 + 1:] == 0)


@SETTINGS
@given(seed=st.integers(0, 10**6), norm=st.sampled_from(["post", "pre"]))
def test_incremental_decoding_with_cache_equals_full_forward(seed, norm):
    model = FAST[norm]
    src, tgt = tokens(seed, 2, 7), tokens(seed + 1, 2, 6)
    src[1, 5:] = CFG.pad_id
    with torch.no_grad():
        full = MODELS[norm](src, tgt)
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        cache = KVCache()
        steps = [model.project(model.decode(tgt[:, i:i + 1], memory, src_mask, cache))
                 for i in range(6)]
    assert cache.length == 6
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


def test_sdpa_weights_are_softmax_of_scaled_scores():
    q, k, v = torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 2)
    out, w = scaled_dot_product_attention(q, k, v)
    expected = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, -1)
    assert torch.allclose(w, expected) and torch.allclose(out, expected @ v)
