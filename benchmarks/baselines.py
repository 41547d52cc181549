"""What the throughput benchmarks compare ours with, and on what: ``torch.nn.Transformer``
and Hugging Face's Marian built to our dimensions, batches made as the trainer makes them
from corpus-like sentence lengths, and the FLOPs of a training step.

Shared by ``benchmarks.cpu.train_throughput`` (a CPU) and ``benchmarks.gpu.throughput``
(a GPU at the paper's sizes).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer import ModelConfig, sinusoidal_encoding
from transformer.batching import collate, token_batches

# --------------------------------------------------------------------------- data
def corpus_like_lengths(n: int, gen: torch.Generator) -> tuple[list[int], list[int]]:
    """Source/target lengths in subword tokens (no EOS/BOS), shaped like Multi30k en-de.

    Multi30k train has 11.9 +- 3.8 English and 11.1 +- 3.8 German words per sentence;
    with an 8k sentencepiece vocabulary that is ~1.3 subwords per word. Source lengths
    follow a gamma distribution with that mean and spread; the target is a noisy
    multiple of the source, as in translation.
    """
    shape, scale = 9.6, 1.6                                    # mean 15.4, sd 5.0
    src = torch._standard_gamma(torch.full((n,), shape), generator=gen) * scale
    src = src.round().clamp(2, 100)
    ratio = torch.empty(n).log_normal_(0.0, 0.15, generator=gen)
    tgt = (src * 0.95 * ratio).round().clamp(1, 100)
    return src.long().tolist(), tgt.long().tolist()


def make_batches(n: int, max_tokens: int, vocab: int, bucketed: bool = True, seed: int = 0):
    """``n`` right-padded (src, tgt_in, tgt_out) batches, as the project's trainer makes them.

    Sentence lengths come from :func:`corpus_like_lengths`; the pairs are grouped by
    :func:`transformer.batching.token_batches` (sorted by target then source length, packed
    up to ``max_tokens`` slots per side) and padded by :func:`transformer.batching.collate`.
    ``bucketed=False`` packs the pairs in random order instead (much more padding).
    Token ids are random: the speed of a step does not depend on them.
    """
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    src_len, tgt_len = corpus_like_lengths(40 * max_tokens // 16, gen)
    groups = token_batches([s + 1 for s in src_len], [t + 1 for t in tgt_len], max_tokens,
                           seed=seed, bucket=bucketed)
    groups = [g for g in groups if len(g) > 1][:n]     # drop a lone over-long pair
    batches = []
    for group in groups:
        src = [torch.randint(4, vocab, (src_len[i],), generator=gen).tolist() for i in group]
        tgt = [torch.randint(4, vocab, (tgt_len[i],), generator=gen).tolist() for i in group]
        b = collate(src, tgt)
        batches.append((b.src, b.tgt_in, b.tgt_out))
    return batches



# ------------------------------------------------------------------------ models
class TorchTransformerMT(nn.Module):
    """torch.nn.Transformer with the paper's embeddings and tied pre-softmax projection."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.pad_id, self.scale = cfg.pad_id, math.sqrt(d)
        self.embed = nn.Parameter(torch.empty(cfg.vocab_size, d).normal_(0.0, d ** -0.5))
        self.register_buffer("pe", sinusoidal_encoding(cfg.max_len, d), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        self.core = nn.Transformer(d, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers,
                                   cfg.d_ff, cfg.dropout, activation="relu", batch_first=True,
                                   norm_first=False, layer_norm_eps=cfg.layer_norm_eps)
        # Same model as ours: no LayerNorm after a post-norm stack, dropout only on the
        # residual branches (nn.Transformer also drops attention weights and activations).
        self.core.encoder.norm = self.core.decoder.norm = None
        for layer in [*self.core.encoder.layers, *self.core.decoder.layers]:
            layer.dropout = nn.Dropout(cfg.activation_dropout)
            for attn in (getattr(layer, "self_attn", None), getattr(layer, "multihead_attn", None)):
                if attn is not None:
                    attn.dropout = cfg.attention_dropout

    def embed_tokens(self, tokens):
        return self.dropout(F.embedding(tokens, self.embed) * self.scale
                            + self.pe[:tokens.size(1)])

    def forward(self, src, tgt_in):
        src_pad, tgt_pad = src == self.pad_id, tgt_in == self.pad_id          # True = ignore
        T = tgt_in.size(1)
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)                  # True = ignore
        h = self.core(self.embed_tokens(src), self.embed_tokens(tgt_in), tgt_mask=causal,
                      src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                      memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return h @ self.embed.t()                                             # (B, T, V)


def build_marian(cfg: ModelConfig):
    from transformers import MarianConfig, MarianMTModel
    mc = MarianConfig(
        vocab_size=cfg.vocab_size, decoder_vocab_size=cfg.vocab_size, d_model=cfg.d_model,
        encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff, activation_function="relu",
        dropout=cfg.dropout, attention_dropout=cfg.attention_dropout,
        activation_dropout=cfg.activation_dropout, max_position_embeddings=cfg.max_len,
        scale_embedding=True, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=cfg.pad_id, eos_token_id=cfg.eos_id, decoder_start_token_id=cfg.bos_id,
        forced_eos_token_id=cfg.eos_id, use_cache=False)
    mc._attn_implementation = "sdpa"
    return MarianMTModel(mc)


# ------------------------------------------------------------------------- FLOPs
def model_flops(cfg: ModelConfig, src, tgt_out) -> float:
    """Training FLOPs of one step on the real (non-pad) tokens.

    6 * (matrix-multiply parameters) * tokens -- 2 per multiply-add forward, 4 backward --
    with each weight counted on the tokens it multiplies: encoder (4 d^2 + 2 d d_ff per
    layer) and the decoder's cross-attention K, V maps (2 d^2) on source tokens; the rest
    of the decoder (6 d^2 + 2 d d_ff per layer) and the d x V output projection on target
    tokens. The embedding lookup is not a matmul. Plus the attention products QK^T and AV,
    6 * 2 * q_len * k_len * d per layer and sentence, over each sentence's real lengths;
    decoder self-attention counts the causal half, T(T+1)/2.
    """
    d, f, V = cfg.d_model, cfg.d_ff, cfg.tgt_vocab_size
    s_len = (src != cfg.pad_id).sum(1).double()
    t_len = (tgt_out != cfg.pad_id).sum(1).double()
    S, T = s_len.sum().item(), t_len.sum().item()
    on_src = cfg.n_encoder_layers * (4 * d * d + 2 * d * f) + cfg.n_decoder_layers * 2 * d * d
    on_tgt = cfg.n_decoder_layers * (6 * d * d + 2 * d * f) + d * V
    dense = 6 * (on_src * S + on_tgt * T)
    attn = 12 * d * (cfg.n_encoder_layers * (s_len ** 2).sum()
                     + cfg.n_decoder_layers * ((t_len * (t_len + 1) / 2).sum()
                                               + (t_len * s_len).sum()))
    return dense + attn.item()
