"""Under the hood C's timing (``book/hood_hardware.ipynb``): one training step of the
trainer's form of the model (forward, label-smoothed loss, backward, Adam) in a precision,
timed with the package's harness (:mod:`transformer.measuring.timing`).
"""
from __future__ import annotations

import torch

from transformer.fast import FastLabelSmoothingLoss, FastTransformer, SequenceLoss
from transformer.measuring.timing import median_seconds
from transformer.training.optimizers import make_optimizer
from transformer.training.precision import autocast


def training_step_seconds(cfg, batch: int, length: int, precision: str, repeats: int,
                          device="cpu") -> float:
    """Median seconds of one training step of ``FastTransformer(cfg)`` (the form the
    trainer uses, with its ``SequenceLoss``) on random tokens, under the trainer's
    ``autocast`` in ``precision``."""
    torch.manual_seed(0)
    model = FastTransformer(cfg).to(device)
    loss_module = SequenceLoss(model, FastLabelSmoothingLoss(0.1, cfg.pad_id))
    optimizer = make_optimizer(model)
    for group in optimizer.param_groups:
        group["lr"] = 1e-4
    src = torch.randint(4, cfg.vocab_size, (batch, length), device=device)
    tgt = torch.randint(4, cfg.vocab_size, (batch, length + 1), device=device)

    def step():
        with autocast(device, precision):
            loss = loss_module(src, tgt[:, :-1], tgt[:, 1:]) / (batch * length)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return median_seconds(step, repeats, device)
