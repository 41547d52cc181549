"""Properties any correct encoder-decoder must have, checked on random inputs."""
import torch
from hypothesis import given, settings, strategies as st

from transformer import KVCache, ModelConfig, Transformer, record_attention
from transformer.attention import MultiHeadAttention, scaled_dot_product_attention

CFG = ModelConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                  n_decoder_layers=2, dropout=0.1)
MODELS = {norm: Transformer(ModelConfig(**{**CFG.to_dict(), "norm_position": norm})).eval()
          for norm in ("post", "pre")}
SETTINGS = settings(max_examples=25, deadline=None)


def tokens(seed, batch, length):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, CFG.vocab_size, (batch, length), generator=g)


@SETTINGS
@given(seed=st.integers(0, 10**6), t=st.integers(0, 7), norm=st.sampled_from(["post", "pre"]))
def test_decoder_position_t_ignores_later_targets(seed, t, norm):
    model = MODELS[norm]
    src, tgt = tokens(seed, 2, 6), tokens(seed + 1, 2, 8)
    changed = tgt.clone()
    changed[:, t + 1:] = tokens(seed + 2, 2, 8)[:, t + 1:]
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-5)
    if t + 1 < 8:   # and the later positions do see the change (the test can fail)
        assert not torch.allclose(a[:, t + 1:], b[:, t + 1:], atol=1e-5)


@SETTINGS
@given(seed=st.integers(0, 10**6), extra_src=st.integers(1, 5), extra_tgt=st.integers(0, 5),
       norm=st.sampled_from(["post", "pre"]))
def test_appending_padding_changes_nothing(seed, extra_src, extra_tgt, norm):
    model = MODELS[norm]
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
    mha = MultiHeadAttention(CFG).eval()
    q, kv = torch.randn(2, q_len, 32), torch.randn(2, k_len, 32)
    keep = torch.ones(2, 1, 1, k_len, dtype=torch.bool)
    keep[1, ..., k_len // 2 + 1:] = False
    if causal:
        q_len = k_len
        q = kv
    fast = mha(q, kv, kv, mask=keep, causal=causal)
    with record_attention(mha) as rec:
        explicit = mha(q, kv, kv, mask=keep, causal=causal)
    assert torch.allclose(fast, explicit, atol=1e-5)
    (weights,) = rec.weights.values()
    assert weights.shape == (2, 4, q_len, k_len)
    assert torch.all(weights[1, ..., k_len // 2 + 1:] == 0)


@SETTINGS
@given(seed=st.integers(0, 10**6), norm=st.sampled_from(["post", "pre"]))
def test_incremental_decoding_with_cache_equals_full_forward(seed, norm):
    model = MODELS[norm]
    src, tgt = tokens(seed, 2, 7), tokens(seed + 1, 2, 6)
    src[1, 5:] = CFG.pad_id
    with torch.no_grad():
        full = model(src, tgt)
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        cache = KVCache()
        steps = [model.decode(tgt[:, i:i + 1], memory, src_mask, cache) for i in range(6)]
    assert cache.length == 6
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


def test_recording_attention_leaves_output_unchanged_and_covers_every_head():
    model = MODELS["post"]
    src, tgt = tokens(1, 2, 7), tokens(2, 2, 5)
    with torch.no_grad():
        plain = model(src, tgt)
        with record_attention(model) as rec:
            recorded = model(src, tgt)
        after = model(src, tgt)
    assert torch.allclose(plain, recorded, atol=1e-5) and torch.equal(plain, after)
    assert rec.stacked("encoder.self").shape == (2, 2, 4, 7, 7)
    assert rec.stacked("decoder.self").shape == (2, 2, 4, 5, 5)
    assert rec.stacked("decoder.cross").shape == (2, 2, 4, 5, 7)
    dec_self = rec.stacked("decoder.self")
    assert torch.all(dec_self.triu(1) == 0)                        # causal
    assert torch.allclose(dec_self.sum(-1), torch.ones(2, 2, 4, 5))
    assert all(m.recorder is None for m in model.modules() if isinstance(m, MultiHeadAttention))


def test_sdpa_weights_are_softmax_of_scaled_scores():
    q, k, v = torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 2)
    out, w = scaled_dot_product_attention(q, k, v)
    expected = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, -1)
    assert torch.allclose(w, expected) and torch.allclose(out, expected @ v)
