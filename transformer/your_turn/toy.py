"""The toy tasks of chapters 4 and 5: reverse, copy or sort a short sequence of letters.

They are the tasks of chapter 4's in-page training panel (book/_ext/static/training/panel.js),
trained here with the package's plain :class:`~transformer.model.Transformer`: a batch of
random letter sequences (:func:`toy_batch`), Adam on the unsmoothed cross-entropy
(:func:`train_toy`), and the share of tokens and of whole sequences right on sequences the
model has not seen (:func:`toy_accuracy`). :func:`remove_positions` takes the sinusoids out
of a model, the panel's "Positions: none".
"""
from __future__ import annotations

import torch

from ..config import BOS_ID, EOS_ID, ModelConfig
from ..loss import LabelSmoothingLoss
from ..model import Transformer

FIRST = 4                      # ids 0-3 are <pad> <s> </s> <unk>; letters start at 4
TASKS = {"reverse": lambda src: src.flip(1),
         "copy": lambda src: src,
         "sort": lambda src: src.sort(1).values}


def toy_batch(task: str, size: int, letters: int, length: int, generator=None):
    """``size`` random sequences of ``length`` letters (ids 4 .. 4 + letters - 1) and their
    ``task`` answer: ``(src, tgt_in, tgt_out)``, the decoder input starting with <s> and
    the target ending with </s>, one position apart."""
    src = torch.randint(FIRST, FIRST + letters, (size, length), generator=generator)
    tgt = TASKS[task](src)
    bos = torch.full((size, 1), BOS_ID)
    eos = torch.full((size, 1), EOS_ID)
    return src, torch.cat([bos, tgt], 1), torch.cat([tgt, eos], 1)


def toy_config(letters: int, **changes) -> ModelConfig:
    """A small model for the toy tasks: ``changes`` set d_model, n_heads, layers, ..."""
    settings = dict(vocab_size=FIRST + letters, d_model=32, n_heads=4, d_ff=64,
                    n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=32)
    settings.update(changes)
    return ModelConfig(**settings)


def remove_positions(model: Transformer) -> Transformer:
    """``model`` with its sinusoidal tables set to zero: the embeddings reach the first
    layers with no position added (the tables are buffers, so training cannot bring them
    back)."""
    for table in (model.src_pos.table, model.tgt_pos.table):
        if table.requires_grad:
            raise ValueError("remove_positions needs the sinusoidal encoding (a fixed table)")
        table.zero_()
    return model


def train_toy(model: Transformer, task: str, steps: int, letters: int, length: int,
              lr: float = 3e-3, batch: int = 64, seed: int = 0) -> list[float]:
    """Train ``model`` on ``task`` with Adam, a fresh batch of random sequences at every
    step; returns the training loss of each step."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = LabelSmoothingLoss(smoothing=0.0, pad_id=model.cfg.pad_id)
    losses = []
    model.train()
    for _ in range(steps):
        src, tgt_in, tgt_out = toy_batch(task, batch, letters, length, generator)
        loss = loss_fn(model(src, tgt_in), tgt_out)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def toy_accuracy(model: Transformer, task: str, letters: int, length: int, n: int = 512,
                 seed: int = 1) -> tuple[float, float]:
    """(token accuracy, sequence accuracy) of ``model`` on ``n`` new sequences, reading
    the correct previous tokens (teacher forcing)."""
    src, tgt_in, tgt_out = toy_batch(task, n, letters, length, torch.Generator().manual_seed(seed))
    right = model.eval()(src, tgt_in).argmax(-1) == tgt_out
    return right.float().mean().item(), right.all(1).float().mean().item()
