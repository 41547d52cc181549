"""Section 3.3: position-wise feed-forward networks.

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2          -- equation (2)

applied to each position separately and identically; inner size d_ff.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .config import ModelConfig


class PositionwiseFeedForward(nn.Module):
    """Equation (2): two linear maps with a ReLU between, the same at every position."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.linear1 = nn.Linear(cfg.d_model, cfg.d_ff)     # W_1, b_1
        self.linear2 = nn.Linear(cfg.d_ff, cfg.d_model)     # W_2, b_2
        self.dropout = nn.Dropout(cfg.activation_dropout)   # 0 in the paper

    def forward(self, x):                                   # (..., d_model)
        return self.linear2(self.dropout(F.relu(self.linear1(x))))   # via (..., d_ff)
