"""Model hyper-parameters: the paper's Table 3 as named presets.

``ModelConfig.base()`` and ``ModelConfig.big()`` are the two rows of Table 3 that the
paper reports on newstest2014; ``ModelConfig.small()`` is this project's CPU preset,
sized to reach real BLEU on Multi30k on two CPU cores in half an hour, and
``ModelConfig.tiny()`` the smaller, faster model of the 30-minute recipe.
Every field the book studies (heads, d_k/d_v, layers, positions, norm placement,
sharing, dropout) is a field here, so a study is ``ModelConfig.base(n_heads=1)``, not a
code change.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .errors import InputError

# Special token ids shared by the model, the tokenizer and the trainer.
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


@dataclass
class ModelConfig:
    """The model's hyper-parameters (Table 3's columns); presets: :meth:`base`, :meth:`big`,
    :meth:`small`. Every value is checked on construction (:meth:`validate`)."""

    vocab_size: int = 8000               # source vocabulary (and target when shared)
    tgt_vocab_size: int | None = None    # None: the target shares the source vocabulary
    d_model: int = 512
    n_heads: int = 8                     # h
    d_k: int | None = None               # per-head query/key size; None: d_model / h
    d_v: int | None = None               # per-head value size; None: d_model / h
    d_ff: int = 2048
    n_encoder_layers: int = 6            # N
    n_decoder_layers: int = 6
    dropout: float = 0.1                 # P_drop: residual and embedding dropout (5.4)
    attention_dropout: float = 0.0       # on the attention weights (not in the paper)
    activation_dropout: float = 0.0      # inside the feed-forward (not in the paper)
    norm_position: str = "post"          # "post" (paper) or "pre" (modern variant)
    positional: str = "sinusoidal"       # "sinusoidal" (3.5) or "learned"
    share_embeddings: bool = True        # tie source, target and pre-softmax weights (3.4)
    max_len: int = 1024                  # rows of the positional table
    layer_norm_eps: float = 1e-5
    pad_id: int = PAD_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID
    unk_id: int = UNK_ID
    extra: dict = field(default_factory=dict, repr=False)  # free-form notes (preset name)

    def __post_init__(self):
        if _positive_int(self.n_heads) and _positive_int(self.d_model):
            if self.d_k is None:
                self.d_k = self.d_model // self.n_heads
            if self.d_v is None:
                self.d_v = self.d_model // self.n_heads
        if self.tgt_vocab_size is None:
            self.tgt_vocab_size = self.vocab_size
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise ``ValueError`` naming the first field whose value cannot work."""
        positive = ("vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_k", "d_v",
                    "d_ff", "n_encoder_layers", "n_decoder_layers", "max_len")
        for name in positive:
            value = getattr(self, name)
            if not _positive_int(value):
                raise InputError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise InputError(f"ModelConfig.d_model={self.d_model} is not divisible by "
                             f"n_heads={self.n_heads}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if not _number(value) or not 0.0 <= value < 1.0:
                raise InputError(f"ModelConfig.{name} must be in [0, 1), got {value!r}")
        if not _number(self.layer_norm_eps) or not 0.0 < self.layer_norm_eps < 1.0:
            raise InputError(f"ModelConfig.layer_norm_eps must be in (0, 1), got "
                             f"{self.layer_norm_eps!r}")
        if not isinstance(self.share_embeddings, bool):
            raise InputError(f"ModelConfig.share_embeddings must be true or false, got "
                             f"{self.share_embeddings!r}")
        if not isinstance(self.extra, dict):
            raise InputError(f"ModelConfig.extra must be a dict, got {self.extra!r}")
        if self.norm_position not in ("post", "pre"):
            raise InputError(f"ModelConfig.norm_position must be 'post' or 'pre', "
                             f"got {self.norm_position!r}")
        if self.positional not in ("sinusoidal", "learned"):
            raise InputError(f"ModelConfig.positional must be 'sinusoidal' or 'learned', "
                             f"got {self.positional!r}")
        if self.share_embeddings and self.tgt_vocab_size != self.vocab_size:
            raise InputError(f"ModelConfig.share_embeddings=True needs one shared vocabulary, "
                             f"got vocab_size={self.vocab_size} and "
                             f"tgt_vocab_size={self.tgt_vocab_size}")
        for name in ("pad_id", "bos_id", "eos_id", "unk_id"):
            value = getattr(self, name)
            if not _int(value) or not 0 <= value < min(self.vocab_size,
                                                                  self.tgt_vocab_size):
                raise InputError(f"ModelConfig.{name}={value!r} is not a token id of the "
                                 f"vocabulary (size {self.vocab_size})")

    # ----------------------------------------------------------------- presets
    @classmethod
    def base(cls, **overrides) -> "ModelConfig":
        """Table 3, row "base": N=6, d_model=512, d_ff=2048, h=8, d_k=d_v=64, P_drop=0.1."""
        return cls.from_preset("base", **overrides)

    @classmethod
    def big(cls, **overrides) -> "ModelConfig":
        """Table 3, row "big": N=6, d_model=1024, d_ff=4096, h=16, d_k=d_v=64, P_drop=0.3."""
        return cls.from_preset("big", **overrides)

    @classmethod
    def small(cls, **overrides) -> "ModelConfig":
        """CPU preset: d_model=256, 3+3 layers, 4 heads, d_ff=1024 (trains on 2 cores)."""
        return cls.from_preset("small", **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "ModelConfig":
        """The 30-minute CPU recipe (``make train-tiny``): Wu et al.'s Transformer-tiny for
        Multi30k (ACL 2021, "Good for Misconceived Reasons": N=4, d_model=128, d_ff=256,
        h=4, P_drop=0.3), with the layer norm before each sub-layer (pre-norm), which
        trains faster at a short budget (chapter 11). The recipe trains it with
        ``dropout=0.2``, chosen on the valid split."""
        return cls.from_preset("tiny", **overrides)

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "ModelConfig":
        """The preset ``name`` ("tiny", "small", "base" or "big") with fields overridden;
        an unknown preset or field raises ``ValueError`` naming it."""
        if name not in PRESETS:
            raise InputError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(overrides) - fields
        if unknown:
            raise InputError(f"unknown ModelConfig field(s) {sorted(unknown)}")
        values = {**PRESETS[name], **overrides}
        values.setdefault("extra", {})
        values["extra"] = {**values["extra"], "preset": name}
        return cls(**values)

    def to_dict(self) -> dict:
        """Plain values, as stored in checkpoints."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        """The inverse of :meth:`to_dict`; unknown keys (from other versions) are ignored.
        A value of the wrong type or range raises ``ValueError`` naming its field."""
        if not isinstance(values, dict):
            raise InputError(f"a model configuration must be a dict, got "
                             f"{type(values).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in fields})


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(value) -> bool:
    return _int(value) and value > 0


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


PRESETS: dict[str, dict] = {
    "base": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6,
                 n_decoder_layers=6, dropout=0.1),
    "big": dict(d_model=1024, n_heads=16, d_ff=4096, n_encoder_layers=6,
                n_decoder_layers=6, dropout=0.3),
    "small": dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3,
                  n_decoder_layers=3, dropout=0.1, max_len=256),
    "tiny": dict(d_model=128, n_heads=4, d_ff=256, n_encoder_layers=4, n_decoder_layers=4,
                 dropout=0.3, norm_position="pre", max_len=256),
}
