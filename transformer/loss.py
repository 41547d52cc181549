"""Section 5.4: label smoothing.

"During training, we employed label smoothing of value eps_ls = 0.1 [36]. This hurts
perplexity, as the model learns to be more unsure, but improves accuracy and BLEU."

Following Szegedy et al. [36] the target distribution is
q'(k) = (1 - eps) * 1[k = y] + eps / V, and the loss is the cross-entropy
H(q', p) = (1 - eps) * (-log p_y) + eps * mean_k(-log p_k), averaged over the non-pad
target tokens.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def smoothed_target(target: torch.Tensor, vocab_size: int, smoothing: float) -> torch.Tensor:
    """The distribution q' as a dense (..., V) tensor (for teaching and tests)."""
    q = torch.full((*target.shape, vocab_size), smoothing / vocab_size)
    return q.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(q[..., :1], 1 - smoothing))


class SmoothedCrossEntropy(torch.autograd.Function):
    """Summed H(q', p) over rows of logits z (n, V), p = softmax(z), with the gradient
    written out: since q' sums to one, dH/dz = p - q'.

    Autograd through log_softmax, gather and mean gives the same numbers but materialises
    several (n, V) gradients on the way; with a vocabulary of thousands this loss is a
    large share of a CPU training step, and the hand-written backward writes just one.
    """

    @staticmethod
    def forward(ctx, logits, target, smoothing: float):
        logp = F.log_softmax(logits.float(), dim=-1)                # (n, V), fp32 under autocast
        nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)    # -log p_y
        smooth = -logp.mean(dim=-1)                                 # mean_k -log p_k
        ctx.save_for_backward(logp, target)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        return ((1 - smoothing) * nll + smoothing * smooth).sum()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        eps = ctx.smoothing
        g = logp.exp().sub_(eps / logp.size(-1))                    # p - eps / V
        g.scatter_add_(-1, target.unsqueeze(-1),                    # - (1 - eps) at the label
                       g.new_full((target.numel(), 1), eps - 1.0))
        return g.mul_(grad).to(ctx.dtype), None, None


class LabelSmoothingLoss(nn.Module):
    def __init__(self, smoothing: float = 0.1, pad_id: int = 0):
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"label smoothing must be in [0, 1), got {smoothing}")
        self.smoothing, self.pad_id = smoothing, pad_id

    def forward(self, logits: torch.Tensor, target: torch.Tensor, reduction: str = "mean"):
        """logits (..., V), target (...) -> mean loss over non-pad targets
        (``reduction="sum"`` returns the sum, for token-weighted accumulation)."""
        if logits.shape[:-1] != target.shape:
            raise ValueError(f"logits {tuple(logits.shape)} and target {tuple(target.shape)} "
                             f"do not match")
        keep = target != self.pad_id
        n_tokens = int(keep.sum())
        if n_tokens < keep.numel():        # drop pad rows (the trainer already has)
            logits, target = logits[keep], target[keep]
        loss = SmoothedCrossEntropy.apply(logits.reshape(-1, logits.size(-1)),
                                          target.reshape(-1), self.smoothing)
        return loss if reduction == "sum" else loss / max(n_tokens, 1)
