"""Our components against PyTorch's own, weights copied across, eval mode, fp32."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer import ModelConfig, Transformer
from transformer.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from transformer.layers import DecoderLayer, EncoderLayer

TOL = 1e-5
CFG = ModelConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                  n_decoder_layers=2, dropout=0.1)


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention):
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight,
                                               ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias,
                                             ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)


def copy_linear_norm(pairs):
    with torch.no_grad():
        for ours, theirs in pairs:
            theirs.weight.copy_(ours.weight)
            theirs.bias.copy_(ours.bias)


def copy_encoder_layer(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer):
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_linear_norm([(ours.feed_forward.linear1, theirs.linear1),
                      (ours.feed_forward.linear2, theirs.linear2),
                      (ours.attn_block.norm, theirs.norm1), (ours.ff_block.norm, theirs.norm2)])


def copy_decoder_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer):
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    copy_linear_norm([(ours.feed_forward.linear1, theirs.linear1),
                      (ours.feed_forward.linear2, theirs.linear2),
                      (ours.self_block.norm, theirs.norm1), (ours.cross_block.norm, theirs.norm2),
                      (ours.ff_block.norm, theirs.norm3)])


def torch_layer_kwargs(cfg):
    return dict(d_model=cfg.d_model, nhead=cfg.n_heads, dim_feedforward=cfg.d_ff,
                dropout=cfg.dropout, activation="relu", batch_first=True,
                norm_first=cfg.norm_position == "pre")


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
    got = ours(x, x, x, mask=keep[:, None, None, :], causal=causal)
    assert (got - expected).abs().max() <= TOL


def test_cross_attention_matches_torch():
    ours = MultiHeadAttention(CFG).eval()
    theirs = nn.MultiheadAttention(CFG.d_model, CFG.n_heads, batch_first=True).eval()
    copy_attention(ours, theirs)
    query, memory = torch.randn(2, 5, CFG.d_model), torch.randn(2, 8, CFG.d_model)
    keep = padded_lengths(2, 8)
    expected, _ = theirs(query, memory, memory, key_padding_mask=~keep, need_weights=False)
    got = ours(query, memory, memory, mask=keep[:, None, None, :])
    assert (got - expected).abs().max() <= TOL


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_layer_matches_torch(norm):
    cfg = ModelConfig(**{**CFG.to_dict(), "norm_position": norm})
    ours = EncoderLayer(cfg).eval()
    theirs = nn.TransformerEncoderLayer(**torch_layer_kwargs(cfg)).eval()
    copy_encoder_layer(ours, theirs)
    x, keep = torch.randn(3, 7, cfg.d_model), padded_lengths(3, 7)
    expected = theirs(x, src_key_padding_mask=~keep)
    got = ours(x, keep[:, None, None, :])
    assert (got - expected)[keep].abs().max() <= TOL


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_layer_matches_torch(norm):
    cfg = ModelConfig(**{**CFG.to_dict(), "norm_position": norm})
    ours = DecoderLayer(cfg).eval()
    theirs = nn.TransformerDecoderLayer(**torch_layer_kwargs(cfg)).eval()
    copy_decoder_layer(ours, theirs)
    y, memory = torch.randn(3, 6, cfg.d_model), torch.randn(3, 8, cfg.d_model)
    tgt_keep, src_keep = padded_lengths(3, 6), padded_lengths(3, 8)
    expected = theirs(y, memory, tgt_mask=~causal_mask(6), tgt_key_padding_mask=~tgt_keep,
                      memory_key_padding_mask=~src_keep)
    got = ours(y, memory, src_keep[:, None, None, :])
    # Targets are right-padded: every real position matches; pad positions are never used.
    assert (got - expected)[tgt_keep].abs().max() <= TOL


def torch_transformer_like(model: Transformer) -> nn.Transformer:
    """torch.nn.Transformer with our weights (and final norms only for pre-norm)."""
    cfg = model.cfg
    kw = torch_layer_kwargs(cfg)
    pre = cfg.norm_position == "pre"
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), cfg.n_encoder_layers,
                                    norm=nn.LayerNorm(cfg.d_model) if pre else None,
                                    enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), cfg.n_decoder_layers,
                                    norm=nn.LayerNorm(cfg.d_model) if pre else None)
    theirs = nn.Transformer(cfg.d_model, cfg.n_heads, custom_encoder=encoder,
                            custom_decoder=decoder, batch_first=True).eval()
    for ours_layer, their_layer in zip(model.encoder_layers, encoder.layers):
        copy_encoder_layer(ours_layer, their_layer)
    for ours_layer, their_layer in zip(model.decoder_layers, decoder.layers):
        copy_decoder_layer(ours_layer, their_layer)
    if pre:
        copy_linear_norm([(model.encoder_norm, encoder.norm), (model.decoder_norm, decoder.norm)])
    return theirs


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_whole_stack_matches_torch_transformer(norm):
    cfg = ModelConfig(**{**CFG.to_dict(), "norm_position": norm})
    model = Transformer(cfg).eval()
    theirs = torch_transformer_like(model)
    src_keep, tgt_keep = padded_lengths(4, 9), padded_lengths(4, 7)
    src = torch.randint(4, cfg.vocab_size, (4, 9)).masked_fill(~src_keep, cfg.pad_id)
    tgt = torch.randint(4, cfg.vocab_size, (4, 7)).masked_fill(~tgt_keep, cfg.pad_id)
    with torch.no_grad():
        src_x = model.src_pos(model.src_embed(src))
        tgt_x = model.tgt_pos(model.tgt_embed(tgt))
        expected = theirs(src_x, tgt_x, tgt_mask=~causal_mask(7), src_key_padding_mask=~src_keep,
                          tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
        got = model.decode_states(tgt, model.encode(src), model.source_mask(src))
        logits = model(src, tgt)
    assert (got - expected)[tgt_keep].abs().max() <= TOL
    assert (logits - model.project(expected))[tgt_keep].abs().max() <= 1e-4
