"""Loading a trained model for translation: the device and the checkpoint (section 6).

:func:`load_model` reads a checkpoint written by the trainer or by
``python -m transformer average`` and returns the model, built as
:class:`~transformer.fast.FastTransformer`, with its tokenizer. This module does not
import the training stack (the trainer, ``torch.distributed``): translating needs none of it.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from .checkpoint import CheckpointError, check_vocabulary, load_checkpoint
from .config import ModelConfig
from .fast import FastTransformer
from .tokenizer import Tokenizer
from .errors import InputError


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """The device ``name`` asks for: ``"auto"`` is CUDA when available, else the CPU.

    Raises ``ValueError`` for a name torch does not know and for a CUDA device this
    machine does not have, instead of failing later in ``torch.load`` or ``.to()``.
    """
    if isinstance(name, torch.device):
        device = name
    elif name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            device = torch.device(name)
        except (RuntimeError, ValueError):
            raise InputError(f"unknown device {name!r}: use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"device {str(name)!r}: CUDA is not available on this machine "
                             f"(torch {torch.__version__}); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise InputError(f"device {str(name)!r}: this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s)")
    return device


def _tokenizer_for(path: Path, state: dict, given=None) -> tuple[Tokenizer, str]:
    """The tokenizer of checkpoint ``path`` and where it was found: ``given`` (a file the
    reader names), else the one inside, else the run folder's ``spm.model`` beside it,
    which only a recorded fingerprint can vouch for."""
    if given is not None:
        if isinstance(given, Tokenizer):
            return given, "the tokenizer handed in"
        return Tokenizer.load(given), str(given)
    if "tokenizer" in state:
        try:
            return (Tokenizer.from_serialized(bytes(state["tokenizer"])),
                    f"the tokenizer inside {path}")
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"{path}: its 'tokenizer' entry is not a SentencePiece "
                                  f"model ({exc})") from None
    folder = path.resolve().parent
    for candidate in (folder / "spm.model", folder.parent / "spm.model"):  # run/, run/checkpoints/
        if candidate.is_file():
            if "vocabulary" not in state:    # a vocabulary of the same size may be foreign
                raise CheckpointError(
                    f"{path} carries neither its tokenizer nor its vocabulary's "
                    f"fingerprint, so nothing shows that {candidate} is the vocabulary it "
                    f"was trained with: if it is, say so with --tokenizer {candidate}")
            return Tokenizer.load(candidate), str(candidate)
    raise CheckpointError(f"{path} carries no tokenizer and no spm.model lies beside it "
                          f"(give the run's vocabulary with --tokenizer FILE)")


def model_config(path: str | os.PathLike, state: dict) -> ModelConfig:
    """The :class:`~transformer.config.ModelConfig` a checkpoint's ``model_config`` holds;
    a missing entry, or a field of the wrong type or range, raises
    :class:`~transformer.checkpoint.CheckpointError` naming the file and the field."""
    if not isinstance(state.get("model_config"), dict):
        raise CheckpointError(f"{path} has no model_config: not a checkpoint of this package")
    try:
        return ModelConfig.from_dict(state["model_config"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: model_config is not usable: {exc}") from None


def load_model(path: str | os.PathLike, device: str | torch.device = "cpu",
               tokenizer: str | os.PathLike | Tokenizer | None = None
               ) -> tuple[FastTransformer, Tokenizer]:
    """A trained model (in eval mode, on ``device``) and its tokenizer, from a checkpoint.

    The tokenizer is ``tokenizer`` when given (a file or a :class:`Tokenizer`), else the
    one stored in the checkpoint, else the run folder's ``spm.model``. Raises
    :class:`~transformer.checkpoint.CheckpointError` naming the file when it is not a
    checkpoint, its configuration holds a value of the wrong type or range, its weights do
    not fit its configuration, or the tokenizer is not the one the model was trained with
    (:func:`~transformer.tokenizer.same_vocabulary` with the checkpoint's record). A
    checkpoint that records neither its tokenizer nor a fingerprint (written by an older
    version) loads only with ``tokenizer`` given: the reader vouches for it, since a
    vocabulary of the same size can be another one (it translated to "T T T ...").
    """
    path = Path(path)
    device = resolve_device(device)
    state = load_checkpoint(path, map_location=device)
    cfg = model_config(path, state)
    model = FastTransformer(cfg)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[0][:200]
        raise CheckpointError(f"{path}: its weights do not fit its model_config "
                              f"({reason})") from None
    model.to(device).eval()
    tokenizer, source = _tokenizer_for(path, state, tokenizer)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise CheckpointError(f"tokenizer and model do not match: {source} has "
                              f"{tokenizer.vocab_size} pieces but the model in {path} has a "
                              f"vocabulary of {cfg.vocab_size}")
    check_vocabulary(path, state, tokenizer, source)     # the same size is not enough
    return model, tokenizer
