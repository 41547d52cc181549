"""The settings of a training run (section 5), declared once with their help and roles.

Every field of :class:`TrainConfig` carries its metadata:

* ``help``: the text ``python -m transformer train --help`` shows (the command line is
  generated from these fields, see :mod:`transformer.tools.cli`);
* ``run``: the field defines the run. A run folder stores these (``run.json``); resuming
  with a different value is refused, because the result would be neither run;
* ``result``: the field changes what the run produces (weights, metrics) without defining
  it, e.g. ``max_updates`` (a run may be extended) or ``threads`` (float rounding). The
  book's cache key hashes the ``run`` and ``result`` fields; fields with neither say where
  things live (``out_dir``, ``data_root``) or how the run is shown (``progress``);
* optional ``choices``, ``min``, ``max`` and ``below`` (a bound the value stays under):
  checked by :class:`TrainConfig` itself and by the command line, whose ``--help`` states
  them (:func:`bounds_text`); they are the values the code accepts, so a run never fails
  on one after its folder was made. ``flag``: the command-line name when it is not the
  field's name.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

from ..config import PRESETS, ModelConfig
from ..corpora.spec import CorpusSpec
from ..data import DIRECTIONS
from ..errors import InputError, UserError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# The smallest vocabulary any text allows: SentencePiece's four special pieces, the word
# boundary "▁" and one character.
MIN_VOCABULARY = 6
# The largest seed every generator a run seeds takes (SentencePiece's is 32-bit).
MAX_SEED = 2**32 - 1


class TrainingError(UserError, RuntimeError):
    """A run cannot start or go on: bad data, a foreign run folder, a diverged loss.

    The message names the file or setting at fault; the command line prints it as one
    line (no traceback).
    """


class LossDiverged(TrainingError):
    """The training loss became inf or NaN (a result of the settings, e.g. a study row)."""


def setting(default=dataclasses.MISSING, *, help: str, run: bool, result: bool | None = None,
            default_factory=dataclasses.MISSING, **extra):
    """A :class:`TrainConfig` field with its metadata (see the module docstring)."""
    metadata = {"help": help, "run": run, "result": run if result is None else result, **extra}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class TrainConfig:
    """Everything one training run needs (section 5); the command line mirrors its fields.

    Adam and the schedule of equation (3) (section 5.3), label smoothing and dropout (5.4),
    token-bucketed batches with gradient accumulation (5.1), checkpoint averaging (6.1).
    Invalid values raise ``ValueError`` naming the field and its flag.
    """

    out_dir: str = setting(
        "runs/small", flag="out", run=False, result=False,
        help="run folder: vocabulary (spm.model), run.json, checkpoints/, metrics.jsonl, "
             "average.pt; running the same command again resumes the run in it")
    corpus: str = setting(
        "multi30k-en-de", run=True,
        help="a folder under the data dir (multi30k-en-de, tatoeba-en-de), a path to a folder "
             "holding {train,valid,test}.{src,tgt}[.gz], a folder written by `prepare`, or "
             "wmt14 (Hugging Face datasets; prepared on first use)")
    direction: str = setting("en-de", run=True, choices=DIRECTIONS,
                             help="translation direction (the files hold English as source)")
    data_root: str | None = setting(
        None, run=False, result=False,
        help="the data dir holding the corpus folders, where a corpus the project knows is "
             "fetched on first use (default: $TRANSFORMER_DATA, else ~/.cache/transformer/data)")
    preset: str = setting("small", run=True, choices=tuple(sorted(PRESETS)),
                          help="model size: tiny (the 30-minute CPU recipe), small (CPU), "
                               "base or big (Table 3)")
    model_overrides: dict = setting(
        default_factory=dict, flag="model", run=True,
        help="override a ModelConfig field, FIELD=VALUE (repeatable), e.g. "
             "--model norm_position=pre --model n_heads=4")
    vocab_size: int = setting(8000, run=True, min=MIN_VOCABULARY,
                              help="size of the shared source-target BPE vocabulary (5.1; "
                                   "paper: 37000)")
    max_tokens: int = setting(4096, run=True, min=1,
                              help="padded tokens per micro-batch, source or target")
    update_tokens: int = setting(4096, run=True, min=1,
                                 help="target tokens per update, reached by gradient "
                                      "accumulation (5.1; paper: 25000)")
    max_updates: int | None = setting(None, run=False, result=True, min=1,
                                      help="stop after this many updates (default: no limit)")
    max_epochs: int = setting(0, run=False, result=True, min=0,
                              help="stop after this many epochs (0: no limit)")
    time_limit_min: float = setting(0.0, run=False, result=True, min=0,
                                    help="stop after this many minutes of training wall "
                                         "time, summed over resumes (0: no limit)")
    warmup: int = setting(4000, run=True, min=1,
                          help="warm-up updates of the learning rate, eq. (3) (5.3)")
    lr_schedule: str = setting(
        "noam", run=True, choices=("noam", "no-warmup"),
        help="noam: equation (3), linear warm-up then inverse-square-root decay; no-warmup: "
             "its peak rate from the first update, then the same decay (a study)")
    cooldown: int = setting(0, run=True, min=0,
                            help="end the schedule with a linear fall towards zero over this "
                                 "many updates up to --cooldown-end; training stops there "
                                 "(0: none; not in the paper)")
    cooldown_end: int = setting(0, run=True, min=0,
                                help="the update at which the cool-down ends and training "
                                     "stops (with --cooldown)")
    optimizer: str = setting(
        "adam", run=True, choices=("adam", "muon"),
        help="adam: Adam(0.9, 0.98, 1e-9) (5.3); muon: Muon for the encoder and decoder "
             "layers' matrices, Adam for the rest (not in the paper; make train-tiny)")
    lr_factor: float = setting(1.0, run=True, min=0,
                               help="multiplies the learning rate of eq. (3)")
    label_smoothing: float = setting(0.1, run=True, min=0, below=1,
                                     help="label smoothing epsilon_ls (5.4)")
    seed: int = setting(1, run=True, min=0, max=MAX_SEED,
                        help="seed of the initial weights, dropout and batch order")
    precision: str = setting(
        "auto", run=True, choices=PRECISIONS,
        help="fp32; bf16 autocast; fp16 autocast with loss scaling; auto: on a GPU bf16 "
             "where it has native bf16 (compute capability 8.0 and up), else fp16 (a T4, a "
             "V100); on a CPU bf16 where it has AVX512-BF16 or AMX, else fp32")
    compile: bool = setting(
        False, run=False, result=True,
        help="torch.compile each encoder and decoder layer, sizes dynamic: one compilation "
             "(a minute or so at the start) serves every batch shape "
             "(benchmarks/cpu/compile_speed.py)")
    threads: int = setting(0, run=False, result=True, min=0,
                           help="torch CPU threads (0: torch's default)")
    adapt_threads: bool = setting(
        True, run=False, result=True,
        help="on a CPU, use fewer threads while other processes keep cores busy, back up "
             "to --threads when they are free (transformer/training/threads.py); off: a "
             "fixed count, for bit-for-bit comparisons of runs")
    log_every: int = setting(10, run=False, result=True, min=1,
                             help="log the training loss every this many updates")
    eval_every: int = setting(0, run=False, result=True, min=0,
                              help="validate every this many updates (0: at the end only)")
    eval_bleu_sentences: int = setting(200, run=False, result=True, min=0,
                                       help="greedy BLEU on this many validation pairs at "
                                            "each validation (0: none)")
    save_every: int = setting(200, run=True, min=1,
                              help="write a checkpoint every this many updates")
    keep_last: int = setting(5, run=True, min=1,
                             help="checkpoints kept, averaged into average.pt at the end (6.1)")
    max_len: int = setting(128, run=True, min=2,
                           help="skip training pairs longer than this many tokens, the "
                                "end-of-sentence token counted (so a pair needs at least 2)")
    device: str = setting("auto", run=False, result=True,
                          help="auto (CUDA when available), cpu, cuda or cuda:N (under "
                               "torchrun, train gives each process its local GPU)")
    progress: bool = setting(True, run=False, result=False, help="show a progress bar")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            check_value(f, getattr(self, f.name))
        if not isinstance(self.model_overrides, dict):
            raise InputError(f"TrainConfig.model_overrides must be a dict, got "
                             f"{type(self.model_overrides).__name__}")
        if (self.cooldown > 0) != (self.cooldown_end > 0) or self.cooldown_end < self.cooldown:
            raise InputError(f"TrainConfig.cooldown (--cooldown) and cooldown_end "
                             f"(--cooldown-end) go together, with cooldown <= cooldown_end; "
                             f"got {self.cooldown} and {self.cooldown_end}")
        self.model_config(self.vocab_size)          # a bad override fails now, not later
        self.corpus_spec                            # and a malformed mixture

    @property
    def corpus_spec(self) -> CorpusSpec:
        """What ``corpus`` names, with ``data_root`` folded in (one parse, one rule)."""
        return CorpusSpec.parse(self.corpus, self.data_root)

    def model_config(self, vocab_size: int) -> ModelConfig:
        """The :class:`ModelConfig` of this run: the preset, the overrides, ``vocab_size``."""
        return ModelConfig.from_preset(self.preset, vocab_size=vocab_size,
                                       **self.model_overrides)


def flag(f: dataclasses.Field) -> str:
    """The command-line option of field ``f``: ``--max-updates`` for ``max_updates``."""
    return "--" + f.metadata.get("flag", f.name.replace("_", "-"))


def check_value(f: dataclasses.Field, value) -> None:
    """Raise ``ValueError`` naming the field and its flag when ``value`` breaks its rules."""
    where = f"TrainConfig.{f.name} ({flag(f)})"
    if value is None and f.default is None:          # an optional setting left unset
        return
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise InputError(f"{where} must be one of {', '.join(choices)}, got {value!r}")
    bounds = field_bounds(f)
    if any(b is not None for b in bounds):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{where} must be a number, got {value!r}")
        problem = out_of_bounds(value, *bounds)
        if problem:
            raise InputError(f"{where} {problem}")


def field_bounds(f: dataclasses.Field) -> tuple:
    """``(min, max, below)`` of field ``f`` (None where it has none)."""
    return tuple(f.metadata.get(k) for k in ("min", "max", "below"))


def out_of_bounds(value, low=None, high=None, below=None) -> str | None:
    """``must be >= LOW, got VALUE`` (or ``<= HIGH``, ``< BELOW``, or a finite number)
    when ``value`` breaks the bounds, else None: the rule of a field's ``min``, ``max``
    and ``below``, for :func:`check_value` and the command line's numeric options alike."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if low is not None and value < low:
        return f"must be >= {low}, got {value}"
    if high is not None and value > high:
        return f"must be <= {high}, got {value}"
    if below is not None and value >= below:
        return f"must be < {below}, got {value}"
    return None


def bounds_text(low=None, high=None, below=None) -> str:
    """The bounds as ``--help`` states them, e.g. ``range: >= 0, < 1`` (empty for none)."""
    parts = [f"{sign} {bound}" for sign, bound in ((">=", low), ("<=", high), ("<", below))
             if bound is not None]
    return f"range: {', '.join(parts)}" if parts else ""


def _settings(cfg: TrainConfig, keep) -> dict:
    return {f.name: json.loads(json.dumps(getattr(cfg, f.name)))
            for f in dataclasses.fields(cfg) if keep(f.metadata)}


def run_settings(cfg: TrainConfig) -> dict:
    """The fields that define the run (metadata ``run``): a resume must match them."""
    return _settings(cfg, lambda m: m["run"])


def result_settings(cfg: TrainConfig) -> dict:
    """The fields that change what a run produces (``run`` or ``result``): a cache key."""
    return _settings(cfg, lambda m: m["run"] or m["result"])
