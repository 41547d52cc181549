"""Copy this package's weights into ``torch.nn``'s Transformer modules.

``torch.nn.Transformer`` implements the same section 3 architecture, so with the same
weights both must compute the same function. These helpers make that check one line
(the book's chapter 6 runs it live; tests can use it too):

    reference = to_torch_transformer(model)            # nn.Transformer, eval mode
    assert torch.allclose(model(src, tgt_in), torch_forward(model, reference, src, tgt_in),
                          atol=1e-5)

``torch.nn`` has no embeddings, positional encoding or output projection: those stay
with our model, and :func:`torch_forward` runs only the two stacks through torch.nn.
Requirements of ``torch.nn.MultiheadAttention``: d_k = d_v = d_model / h.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn

from ..attention import MultiHeadAttention, causal_mask
from ..config import ModelConfig
from ..layers import DecoderLayer, EncoderLayer
from ..errors import InputError


def _check(cfg: ModelConfig) -> None:
    if cfg.d_k * cfg.n_heads != cfg.d_model or cfg.d_v * cfg.n_heads != cfg.d_model:
        raise InputError(f"torch.nn.MultiheadAttention needs d_k = d_v = d_model / h; got "
                         f"d_model={cfg.d_model}, h={cfg.n_heads}, d_k={cfg.d_k}, d_v={cfg.d_v}")


@torch.no_grad()
def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """q/k/v projections -> ``in_proj_weight`` rows [W_q; W_k; W_v]; output -> out_proj.

    Both split the projected width into heads the same way (head i owns columns
    i*d_k .. (i+1)*d_k), so no permutation is needed.
    """
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight,
                                           ours.v_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias,
                                         ours.v_proj.bias]))
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.copy_(ours.out_proj.bias)


@torch.no_grad()
def _copy_affine(src: nn.Module, dst: nn.Module) -> None:
    """weight and bias of an ``nn.Linear`` or ``nn.LayerNorm``."""
    dst.weight.copy_(src.weight)
    dst.bias.copy_(src.bias)


def _layer_kwargs(cfg: ModelConfig) -> dict:
    """torch.nn's layer arguments for ``cfg`` (batch_first; ReLU as in section 3.3)."""
    return dict(dim_feedforward=cfg.d_ff, dropout=cfg.dropout, activation="relu",
                layer_norm_eps=cfg.layer_norm_eps, batch_first=True,
                norm_first=cfg.norm_position == "pre")


def torch_encoder_layer(layer: EncoderLayer, cfg: ModelConfig) -> nn.TransformerEncoderLayer:
    """An ``nn.TransformerEncoderLayer`` (batch_first, eval mode) with ``layer``'s weights."""
    _check(cfg)
    ref = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, **_layer_kwargs(cfg))
    copy_attention(layer.self_attn, ref.self_attn)
    _copy_affine(layer.feed_forward.linear1, ref.linear1)
    _copy_affine(layer.feed_forward.linear2, ref.linear2)
    _copy_affine(layer.attn_block.norm, ref.norm1)
    _copy_affine(layer.ff_block.norm, ref.norm2)
    return ref.eval()


def torch_decoder_layer(layer: DecoderLayer, cfg: ModelConfig) -> nn.TransformerDecoderLayer:
    """An ``nn.TransformerDecoderLayer`` (batch_first, eval mode) with ``layer``'s weights."""
    _check(cfg)
    ref = nn.TransformerDecoderLayer(cfg.d_model, cfg.n_heads, **_layer_kwargs(cfg))
    copy_attention(layer.self_attn, ref.self_attn)
    copy_attention(layer.cross_attn, ref.multihead_attn)
    _copy_affine(layer.feed_forward.linear1, ref.linear1)
    _copy_affine(layer.feed_forward.linear2, ref.linear2)
    _copy_affine(layer.self_block.norm, ref.norm1)
    _copy_affine(layer.cross_block.norm, ref.norm2)
    _copy_affine(layer.ff_block.norm, ref.norm3)
    return ref.eval()


def to_torch_transformer(model) -> nn.Transformer:
    """An ``nn.Transformer`` holding ``model``'s encoder and decoder stacks (eval mode).

    Post-norm (the paper) has no final norm after each stack, so ``encoder.norm`` and
    ``decoder.norm`` are ``None`` there; pre-norm copies the model's closing norms.
    """
    cfg = model.cfg
    _check(cfg)
    pre = cfg.norm_position == "pre"
    with warnings.catch_warnings():   # "enable_nested_tensor ... norm_first": we disable it
        warnings.simplefilter("ignore", UserWarning)
        ref = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers,
                             cfg.n_decoder_layers, **_layer_kwargs(cfg))
    # Copy after construction: nn.Transformer re-initialises every matrix it is given.
    ref.encoder.layers = nn.ModuleList(torch_encoder_layer(layer, cfg)
                                       for layer in model.encoder_layers)
    ref.decoder.layers = nn.ModuleList(torch_decoder_layer(layer, cfg)
                                       for layer in model.decoder_layers)
    ref.encoder.enable_nested_tensor = ref.encoder.use_nested_tensor = False  # exact padding
    if pre:
        _copy_affine(model.encoder_norm, ref.encoder.norm)
        _copy_affine(model.decoder_norm, ref.decoder.norm)
    else:
        ref.encoder.norm = ref.decoder.norm = None
    return ref.eval()


@torch.no_grad()
def torch_forward(model, reference: nn.Transformer, src: torch.Tensor,
                  tgt_in: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) with ``model``'s embeddings and projection around torch.nn's stacks.

    Masks in torch.nn's convention: ``True`` = masked out (ours: ``True`` = attend).
    """
    pad = src == model.cfg.pad_id                                     # (B, S)
    src_x = model.src_pos(model.src_embed(src))                       # (B, S, d_model)
    tgt_x = model.tgt_pos(model.tgt_embed(tgt_in))                    # (B, T, d_model)
    T = tgt_in.size(1)
    tgt_mask = ~causal_mask(T, device=tgt_in.device)                  # (T, T) True = hide
    memory = reference.encoder(src_x, src_key_padding_mask=pad if pad.any() else None)
    out = reference.decoder(tgt_x, memory, tgt_mask=tgt_mask,
                            memory_key_padding_mask=pad if pad.any() else None)
    return model.project(out)
