"""Subword tokenizer: one SentencePiece BPE vocabulary shared by source and target.

Section 5.1: "Sentences were encoded using byte-pair encoding, which has a shared
source-target vocabulary of about 37000 tokens." One vocabulary is what lets the model
tie its source embedding, target embedding and pre-softmax weights (section 3.4).

Whether two things hold the same vocabulary (a checkpoint, a run folder, a prepared corpus,
an ablation table) is decided by one function, :func:`same_vocabulary`, on one
fingerprint, :func:`vocabulary_fingerprint`: the SHA-256 of the serialized model,
spelt ``sha256:<hex>``. A vocabulary of the same size can be another one.

Special ids match ``transformer.config``: PAD=0, BOS=1, EOS=2, UNK=3. ``encode`` adds no
BOS/EOS; :func:`transformer.batching.collate` adds them. Text is normalised with
SentencePiece's default ``nmt_nfkc`` rule (Unicode NFKC, whitespace collapsed), so
``decode(encode(s)) == s`` holds for ordinary, whitespace-normalised sentences.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

from .config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from .errors import InputError
from .output import write_output

_FINGERPRINT = re.compile(r"^sha256:[0-9a-f]{64}$")


class Tokenizer:
    """A loaded SentencePiece model; build one with :meth:`train` or :meth:`load`."""

    def __init__(self, processor: spm.SentencePieceProcessor, path: str | os.PathLike = ""):
        self.sp = processor
        self.path = Path(path) if path else None
        expected = {"pad": PAD_ID, "bos": BOS_ID, "eos": EOS_ID, "unk": UNK_ID}
        found = {"pad": processor.pad_id(), "bos": processor.bos_id(),
                 "eos": processor.eos_id(), "unk": processor.unk_id()}
        if found != expected:
            raise InputError(f"tokenizer {path or ''} has special ids {found}; this project "
                             f"needs {expected} (see transformer/config.py)")
        self._specials = {PAD_ID, BOS_ID, EOS_ID}

    # ------------------------------------------------------------------ building
    @classmethod
    def train(cls, texts: Iterable[str], model_path: str | os.PathLike, vocab_size: int = 8000,
              seed: int = 0, **options) -> "Tokenizer":
        """Learn a BPE vocabulary from ``texts`` (source and target sentences together).

        Deterministic: the same texts, vocab_size and options give a byte-identical model
        file. SentencePiece's BPE trainer draws no random numbers when it reads every
        sentence (``input_sentence_size=0``); ``num_threads`` only changes the copy of the
        options stored in the file, so it is fixed to 1. ``seed`` seeds SentencePiece's
        generator for any option that samples. Extra ``options`` go to the trainer.
        """
        sentences = (line for line in texts if line and line.strip())
        model = io.BytesIO()
        spm.set_random_generator_seed(seed)
        settings = dict(model_type="bpe", vocab_size=vocab_size, character_coverage=1.0,
                        pad_id=PAD_ID, bos_id=BOS_ID, eos_id=EOS_ID, unk_id=UNK_ID,
                        pad_piece="<pad>", bos_piece="<s>", eos_piece="</s>",
                        unk_piece="<unk>", num_threads=1, input_sentence_size=0,
                        shuffle_input_sentence=False, minloglevel=2)
        settings.update(options)
        spm.SentencePieceTrainer.train(sentence_iterator=sentences, model_writer=model,
                                       **settings)
        return cls.load(write_output(model_path, model.getvalue()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """Load a model file written by :meth:`train`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"tokenizer model not found: {path} "
                                    f"(train one with Tokenizer.train)")
        processor = spm.SentencePieceProcessor()
        try:
            processor.load(str(path))
        except (OSError, RuntimeError) as e:
            raise InputError(f"{path} is not a valid SentencePiece model: {e}") from None
        return cls(processor, path)

    def serialized(self) -> bytes:
        """The model file's bytes, to store inside a checkpoint."""
        return self.sp.serialized_model_proto()

    @property
    def fingerprint(self) -> str:
        """This vocabulary's :func:`vocabulary_fingerprint`."""
        return vocabulary_fingerprint(self)

    @classmethod
    def from_serialized(cls, model: bytes) -> "Tokenizer":
        """The inverse of :meth:`serialized`."""
        try:
            processor = spm.SentencePieceProcessor(model_proto=bytes(model))
        except (OSError, RuntimeError) as e:
            raise InputError(f"bytes are not a valid SentencePiece model: {e}") from None
        return cls(processor)

    # ------------------------------------------------------------------ properties
    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def pad_id(self) -> int:
        return self.sp.pad_id()

    @property
    def bos_id(self) -> int:
        return self.sp.bos_id()

    @property
    def eos_id(self) -> int:
        return self.sp.eos_id()

    @property
    def unk_id(self) -> int:
        return self.sp.unk_id()

    # ------------------------------------------------------------------ text <-> ids
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without BOS or EOS."""
        return self.sp.encode(text, out_type=int)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of every text."""
        return self.sp.encode(list(texts), out_type=int)

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenised text; PAD, BOS and EOS ids are skipped (accepts a 1-d tensor too)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return self.sp.decode([int(i) for i in ids if i not in self._specials])

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """:meth:`decode` of every id list (or of the rows of a 2-d tensor)."""
        if hasattr(batch, "tolist"):
            batch = batch.tolist()
        return [self.decode(ids) for ids in batch]

    def pieces(self, text: str) -> list[str]:
        """The subword pieces of ``text`` (``"▁"`` marks a preceding space)."""
        return self.sp.encode(text, out_type=str)

    def id_to_piece(self, token_id: int) -> str:
        """The subword piece of one id (``"<pad>"``, ``"▁Ein"``, ...)."""
        return self.sp.id_to_piece(int(token_id))

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, path={str(self.path)!r})"


def vocabulary_fingerprint(vocabulary: "Tokenizer | bytes | str") -> str:
    """``sha256:`` and the SHA-256 of a serialized SentencePiece model: of a
    :class:`Tokenizer`, of the model's bytes (an ``spm.model`` file's), or a fingerprint
    already recorded (``sha256:<hex>``), given back as it is. ValueError for a string that
    is none."""
    if isinstance(vocabulary, str):
        if not _FINGERPRINT.match(vocabulary):
            raise InputError(f"{vocabulary!r} is not a vocabulary fingerprint (sha256:<hex>)")
        return vocabulary
    model = vocabulary.serialized() if isinstance(vocabulary, Tokenizer) else bytes(vocabulary)
    return "sha256:" + hashlib.sha256(model).hexdigest()


def same_vocabulary(a: "Tokenizer | bytes | str", b: "Tokenizer | bytes | str") -> bool:
    """Whether ``a`` and ``b`` (each a :class:`Tokenizer`, a model's bytes, or a recorded
    fingerprint) are the same vocabulary: the one test of it in the package."""
    return vocabulary_fingerprint(a) == vocabulary_fingerprint(b)
