"""Section 3.4: embeddings and softmax.

"We share the same weight matrix between the two embedding layers and the pre-softmax
linear transformation ... In the embedding layers, we multiply those weights by
sqrt(d_model)."
"""
from __future__ import annotations

import math

import torch
from torch import nn


class TokenEmbedding(nn.Module):
    """Token ids (B, L) -> vectors (B, L, d_model), scaled by sqrt(d_model).

    Initialised with standard deviation d_model^-0.5 (as Tensor2Tensor does), so the
    scaled embedding has unit variance and, when the matrix is also the pre-softmax
    projection, the first logits are of order one rather than sqrt(d_model).
    """

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model).normal_(0.0, d_model ** -0.5))
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(tokens, self.weight) * self.scale
