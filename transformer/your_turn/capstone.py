"""The capstone, "Your Transformer": the learner's parts from chapters 3-7 assembled into
the model of section 3, trained with the paper's optimiser, schedule and loss.

``Parts`` names the seven parts; each defaults to the package's own, so the same code runs
with none, some or all of the learner's. :func:`assemble` builds the model from them
(:class:`YourTransformer`, with the interface the package's searches use), and
:func:`train_model` trains it on batches the caller makes, with Adam(0.9, 0.98, 1e-9), the
learner's learning-rate schedule and the learner's label-smoothed loss.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import torch
from torch import nn

from ..attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from ..config import ModelConfig
from ..embedding import TokenEmbedding
from ..layers import DecoderLayer, EncoderLayer
from ..loss import label_smoothed_nll_loss
from ..positional import sinusoidal_encoding
from ..recording import record_name
from ..schedule import noam_lr
from .attention import check_attention
from .layers import check_decoder_layer, check_encoder_layer
from .loss import check_loss
from .multi_head import check_multi_head
from .positional import check_positional
from .schedule import check_schedule


@dataclass
class Parts:
    """The parts a learner writes, chapter by chapter (the package's by default)."""
    attention: Callable = scaled_dot_product_attention      # chapter 3
    multi_head: type = MultiHeadAttention                   # chapter 4
    positional: Callable = sinusoidal_encoding              # chapter 5
    encoder_layer: type = EncoderLayer                      # chapter 6
    decoder_layer: type = DecoderLayer                      # chapter 6
    loss: Callable = label_smoothed_nll_loss                # chapter 7
    schedule: Callable = noam_lr                            # chapter 7

    def yours(self) -> list[str]:
        """The names of the parts that are not the package's."""
        book = Parts()
        return [f.name for f in fields(self) if getattr(self, f.name) is not getattr(book, f.name)]


CHECKS = {"attention": check_attention, "multi_head": check_multi_head,
          "positional": check_positional, "encoder_layer": check_encoder_layer,
          "decoder_layer": check_decoder_layer, "loss": check_loss, "schedule": check_schedule}
"""The check of each part, by the part's name in :class:`Parts`."""


def check_parts(parts: Parts) -> None:
    """Run the check of each of the learner's parts, a line each; the first that fails
    raises :class:`~transformer.your_turn.report.CheckFailed` naming the mistake."""
    yours = parts.yours()
    if not yours:
        print("No part of yours yet: every part is the book's.")
    for name in yours:
        report = CHECKS[name](getattr(parts, name), quiet=True)
        print(f"{name:>13}: {report.one_line()}")


class _Kernel(nn.Module):
    """Equation (1) by the learner's function inside every attention layer; keeps the
    last weights while ``record`` is on (the maps of the capstone)."""

    def __init__(self, fn: Callable, name: str):
        super().__init__()
        self.fn, self.name, self.record, self.weights = fn, name, False, None

    def forward(self, q, k, v, mask=None):
        result = self.fn(q, k, v, mask)
        out, weights = (result if isinstance(result, (tuple, list)) else (result, None))
        if self.record:        # a function that returns no weights: the book's, for the map
            self.weights = (weights if weights is not None
                            else scaled_dot_product_attention(q, k, v, mask)[1]).detach()
        return out, weights


def _layer(cls, cfg, multi_head):
    try:
        return cls(cfg, attention=multi_head)
    except TypeError:           # a layer whose __init__ takes only cfg builds its own
        return cls(cfg)


class YourTransformer(nn.Module):
    """Section 3's model from :class:`Parts`: shared embeddings scaled by sqrt(d_model),
    the positional table, N encoder and N decoder layers, the shared pre-softmax map."""

    def __init__(self, cfg: ModelConfig, parts: Parts | None = None):
        super().__init__()
        cfg.validate()
        self.cfg, self.parts = cfg, parts or Parts()
        self.embed = TokenEmbedding(cfg.vocab_size, cfg.d_model)
        table = torch.as_tensor(self.parts.positional(cfg.max_len, cfg.d_model)).float()
        if tuple(table.shape) != (cfg.max_len, cfg.d_model):
            raise ValueError(f"the positional table has shape {tuple(table.shape)}, expected "
                             f"({cfg.max_len}, {cfg.d_model})")
        self.register_buffer("positions", table, persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        mha = self.parts.multi_head
        self.encoder_layers = nn.ModuleList(_layer(self.parts.encoder_layer, cfg, mha)
                                            for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(_layer(self.parts.decoder_layer, cfg, mha)
                                            for _ in range(cfg.n_decoder_layers))
        for path, module in list(self.named_modules()):
            if hasattr(module, "q_proj") and isinstance(getattr(module, "attention", None),
                                                          (nn.Module, Callable)):
                module.attention = _Kernel(self.parts.attention, record_name(path))
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def source_mask(self, src):
        return (src != self.cfg.pad_id)[:, None, None, :]

    def _embed(self, tokens):
        return self.dropout(self.embed(tokens) + self.positions[:tokens.size(1)])

    def encode(self, src, src_mask):
        x = self._embed(src)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return x

    def decode(self, tgt_in, memory, src_mask):
        y, no_peeking = self._embed(tgt_in), causal_mask(tgt_in.size(1), device=tgt_in.device)
        for layer in self.decoder_layers:
            y = layer(y, memory, no_peeking, src_mask)
        return y

    def project(self, states):
        return states @ self.embed.weight.t()

    def forward(self, src, tgt_in):
        src_mask = self.source_mask(src)
        return self.project(self.decode(tgt_in, self.encode(src, src_mask), src_mask))

    @torch.no_grad()
    def attention_maps(self, src, tgt_in) -> dict[str, torch.Tensor]:
        """Every layer's weights for one batch: ``{"decoder.0.cross": (B, h, T, S), ...}``."""
        kernels = [m for m in self.modules() if isinstance(m, _Kernel)]
        for k in kernels:
            k.record = True
        try:
            self.eval()(src, tgt_in)
            silent = [k.name for k in kernels if k.weights is None]
            if silent:
                raise ValueError(f"no weights from {', '.join(silent)}: its attention layer "
                                 f"does not call self.attention(q, k, v, visibility), so "
                                 f"neither your chapter 3 attention nor this map is used")
            return {k.name: k.weights for k in kernels}
        finally:
            for k in kernels:
                k.record, k.weights = False, None


def assemble(cfg: ModelConfig, parts: Parts | None = None) -> YourTransformer:
    """The model of section 3 from ``parts`` (the package's where a part is not given)."""
    return YourTransformer(cfg, parts)


def train_model(model: YourTransformer, batches: Callable, steps: int, warmup: int,
                smoothing: float = 0.1, factor: float = 1.0, seed: int = 0) -> list[float]:
    """Train with the paper's recipe and the model's parts: Adam(0.9, 0.98, 1e-9), the
    rate ``factor * schedule(step, d_model, warmup)``, the loss ``parts.loss`` per real
    token. ``batches(generator)`` returns ``(src, tgt_in, tgt_out)``. Returns the losses."""
    parts, cfg = model.parts, model.cfg
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    model.train()
    for step in range(1, steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = factor * float(parts.schedule(step, cfg.d_model, warmup))
        src, tgt_in, tgt_out = batches(generator)
        summed = parts.loss(model(src, tgt_in), tgt_out, smoothing, cfg.pad_id)
        loss = summed / (tgt_out != cfg.pad_id).sum().clamp(min=1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
