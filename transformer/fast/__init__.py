"""The fast form: speed-ups of the plain model, each in a module of its own and each
proven equal to the plain form by tests/test_fast.py (outputs and gradients).

* :mod:`.attention`: the fused attention kernel (``F.scaled_dot_product_attention``);
  saves storing the (q_len, k_len) weights.
* :mod:`.packing`: padding-free rows in the position-wise layers; saves the work on padding.
* :mod:`.loss`: the written-out gradient, and the projection fused into the loss; saves
  the (n, V) tensors.
* :mod:`.dropout`: a 16-bit dropout mask from 64-bit random words (CPU); saves most of
  dropout's time.
* :mod:`.kv_cache`: keys and values kept across decoding steps; saves recomputing the
  prefix.
* :func:`compile_layers`: ``torch.compile`` per layer, with dynamic shapes (one compilation
  for every batch shape); ``--compile``.

:class:`FastTransformer` plugs them into the plain model; chapter 6 of the book measures
each one.
"""
from .attention import FastMultiHeadAttention, FusedAttention, Layout
from .dropout import CheapDropout, use_cheap_dropout
from .kv_cache import KVCache
from .loss import FastLabelSmoothingLoss, SequenceLoss, projected_smoothed_loss
from .model import FastTransformer, compile_layers, fast_form, plain_form
from .packing import Packing

__all__ = ["FastTransformer", "compile_layers", "fast_form", "plain_form", "FastMultiHeadAttention",
           "FusedAttention", "Layout", "CheapDropout", "use_cheap_dropout", "KVCache",
           "FastLabelSmoothingLoss", "SequenceLoss", "projected_smoothed_loss", "Packing"]
