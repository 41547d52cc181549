"""The fast form of the label-smoothed loss (section 5.4), tested equal to the plain one.

:func:`transformer.loss.label_smoothed_nll_loss` lets autograd differentiate
log_softmax, gather and mean, which materialises several (n, V) tensors; with a
vocabulary of thousands the loss is then a large share of a CPU training step. Two
speed-ups, each checked against it (values and gradients, tests/test_fast.py):

* :class:`SmoothedCrossEntropy` writes the gradient out: since q' sums to one,
  dH/dz = softmax(z) - q', one (n, V) tensor.
* :class:`ProjectedSmoothedCrossEntropy` fuses the pre-softmax projection (3.4) into the
  loss, chunk by chunk of rows, so no (n, V) logits or gradients are ever kept.

:class:`FastLabelSmoothingLoss` offers both behind the plain loss's interface, and
:class:`SequenceLoss` is the training step's loss module (the one DDP and
``torch.compile`` wrap).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from ..loss import LabelSmoothingLoss


def p_minus_smoothed_target(p: torch.Tensor, target: torch.Tensor, smoothing: float):
    """dH/dz = p - q' for probabilities p (n, V) and labels target (n,), computed in place
    in ``p``: p - eps / V everywhere, and - (1 - eps) at the label."""
    p.scatter_add_(-1, target.unsqueeze(-1), p.new_full((target.numel(), 1), smoothing - 1.0))
    return p.sub_(smoothing / p.size(-1))


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
    @once_differentiable
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        g = p_minus_smoothed_target(logp.exp(), target, ctx.smoothing)
        return g.mul_(grad).to(ctx.dtype), None, None


def _compute_dtype(tensor: torch.Tensor) -> torch.dtype:
    """The dtype autocast would run a matmul in (it leaves float64 alone), else the
    tensor's own."""
    device = tensor.device.type
    if torch.is_autocast_enabled(device) and tensor.dtype != torch.float64:
        return torch.get_autocast_dtype(device)
    return tensor.dtype


# Logits per chunk in the fused loss. On CPU, 2^22 fp32 values (16 MB, ~500 rows of an
# 8k vocabulary) stay in cache yet keep the fp32 GEMM at full speed (smaller chunks slow
# it down); a GPU wants few, large kernels.
CHUNK_ELEMENTS = {"cpu": 1 << 22}
DEFAULT_CHUNK_ELEMENTS = 1 << 28


class ProjectedSmoothedCrossEntropy(torch.autograd.Function):
    """Summed H(q', softmax(h W^T)) over rows of h (n, d): the pre-softmax projection (3.4)
    and the label-smoothed loss (5.4) in one pass over chunks of rows.

    Per chunk of rows, with z = h W^T and lse = log sum_k exp(z_k):
    -log p_y = lse - z_y and mean_k(-log p_k) = lse - mean_k z_k, so the loss needs no
    log-probability table. While the chunk is still in cache, its G = dH/dz = p - q' goes
    straight into the two matrix multiplies of the backward, dH/dh = G W and
    dH/dW += G^T h; no (n, V) tensor is ever kept (at a GPU batch of 25,000 tokens and a
    37,000-token vocabulary that would be 3.7 GB in fp32), and the backward only scales
    them by the incoming gradient. Under autocast the logits are computed in the autocast
    ``dtype`` and soft-maxed in fp32, as autocast would; dH/dW adds up the chunks in fp32.
    ``need_grad`` is False under ``torch.no_grad`` (validation), and then no gradient is
    computed; neither is one for an input that does not require it.
    """

    @staticmethod
    def forward(ctx, states, weight, target, smoothing: float, chunk_rows: int,
                need_grad: bool, dtype: torch.dtype):
        n, V = states.size(0), weight.size(0)
        h, w = states.to(dtype), weight.to(dtype)
        softmax_dtype = torch.promote_types(dtype, torch.float32)
        total = h.new_zeros((), dtype=softmax_dtype)
        rows = max(1, min(chunk_rows, n))
        z_buf = h.new_empty(rows, V, dtype=softmax_dtype)              # reused per chunk
        mm_buf = z_buf if dtype == softmax_dtype else h.new_empty(rows, V)
        want_states, want_weight = (need_grad and ctx.needs_input_grad[0],
                                    need_grad and ctx.needs_input_grad[1])
        need_grad = want_states or want_weight
        grad_states = h.new_empty(n, h.size(1)) if want_states else None          # (n, d)
        grad_weight = (h.new_zeros(V, h.size(1), dtype=softmax_dtype)             # (V, d)
                       if want_weight else None)
        with torch.autocast(states.device.type, enabled=False):
            for lo in range(0, n, rows):
                c = min(rows, n - lo)
                h_c, y = h[lo:lo + c], target[lo:lo + c]
                z = torch.mm(h_c, w.t(), out=mm_buf[:c])                     # (c, V) logits
                if mm_buf is not z_buf:
                    z = z_buf[:c].copy_(z)                                   # fp32 softmax
                z_max = z.amax(-1, keepdim=True)
                loss = (z_max - (1 - smoothing) * z.gather(-1, y[:, None])
                        - smoothing * z.mean(-1, keepdim=True))
                e = z.sub_(z_max).exp_()                                     # in place
                e_sum = e.sum(-1, keepdim=True)
                total += (loss + e_sum.log()).sum()                          # lse = max + log sum
                if need_grad:                                                # p = e / sum
                    g = p_minus_smoothed_target(e.div_(e_sum), y, smoothing)   # (c, V)
                    if mm_buf is not z_buf:
                        g = mm_buf[:c].copy_(g)                              # back to dtype
                    if want_states:
                        torch.mm(g, w, out=grad_states[lo:lo + c])           # G W
                    if want_weight and g.dtype == grad_weight.dtype:
                        grad_weight.addmm_(g.t(), h_c)                       # += G^T h
                    elif want_weight:
                        grad_weight += g.t() @ h_c
        if need_grad:
            ctx.save_for_backward(grad_states, grad_weight)
        return total

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        grad_states, grad_weight = ctx.saved_tensors
        return (grad_states * grad if grad_states is not None else None,
                grad_weight * grad if grad_weight is not None else None,
                None, None, None, None, None)


