"""Attention Is All You Need (Vaswani et al., 2017), one module per section.

The paper's plain form: :mod:`.attention` (3.2), :mod:`.feedforward` (3.3),
:mod:`.embedding` (3.4), :mod:`.positional` (3.5), :mod:`.layers` and :mod:`.model` (3.1),
:mod:`.schedule` (5.3), :mod:`.loss` (5.4), :mod:`.decoding` (6.1). The same model run
faster, with each speed-up tested equal to the plain form: :mod:`transformer.fast`.
Using a trained model: :mod:`.tokenizer`, :mod:`.data`, :mod:`.batching`,
:mod:`.checkpoint`, :mod:`.inference` (:func:`load_model`), :mod:`.translation`
(:func:`translate`), :mod:`.doubt`, :mod:`.evaluate` (:func:`score`), :mod:`.validation`.

Training (section 5) is the subpackage :mod:`transformer.training`, imported on first use
(:class:`Trainer`, :class:`TrainConfig`, the named recipes); the command line, the ONNX
export, Table 3's ablation and interop are :mod:`transformer.tools`. Measuring:
:mod:`transformer.measuring` (the timers, where a record's figures come from, the result
records and the tables rendered from them).
"""
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .config import ModelConfig
from .decoding import beam_search, greedy_decode
from .evaluate import score
from .fast import FastTransformer, KVCache, fast_form, plain_form
from .recording import record_attention
from .inference import load_model
from .loss import LabelSmoothingLoss
from .model import Transformer
from .positional import sinusoidal_encoding
from .schedule import noam_lr
from .tokenizer import Tokenizer
from .translation import translate

# The training stack (and torch.distributed) loads on first use: ``transformer.Trainer``.
_LAZY = {"Trainer": "training.loop", "TrainConfig": "training.config",
         "TrainingError": "training.config"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ModelConfig", "Transformer", "FastTransformer", "fast_form", "plain_form",
           "MultiHeadAttention", "KVCache", "record_attention", "scaled_dot_product_attention",
           "sinusoidal_encoding", "noam_lr", "LabelSmoothingLoss", "Tokenizer", "translate",
           "greedy_decode", "beam_search", "score", "load_model", "Trainer", "TrainConfig",
           "TrainingError"]
__version__ = "0.1.0"
