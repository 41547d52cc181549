"""Section 5.4: label smoothing, in the paper's plain form.

"During training, we employed label smoothing of value eps_ls = 0.1 [36]. This hurts
perplexity, as the model learns to be more unsure, but improves accuracy and BLEU."

Following Szegedy et al. [36] the target distribution is
q'(k) = (1 - eps) * 1[k = y] + eps / V, and the loss is the cross-entropy
H(q', p) = -sum_k q'(k) log p(k) = (1 - eps) * (-log p_y) + eps * mean_k(-log p_k),
averaged over the non-pad target tokens.

The fast form (a written-out gradient, and the pre-softmax projection fused into the
loss chunk by chunk) is :mod:`transformer.fast.loss`, tested equal to this one.
"""
from __future__ import annotations

import torch
from torch import nn


def smoothed_target(target: torch.Tensor, vocab_size: int, smoothing: float) -> torch.Tensor:
    """The distribution q' as a dense (..., V) tensor (for teaching and tests)."""
    q = torch.full((*target.shape, vocab_size), smoothing / vocab_size)
    return q.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(q[..., :1], 1 - smoothing))


def label_smoothed_nll_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float,
                            pad_id: int) -> torch.Tensor:
    """Summed H(q', softmax(logits)) over the non-pad targets: logits (..., V), target (...)."""
    log_p = logits.float().log_softmax(dim=-1)                       # (..., V)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)        # -log p_y
    uniform = -log_p.mean(dim=-1)                                    # mean_k -log p_k
    loss = (1 - smoothing) * nll + smoothing * uniform               # H(q', p) per token
    return loss.masked_fill(target == pad_id, 0.0).sum()


class LabelSmoothingLoss(nn.Module):
    """``LabelSmoothingLoss(0.1, pad_id)(logits, target)``: the mean loss per real token."""

    def __init__(self, smoothing: float = 0.1, pad_id: int = 0):
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"label smoothing must be in [0, 1), got {smoothing}")
        self.smoothing, self.pad_id = smoothing, pad_id

    def forward(self, logits: torch.Tensor, target: torch.Tensor, reduction: str = "mean"):
        """logits (..., V), target (...) -> mean loss over non-pad targets
        (``reduction="sum"``: the sum, for token-weighted accumulation)."""
        if logits.shape[:-1] != target.shape:
            raise ValueError(f"logits {tuple(logits.shape)} and target {tuple(target.shape)} "
                             f"do not match")
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        total = self.summed(logits, target)
        if reduction == "sum":
            return total
        return total / (target != self.pad_id).sum().clamp(min=1)

    def summed(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The loss summed over the non-pad targets (the fast form computes it faster)."""
        return label_smoothed_nll_loss(logits, target, self.smoothing, self.pad_id)
