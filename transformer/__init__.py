"""Attention Is All You Need (Vaswani et al., 2017), one module per section."""
from .attention import (KVCache, MultiHeadAttention, record_attention,
                        scaled_dot_product_attention)
from .config import ModelConfig
from .loss import LabelSmoothingLoss
from .model import Transformer
from .positional import sinusoidal_encoding
from .schedule import noam_lr

__all__ = ["ModelConfig", "Transformer", "MultiHeadAttention", "KVCache", "record_attention",
           "scaled_dot_product_attention", "sinusoidal_encoding", "noam_lr",
           "LabelSmoothingLoss"]
__version__ = "0.1.0"
