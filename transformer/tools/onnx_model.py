"""The exported graphs in onnxruntime, behind the interface the paper's search reads.

:class:`OnnxModel` runs ``greedy_decode`` and ``beam_search`` (:mod:`transformer.decoding`)
over an export's graphs in Python, as the book's page runs them in JavaScript: the same
arithmetic, the prefix recomputed at each step.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from ..config import ModelConfig
from .manifest import part, read_manifest

__all__ = ["OnnxModel"]


class OnnxModel:
    """The exported graphs behind the interface :mod:`transformer.decoding` searches with.

    ``source_mask``, ``encode``, ``decode`` (which returns the next token's logits, so
    ``project`` is the identity) and ``cfg``: ``greedy_decode(OnnxModel(dir), src)`` and
    ``beam_search(...)`` then run on onnxruntime, recomputing the prefix each step as the
    browser does. ``attention`` holds the last call's weights.
    """

    def __init__(self, folder: str | os.PathLike, threads: int = 1):
        import onnxruntime as ort
        folder = Path(folder)
        manifest = read_manifest(folder)               # every file checked against it
        self.cfg = ModelConfig.from_dict(manifest["config"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = threads
        self.encoder = ort.InferenceSession(str(folder / part(manifest, "encoder")), options)
        self.decoder = ort.InferenceSession(str(folder / part(manifest, "decoder")), options)
        self.training, self.attention = False, {}

    # decoding's conventions: eval mode, no parameters, no cache
    def eval(self):
        return self

    def train(self, mode: bool = True):
        return self

    def parameters(self):
        return iter(())

    def source_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, S) bool, True at real source tokens (as the torch model's)."""
        return (src != self.cfg.pad_id)[:, None, None, :]

    def encode(self, src: torch.Tensor, src_mask=None) -> torch.Tensor:
        memory, weights = self.encoder.run(None, {"src": src.numpy()})
        self.attention["encoder.self"] = torch.from_numpy(weights)
        return torch.from_numpy(memory)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor):
        # The decoder graph reads the source padding from token ids (as the browser passes
        # them) by comparing them with pad_id: ids that are padding exactly where the mask
        # hides a key stand for the mask.
        src = torch.where(src_mask.flatten(1), self.cfg.eos_id, self.cfg.pad_id)
        logits, self_w, cross_w = self.decoder.run(
            None, {"tgt_in": tgt_in.numpy(), "memory": memory.numpy(), "src": src.numpy()})
        self.attention.update({"decoder.self": torch.from_numpy(self_w),
                               "decoder.cross": torch.from_numpy(cross_w)})
        return torch.from_numpy(logits)[:, None, :]   # (B, 1, V): the last position

    def project(self, logits: torch.Tensor) -> torch.Tensor:
        return logits
