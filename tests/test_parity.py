"""Our components against PyTorch's own, weights copied across, eval mode, fp32."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import toy_config
from transformer import FastTransformer, Transformer
from transformer.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from transformer.tools.interop import (copy_attention, to_torch_transformer, torch_decoder_layer,
                                 torch_encoder_layer)
from transformer.layers import DecoderLayer, EncoderLayer

TOL = 1e-5
CFG = toy_config()              # dropout 0.1: eval mode must switch it off


def padded_lengths(batch, max_len):
    lengths = torch.randint(1, max_len + 1, (batch,))
    lengths[0] = max_len
    keep = torch.arange(max_len)[None, :] < lengths[:, None]       # (B, L) True = real
    return keep


def test_attention_matches_torch_sdpa_with_masks():
    q, k, v = torch.randn(3, 4, 7, 16), torch.randn(3, 4, 9, 16), torch.randn(3, 4, 9, 8)
    keep = padded_lengths(3, 9)[:, None, None, :]                   # padding mask
    for mask in (None, keep, causal_mask(7, 9), keep & causal_mask(7, 9)):
        ours, weights = scaled_dot_product_attention(q, k, v, mask)
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert (ours - theirs).abs().max() <= TOL
        assert torch.allclose(weights.sum(-1), torch.ones(3, 4, 7))


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_matches_torch(causal):
    ours = MultiHeadAttention(CFG).eval()
    theirs = nn.MultiheadAttention(CFG.d_model, CFG.n_heads, batch_first=True).eval()
    copy_attention(ours, theirs)
    x = torch.randn(3, 6, CFG.d_model)
    keep = padded_lengths(3, 6)
    expected, _ = theirs(x, x, x, key_padding_mask=~keep,
                         attn_mask=~causal_mask(6) if causal else None, need_weights=False)
    mask = keep[:, None, None, :] & causal_mask(6) if causal else keep[:, None, None, :]
    got = ours(x, x, x, mask)
    assert (got - expected).abs().max() <= TOL


def test_cross_attention_matches_torch():
    ours = MultiHeadAttention(CFG).eval()
    theirs = nn.MultiheadAttention(CFG.d_model, CFG.n_heads, batch_first=True).eval()
    copy_attention(ours, theirs)
    query, memory = torch.randn(2, 5, CFG.d_model), torch.randn(2, 8, CFG.d_model)
    keep = padded_lengths(2, 8)
    expected, _ = theirs(query, memory, memory, key_padding_mask=~keep, need_weights=False)
    got = ours(query, memory, memory, keep[:, None, None, :])
    assert (got - expected).abs().max() <= TOL


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_layer_matches_torch(norm):
    cfg = toy_config(norm_position=norm)
    ours = EncoderLayer(cfg).eval()
    theirs = torch_encoder_layer(ours, cfg)              # our weights, eval mode
    x, keep = torch.randn(3, 7, cfg.d_model), padded_lengths(3, 7)
    expected = theirs(x, src_key_padding_mask=~keep)
    got = ours(x, keep[:, None, None, :])
    assert (got - expected)[keep].abs().max() <= TOL


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_layer_matches_torch(norm):
    cfg = toy_config(norm_position=norm)
    ours = DecoderLayer(cfg).eval()
    theirs = torch_decoder_layer(ours, cfg)
    y, memory = torch.randn(3, 6, cfg.d_model), torch.randn(3, 8, cfg.d_model)
    tgt_keep, src_keep = padded_lengths(3, 6), padded_lengths(3, 8)
    expected = theirs(y, memory, tgt_mask=~causal_mask(6), tgt_key_padding_mask=~tgt_keep,
                      memory_key_padding_mask=~src_keep)
    got = ours(y, memory, causal_mask(6), src_keep[:, None, None, :])
    # Targets are right-padded: every real position matches; pad positions are never used.
    assert (got - expected)[tgt_keep].abs().max() <= TOL


@pytest.mark.parametrize("form", ["plain", "fast", "fast, padded layout"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_whole_stack_matches_torch_transformer(norm, form):
    cfg = toy_config(norm_position=norm)
    model = {"plain": Transformer, "fast": FastTransformer,
             "fast, padded layout": lambda c: FastTransformer(c, skip_padding=False)}[form](cfg)
    model.eval()
    with torch.no_grad():   # biases start at zero and LayerNorm at (1, 0): make every one count
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p), alpha=0.3)
    theirs = to_torch_transformer(model)   # final norms only for pre-norm
    src_keep, tgt_keep = padded_lengths(4, 9), padded_lengths(4, 7)
    src = torch.randint(4, cfg.vocab_size, (4, 9)).masked_fill(~src_keep, cfg.pad_id)
    tgt = torch.randint(4, cfg.vocab_size, (4, 7)).masked_fill(~tgt_keep, cfg.pad_id)
    with torch.no_grad():
        src_x = model.src_pos(model.src_embed(src))
        tgt_x = model.tgt_pos(model.tgt_embed(tgt))
        expected = theirs(src_x, tgt_x, tgt_mask=~causal_mask(7), src_key_padding_mask=~src_keep,
                          tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
        src_mask = model.source_mask(src)
        got = model.decode(tgt, model.encode(src, src_mask), src_mask)
        logits = model(src, tgt)
    assert (got - expected)[tgt_keep].abs().max() <= TOL
    assert (logits - model.project(expected))[tgt_keep].abs().max() <= 1e-4


def independent_sinusoids(length, d_model):
    """Section 3.5's table, computed here from the formula (not transformer.positional)."""
    import math
    table = torch.zeros(length, d_model)
    for pos in range(length):
        for i in range(0, d_model, 2):
            table[pos, i] = math.sin(pos / 10000 ** (i / d_model))
            table[pos, i + 1] = math.cos(pos / 10000 ** (i / d_model))
    return table


@pytest.mark.parametrize("form", ["plain", "fast"])
def test_whole_model_matches_an_independent_reference(form):
    # Embeddings scaled by sqrt(d_model) (3.4), the sinusoidal table (3.5), torch.nn's
    # stacks and the tied pre-softmax projection: logits from the token ids, end to end.
    cfg = toy_config(dropout=0.0)
    model = (Transformer if form == "plain" else FastTransformer)(cfg).eval()
    stacks = to_torch_transformer(model)
    embedding = nn.Embedding(cfg.vocab_size, cfg.d_model)
    with torch.no_grad():
        embedding.weight.copy_(model.src_embed.weight)
    src_keep, tgt_keep = padded_lengths(3, 8), padded_lengths(3, 6)
    src = torch.randint(4, cfg.vocab_size, (3, 8)).masked_fill(~src_keep, cfg.pad_id)
    tgt = torch.randint(4, cfg.vocab_size, (3, 6)).masked_fill(~tgt_keep, cfg.pad_id)
    with torch.no_grad():
        scale = cfg.d_model ** 0.5
        src_x = embedding(src) * scale + independent_sinusoids(8, cfg.d_model)
        tgt_x = embedding(tgt) * scale + independent_sinusoids(6, cfg.d_model)
        states = stacks(src_x, tgt_x, tgt_mask=~causal_mask(6), src_key_padding_mask=~src_keep,
                        tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
        expected = F.linear(states, embedding.weight)                  # tied (3.4)
        logits = model(src, tgt)
    assert (logits - expected)[tgt_keep].abs().max() <= 1e-4
