"""Section 5: training.

Adam with beta1=0.9, beta2=0.98, eps=1e-9 (5.3), the warm-up schedule of equation (3),
label smoothing 0.1 and residual dropout (5.4), batches of about ``update_tokens``
target tokens built by length bucketing and gradient accumulation (5.1). The same
entry point runs on one CPU, one GPU, or several GPUs under ``torchrun``
(DistributedDataParallel, one process per GPU).

A run lives in one folder::

    run/spm.model          shared BPE vocabulary (trained on the training split)
    run/run.json           the model and training configuration
    run/checkpoints/       step_<update>.pt, the last ``keep_last`` kept
    run/metrics.jsonl      one JSON object per logged update / evaluation
    run/average.pt         mean of the last checkpoints (written at the end)

Running the same command again resumes from the newest complete checkpoint; on CPU
with the same seed the losses then equal those of an uninterrupted run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from .batching import BatchIterator
from .checkpoint import (CheckpointError, average_checkpoints, load_checkpoint,
                         prune_checkpoints, save_checkpoint, step_checkpoints)
from .config import ModelConfig
from .data import load_corpus
from .loss import LabelSmoothingLoss
from .model import Transformer
from .schedule import noam_lr
from .tokenizer import Tokenizer


class TrainingError(RuntimeError):
    pass


@dataclass
class TrainConfig:
    out_dir: str = "runs/small"
    corpus: str = "multi30k-en-de"       # folder under the data dir, or a path
    direction: str = "en-de"
    data_root: str | None = None         # default: $TRANSFORMER_DATA
    preset: str = "small"
    model_overrides: dict = field(default_factory=dict)
    vocab_size: int = 8000
    max_tokens: int = 4096               # tokens per micro-batch (source or target, padded)
    update_tokens: int = 4096            # target tokens per update (accumulation)
    max_updates: int = 0                 # 0: no limit
    max_epochs: int = 0                  # 0: no limit
    time_limit_min: float = 0.0          # 0: no limit; wall-clock training time
    warmup: int = 4000
    lr_factor: float = 1.0
    label_smoothing: float = 0.1
    seed: int = 1
    precision: str = "auto"              # auto | fp32 | bf16 | fp16
    compile: bool = False
    threads: int = 0                     # 0: torch's default
    log_every: int = 10
    eval_every: int = 0                  # updates; 0: at the end only
    eval_bleu_sentences: int = 200       # greedy BLEU on this many validation pairs
    save_every: int = 200                # updates
    keep_last: int = 5
    max_len: int = 128                   # drop training pairs longer than this (tokens)
    device: str = "auto"
    progress: bool = True

    def __post_init__(self):
        if self.precision not in ("auto", "fp32", "bf16", "fp16"):
            raise ValueError(f"TrainConfig.precision must be auto, fp32, bf16 or fp16, "
                             f"got {self.precision!r}")
        for name in ("max_tokens", "update_tokens", "warmup", "vocab_size", "save_every",
                     "keep_last", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainConfig.{name} must be positive, got {getattr(self, name)}")

    def model_config(self, vocab_size: int) -> ModelConfig:
        return ModelConfig.from_preset(self.preset, vocab_size=vocab_size, **self.model_overrides)


# ----------------------------------------------------------------- helpers
def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision != "auto":
        if precision == "fp16" and device.type != "cuda":
            raise ValueError("fp16 with loss scaling needs a CUDA device; use bf16 on CPU")
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16"


@contextlib.contextmanager
def autocast(device: torch.device, precision: str):
    """Mixed precision for the forward pass (master weights stay fp32).

    On CPU in bf16, PyTorch's "math" attention kernel has a 2-3x faster backward than
    the fused CPU kernel (measured in benchmarks/train_throughput.py), so it is chosen.
    """
    if precision == "fp32":
        yield
        return
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.autocast(device.type, dtype=dtype))
        if device.type == "cpu":
            from torch.nn.attention import SDPBackend, sdpa_kernel
            stack.enter_context(sdpa_kernel(SDPBackend.MATH))
        yield


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9), section 5.3; lr is set every step.

    ``fused=True`` updates all parameters in one kernel (about 10x faster than the
    per-tensor loop on a CPU; same maths).
    """
    return torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9,
                            fused=True)