def projected_smoothed_loss(states: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                            smoothing: float) -> torch.Tensor:
    """Summed label-smoothed loss of logits ``states @ weight.T`` without keeping them all.

    states (n, d) decoder outputs at real target positions, weight (V, d) the pre-softmax
    matrix, target (n,) token ids. Equals ``SmoothedCrossEntropy`` on the full logits
    (tests/test_schedule_loss.py); faster on CPU because every (n, V) pass stays in cache.
    """
    dtype = _compute_dtype(states)
    chunk = CHUNK_ELEMENTS.get(states.device.type, DEFAULT_CHUNK_ELEMENTS)
    need_grad = torch.is_grad_enabled() and (states.requires_grad or weight.requires_grad)
    return ProjectedSmoothedCrossEntropy.apply(states, weight, target, smoothing,
                                               max(1, chunk // weight.size(0)), need_grad,
                                               dtype)


class FastLabelSmoothingLoss(LabelSmoothingLoss):
    """:class:`~transformer.loss.LabelSmoothingLoss` through :class:`SmoothedCrossEntropy`,
    plus :meth:`from_states`, the loss with the projection fused in."""

    def summed(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The summed loss with the gradient p - q' written out; pad rows are dropped."""
        is_real = target != self.pad_id
        if not bool(is_real.all()):          # drop pad rows (the trainer already has)
            logits, target = logits[is_real], target[is_real]
        return SmoothedCrossEntropy.apply(logits.reshape(-1, logits.size(-1)),
                                          target.reshape(-1), self.smoothing)

    def from_states(self, states: torch.Tensor, weight: torch.Tensor, target: torch.Tensor):
        """Summed loss of the logits ``states @ weight.T`` (see
        :func:`projected_smoothed_loss`); states (n, d), weight (V, d), target (n,), every
        target a real (non-pad) token."""
        if states.dim() != 2 or target.shape != states.shape[:1]:
            raise ValueError(f"states {tuple(states.shape)} must be (n, d_model) with one "
                             f"target each, got target {tuple(target.shape)}")
        return projected_smoothed_loss(states, weight, target, self.smoothing)


class SequenceLoss(nn.Module):
    """Summed label-smoothed loss of a batch under a :class:`~transformer.fast.FastTransformer`.

    Projects only the non-pad target positions onto the vocabulary (the pre-softmax matrix
    multiply is the largest in a small model, and pad rows would be thrown away), fused
    with the loss chunk by chunk. Equals ``LabelSmoothingLoss(reduction="sum")`` on the
    plain model's logits (tests/test_fast.py).
    """

    def __init__(self, model, criterion: FastLabelSmoothingLoss):
        super().__init__()
        self.model, self.criterion = model, criterion

    def forward(self, src, tgt_in, tgt_out):
        is_target = tgt_out != self.criterion.pad_id
        states = self.model.target_states(src, tgt_in, is_target)       # (n_tokens, d)
        return self.criterion.from_states(states, self.model.output_weight, tgt_out[is_target])