class SequenceLoss(torch.nn.Module):
    """Summed label-smoothed loss of a batch: the module DDP and torch.compile wrap.

    Projects only the non-pad target positions onto the vocabulary: the pre-softmax
    matrix multiply is the largest in a small model, and pad rows would be thrown away.
    The projection and the loss run fused, chunk by chunk (``LabelSmoothingLoss.from_states``).
    """

    def __init__(self, model: Transformer, criterion: LabelSmoothingLoss):
        super().__init__()
        self.model, self.criterion = model, criterion

    def forward(self, src, tgt_in, tgt_out):
        model = self.model
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        keep = tgt_out != self.criterion.pad_id
        states = model.decode_states(tgt_in, memory, src_mask, rows=keep)   # (n_tokens, d)
        return self.criterion.from_states(states, model.output_weight, tgt_out[keep])


class _Distributed:
    """What this process is under torchrun (or a single process)."""

    def __init__(self, device_name: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1:
            local = int(os.environ.get("LOCAL_RANK", "0"))
            if torch.cuda.is_available() and device_name in ("auto", "cuda"):
                torch.cuda.set_device(local)
                self.device = torch.device("cuda", local)
                backend = "nccl"
            else:
                self.device = torch.device("cpu")
                backend = "gloo"
            if not dist.is_initialized():
                dist.init_process_group(backend)
        else:
            self.device = resolve_device(device_name)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, value: float) -> float:
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.item()

    def barrier(self):
        if self.world > 1:
            dist.barrier()


# ------------------------------------------------------------------ trainer
class Trainer:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.out = Path(cfg.out_dir)
        self.ckpt_dir = self.out / "checkpoints"
        self.dist = _Distributed(cfg.device)
        self.device = self.dist.device
        self.precision = resolve_precision(cfg.precision, self.device)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self._check_run_folder()
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)

        train = load_corpus(cfg.corpus, "train", cfg.direction, cfg.data_root)
        self.valid = load_corpus(cfg.corpus, "valid", cfg.direction, cfg.data_root)
        self.tokenizer = self._tokenizer(train)
        tok = self.tokenizer
        self.train_iter = BatchIterator(tok.encode_batch(train.src), tok.encode_batch(train.tgt),
                                        cfg.max_tokens, seed=cfg.seed, max_len=cfg.max_len,
                                        pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
        self.valid_iter = BatchIterator(tok.encode_batch(self.valid.src),
                                        tok.encode_batch(self.valid.tgt), cfg.max_tokens,
                                        shuffle=False, pad_id=tok.pad_id, bos_id=tok.bos_id,
                                        eos_id=tok.eos_id)
        self.model_cfg = cfg.model_config(tok.vocab_size)
        self.model = Transformer(self.model_cfg).to(self.device)
        self.optimizer = make_optimizer(self.model)
        self.criterion = LabelSmoothingLoss(cfg.label_smoothing, tok.pad_id)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.accum = max(1, round(cfg.update_tokens / cfg.max_tokens / self.dist.world))
        self.step = 0                # completed updates
        self.train_seconds = 0.0     # wall-clock time spent training, across resumes
        self.loss_module = SequenceLoss(self.model, self.criterion)
        self.train_model = self.loss_module
        if self.dist.world > 1:
            self.train_model = torch.nn.parallel.DistributedDataParallel(
                self.loss_module,
                device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.resumed_from = self._resume()
        if cfg.compile:
            self.train_model = torch.compile(self.train_model)

    # -------------------------------------------------------------- set-up
    def _check_run_folder(self):
        run_file = self.out / "run.json"
        mine = {k: v for k, v in dataclasses.asdict(self.cfg).items()
                if k not in ("progress", "device", "threads", "time_limit_min", "max_updates",
                             "max_epochs", "eval_every", "eval_bleu_sentences", "log_every")}
        if run_file.exists():
            theirs = json.loads(run_file.read_text())["train"]
            differ = {k: (theirs.get(k), v) for k, v in mine.items() if theirs.get(k) != v}
            if differ:
                raise TrainingError(f"{self.out} holds a run with different settings "
                                    f"{differ} (old, new): use another --out folder")
        elif self.dist.main:
            self.out.mkdir(parents=True, exist_ok=True)
            run_file.write_text(json.dumps({"train": mine}, indent=1))

    def _tokenizer(self, train) -> Tokenizer:
        path = self.out / "spm.model"
        if not path.exists() and self.dist.main:
            Tokenizer.train(list(train.src) + list(train.tgt), path,
                            vocab_size=self.cfg.vocab_size, seed=self.cfg.seed)
        self.dist.barrier()
        return Tokenizer.load(path)

    def _resume(self) -> Path | None:
        for path in reversed(step_checkpoints(self.ckpt_dir)):
            try:
                state = load_checkpoint(path, map_location=self.device)
            except CheckpointError as exc:
                warnings.warn(f"skipping {exc}")
                continue
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.train_iter.load_state_dict(state["batches"])
            self.step, self.train_seconds = state["step"], state["train_seconds"]
            torch.set_rng_state(state["rng"]["torch"].cpu())
            if self.device.type == "cuda" and "cuda" in state["rng"]:
                torch.cuda.set_rng_state(state["rng"]["cuda"].cpu())
            random.setstate(_python_rng_from_list(state["rng"]["python"]))
            if self.scaler is not None and "scaler" in state:
                self.scaler.load_state_dict(state["scaler"])
            self._truncate_metrics(self.step)
            return path
        return None

    # -------------------------------------------------------------- saving
    def checkpoint_state(self) -> dict:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "batches": self.train_iter.state_dict(),
            "step": self.step,
            "train_seconds": self.train_seconds,
            "rng": {"torch": torch.get_rng_state(), "python": _python_rng_to_list()},
            "model_config": self.model_cfg.to_dict(),
            "train_config": dataclasses.asdict(self.cfg),
            "tokenizer": self.tokenizer.serialized(),
        }
        if self.device.type == "cuda":
            state["rng"]["cuda"] = torch.cuda.get_rng_state()
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def save(self) -> Path | None:
        if not self.dist.main:
            return None
        path = save_checkpoint(self.checkpoint_state(), self.ckpt_dir / f"step_{self.step:07d}.pt")
        prune_checkpoints(self.ckpt_dir, self.cfg.keep_last)
        return path

    def average(self) -> Path | None:
        """Average the kept checkpoints into run/average.pt (section 6.1)."""
        paths = step_checkpoints(self.ckpt_dir)[-self.cfg.keep_last:]
        if not paths or not self.dist.main:
            return None
        return save_checkpoint(average_checkpoints(paths), self.out / "average.pt")

    # ------------------------------------------------------------- metrics
    def log(self, record: dict) -> None:
        if self.dist.main:
            with open(self.out / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")

    def _truncate_metrics(self, step: int) -> None:
        path = self.out / "metrics.jsonl"
        if self.dist.main and path.exists():
            lines = [ln for ln in path.read_text().splitlines()
                     if ln.strip() and json.loads(ln)["step"] <= step]
            path.write_text("".join(ln + "\n" for ln in lines))

    # ------------------------------------------------------------ training
    def lr(self, step: int) -> float:
        return noam_lr(step, self.model_cfg.d_model, self.cfg.warmup, self.cfg.lr_factor)

    def next_micro_batches(self, batches):
        """The micro-batches of the next update, from the iterator ``batches``.

        Takes ``accum * world`` batches; returns this rank's share and the number of
        target tokens in all of them (the update's loss is divided by that).
        """
        group = []
        for _ in range(self.accum * self.dist.world):
            try:
                group.append(next(batches))
            except StopIteration:
                break
        return group[self.dist.rank::self.dist.world], sum(b.n_tgt_tokens for b in group)

    def train_update(self, micro_batches, n_tokens_global: int) -> float:
        """One optimizer update from this rank's micro-batches; returns the mean loss."""
        model = self.train_model
        model.train()
        loss_sum = 0.0
        for i, batch in enumerate(micro_batches):
            batch = batch.to(self.device, non_blocking=True)
            last = i == len(micro_batches) - 1
            ctx = model.no_sync() if self.dist.world > 1 and not last else contextlib.nullcontext()
            with ctx, autocast(self.device, self.precision):
                loss = model(batch.src, batch.tgt_in, batch.tgt_out)
            scaled = loss * (self.dist.world / n_tokens_global)
            (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            loss_sum += loss.item()
        mean_loss = self.dist.sum(loss_sum) / n_tokens_global
        if not math.isfinite(mean_loss):
            last = step_checkpoints(self.ckpt_dir)
            raise TrainingError(
                f"loss is {mean_loss} at update {self.step + 1}: training stopped; the last "
                f"good checkpoint is {last[-1] if last else '(none written yet)'}. Lower "
                f"--lr-factor or use fp32/bf16 precision.")
        lr = self.lr(self.step + 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return mean_loss

    def fit(self) -> dict:
        cfg = self.cfg
        bar = None
        if cfg.progress and self.dist.main:
            from tqdm.auto import tqdm
            bar = tqdm(total=cfg.max_updates or None, initial=self.step, unit="upd",
                       dynamic_ncols=True)
        start, window_tokens, window_start = time.perf_counter(), 0, time.perf_counter()
        base_seconds = self.train_seconds
        stop = False
        losses = []
        while not stop:
            if cfg.max_epochs and self.train_iter.epoch >= cfg.max_epochs:
                break
            batches = iter(self.train_iter)
            while True:
                if cfg.max_updates and self.step >= cfg.max_updates:
                    stop = True
                    break
                if cfg.time_limit_min and self.train_seconds >= cfg.time_limit_min * 60:
                    stop = True
                    break
                micro, n_tokens = self.next_micro_batches(batches)
                if not micro:
                    break
                loss = self.train_update(micro, n_tokens)
                losses.append(loss)
                self.train_seconds = base_seconds + time.perf_counter() - start
                window_tokens += n_tokens
                if self.step % cfg.log_every == 0:
                    now = time.perf_counter()
                    tps = window_tokens / (now - window_start)
                    window_tokens, window_start = 0, now
                    record = {"step": self.step, "loss": loss, "lr": self.lr(self.step),
                              "tokens_per_s": tps, "epoch": self.train_iter.epoch,
                              "elapsed_s": self.train_seconds}
                    self.log(record)
                    if bar is not None:
                        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{record['lr']:.2e}",
                                        tok_s=f"{tps:,.0f}")
                if bar is not None:
                    bar.update(1)
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.log({"step": self.step, **self.evaluate()})
                if self.step % cfg.save_every == 0:
                    self.save()
            if cfg.max_epochs and self.train_iter.epoch >= cfg.max_epochs:
                stop = True
        if bar is not None:
            bar.close()
        if not step_checkpoints(self.ckpt_dir) or step_checkpoints(self.ckpt_dir)[-1].name != \
                f"step_{self.step:07d}.pt":
            self.save()
        final = self.evaluate()
        self.log({"step": self.step, **final, "final": True})
        self.average()
        self.dist.barrier()
        return {"step": self.step, "train_seconds": self.train_seconds, **final}

    # ---------------------------------------------------------- evaluation
    @torch.no_grad()
    def evaluate(self) -> dict:
        """Validation loss (label-smoothed, per token) and greedy BLEU on a subset."""
        self.model.eval()
        total, tokens = 0.0, 0
        for batch in self.valid_iter.batches(0):
            batch = self.valid_iter.collate(batch).to(self.device)
            with autocast(self.device, self.precision):
                total += self.loss_module(batch.src, batch.tgt_in, batch.tgt_out).item()
            tokens += batch.n_tgt_tokens
        result = {"valid_loss": total / max(tokens, 1)}
        n = self.cfg.eval_bleu_sentences
        if n and self.dist.main:
            from .decoding import translate
            from .evaluate import score
            hyps = translate(self.model, self.tokenizer, self.valid.src[:n], beam_size=1,
                             device=self.device)
            result["valid_bleu"] = score(hyps, self.valid.tgt[:n])["bleu"]
        self.model.train()
        return result


def _python_rng_to_list():
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _python_rng_from_list(state):
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


def load_model(path: str | os.PathLike, device="cpu") -> tuple[Transformer, Tokenizer]:
    """A trained model (eval mode) and its tokenizer from a checkpoint file."""
    state = load_checkpoint(path, map_location=device)
    model = Transformer(ModelConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    model.to(device).eval()
    tokenizer = (Tokenizer.from_serialized(state["tokenizer"]) if "tokenizer" in state
                 else Tokenizer.load(Path(path).resolve().parent / "spm.model"))
    return model, tokenizer
