"""Section 5: the training loop.

Adam (5.3, :mod:`.adam`), the warm-up schedule of equation (3), label smoothing 0.1
and residual dropout (5.4), batches of about ``update_tokens`` target tokens built by
length bucketing and gradient accumulation (5.1), in the precision :mod:`.precision`
picks. The same entry point runs on one CPU, one GPU, or several GPUs under ``torchrun``
(DistributedDataParallel, one process per GPU; :mod:`.distributed`).

:class:`Trainer` is the update loop: hand it a model, an optimizer and batch iterators
(and, to keep checkpoints and metrics, a :class:`~transformer.training.run_folder.RunFolder`).
:meth:`Trainer.from_config` builds all of that from a :class:`TrainConfig`, as
``python -m transformer train`` does: :func:`~.run_data.load_run_data` reads the corpus, trains
the BPE vocabulary and creates or checks the run folder; then the model and optimizer are
built and the run resumes from its newest complete checkpoint; on CPU with the same seed
the losses then equal those of an uninterrupted run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import time
import warnings
from pathlib import Path

import torch

from ..batching import BatchIterator
from ..checkpoint import recorded_vocabulary, step_file
from ..data import ParallelCorpus
from ..fast import FastLabelSmoothingLoss, FastTransformer, SequenceLoss, compile_layers
from ..schedule import SCHEDULES, with_cooldown
from ..tokenizer import Tokenizer, same_vocabulary
from .config import LossDiverged, TrainConfig, TrainingError
from .distributed import Distributed
from .optimizers import make_optimizer
from .precision import autocast, resolve_precision
from .threads import ThreadGovernor
from .run_data import load_run_data
from .run_folder import RunFolder, run_identity

__all__ = ["Trainer", "DivergenceWatch"]


# ----------------------------------------------------------------- helpers
def _python_rng_to_list():
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _python_rng_from_list(state):
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


class DivergenceWatch:
    """Catches a training loss that has run away without becoming inf or NaN.

    ``--lr-factor 1000`` took a tiny model's loss from 5.9 to 26,183 with every number
    finite, and the run went on writing useless checkpoints. The rule: the training loss,
    smoothed over about ten updates (an exponential moving average), is above twice its
    lowest value so far *and* above ln V, the label-smoothed loss of a uniform guess over
    the V-token vocabulary, for ``PATIENCE`` updates in a row. It never fires on the
    project's recipes: their losses fall smoothly from about ln V (9 for 8,000 pieces, a
    little more at initialisation) to about 2, warm-up bumps move the smoothed loss by
    tenths, and no learning model goes back to doing worse than a uniform guess. While a
    streak lasts the trainer writes no checkpoint (:attr:`healthy`), so the newest one on
    disk is the last good one.
    """

    DECAY, FACTOR, PATIENCE = 0.9, 2.0, 20

    def __init__(self, vocab_size: int):
        self.floor = math.log(vocab_size)
        self.smoothed = self.best = None
        self.streak = 0

    def update(self, loss: float) -> bool:
        """Take the loss of one update; True once the run has diverged."""
        self.smoothed = loss if self.smoothed is None else (
            self.DECAY * self.smoothed + (1 - self.DECAY) * loss)
        self.best = self.smoothed if self.best is None else min(self.best, self.smoothed)
        high = self.smoothed > max(self.FACTOR * self.best, self.floor)
        self.streak = self.streak + 1 if high else 0
        return self.streak >= self.PATIENCE

    @property
    def healthy(self) -> bool:
        """Whether the smoothed loss is where a sound run's is (no streak under way)."""
        return self.streak == 0


# ------------------------------------------------------------------ trainer
class Trainer:
    """The update loop of section 5: micro-batches, accumulation, Adam, eq. (3), logging.

    ``model`` is a :class:`~transformer.fast.FastTransformer` (the loss reads its states),
    ``optimizer`` typically :func:`make_optimizer`, ``train_iter`` and ``valid_iter``
    :class:`~transformer.batching.BatchIterator` s. ``cfg`` supplies the schedule, the
    stopping rules and how often to log, validate and save. With ``run`` the trainer
    writes checkpoints and ``metrics.jsonl`` there (and :meth:`resume` reads them); without
    it, records are only kept in :attr:`records`. ``tokenizer`` and ``valid`` (the
    validation pairs as text) enable greedy BLEU during validation.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 train_iter: BatchIterator, valid_iter: BatchIterator | None = None,
                 cfg: TrainConfig | None = None, *, run: RunFolder | None = None,
                 dist: Distributed | None = None, tokenizer: Tokenizer | None = None,
                 valid: ParallelCorpus | None = None):
        self.cfg = cfg = cfg if cfg is not None else TrainConfig(progress=False)
        self.model, self.optimizer = model, optimizer
        self.model_cfg = model.cfg
        self.train_iter, self.valid_iter = train_iter, valid_iter
        self.run, self.tokenizer, self.valid = run, tokenizer, valid
        self.dist = dist if dist is not None else Distributed.single(
            next(model.parameters()).device)
        self.device = self.dist.device
        self.precision = resolve_precision(cfg.precision, self.device)
        self.criterion = FastLabelSmoothingLoss(cfg.label_smoothing, self.model_cfg.pad_id)
        self.scaler = (torch.amp.GradScaler(self.device.type) if self.precision == "fp16"
                       else None)
        self.accum = max(1, round(cfg.update_tokens / cfg.max_tokens / self.dist.world))
        self.step = 0                # completed updates
        self.train_seconds = 0.0     # wall-clock time spent training, across resumes
        self.records: list[dict] = []    # what log() wrote, this process
        self.resumed_from: Path | None = None
        self.lock = None             # the run folder's lock (from_config), see close()
        self.command = self.recipe = None    # what summary.json names (from_config)
        self.divergence = DivergenceWatch(self.model_cfg.tgt_vocab_size)
        self.loss_module = SequenceLoss(self.model, self.criterion)
        # the negative log-likelihood (no smoothing): validation's perplexity
        self.nll_module = SequenceLoss(self.model,
                                       FastLabelSmoothingLoss(0.0, self.model_cfg.pad_id))
        self.train_model = self.loss_module
        if self.dist.distributed:        # under torchrun, also with one process
            self.train_model = torch.nn.parallel.DistributedDataParallel(
                self.loss_module,
                device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if cfg.compile:
            compile_layers(self.model)       # dynamic shapes: one compilation, any batch
        most = cfg.threads or torch.get_num_threads()
        self.governor = (ThreadGovernor(most) if self.device.type == "cpu" and cfg.adapt_threads
                         and most > 1 else None)

    # -------------------------------------------------------------- set-up
    @classmethod
    def from_config(cls, cfg: TrainConfig, tokenizer: Tokenizer | None = None, *,
                    command: str | None = None, recipe: str | None = None) -> "Trainer":
        """Everything ``python -m transformer train`` does before the first update.

        Checks the settings against the run folder ``cfg.out_dir`` (if it holds a run),
        reads the corpus, trains the BPE vocabulary (or takes ``tokenizer``, or the run's),
        builds the iterators, the model (:class:`~transformer.fast.FastTransformer`) and the
        optimizer, writes the run folder (only now, when every check has passed) and
        resumes from its newest complete checkpoint. ``command`` and ``recipe``: what
        :meth:`fit`'s ``summary.json`` names as the run's command (default: the ``train``
        command that reproduces ``cfg``) and recipe.
        """
        dist = Distributed(cfg.device)
        resolve_precision(cfg.precision, dist.device)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        run, identity = RunFolder(cfg.out_dir), run_identity(cfg)
        lock = run.lock() if dist.main else None      # one writer; fit() releases it
        try:
            trainer = cls._from_config(cfg, tokenizer, dist, run, identity)
        except BaseException:
            if lock is not None:
                lock.close()
            raise
        trainer.lock, trainer.command, trainer.recipe = lock, command, recipe
        return trainer

    @classmethod
    def _from_config(cls, cfg, tokenizer, dist, run, identity) -> "Trainer":
        data = load_run_data(cfg, dist, run, identity, tokenizer)
        model = FastTransformer(cfg.model_config(data.tokenizer.vocab_size)).to(dist.device)
        precision = resolve_precision(cfg.precision, dist.device)
        trainer = cls(model, make_optimizer(model, cfg.optimizer, precision), data.train_iter,
                      data.valid_iter, cfg, run=run, dist=dist, tokenizer=data.tokenizer,
                      valid=data.valid)
        trainer.resume()
        return trainer

    def resume(self) -> Path | None:
        """Continue from the run folder's newest complete checkpoint, if any.

        Restores weights, optimizer, batch position, update count and random generators,
        and keeps exactly the metrics records written up to that checkpoint (none when
        there is no checkpoint: a fresh start). A checkpoint of another model or
        vocabulary in ``checkpoints/`` raises :class:`TrainingError` naming it.
        """
        if self.run is None:
            return None
        for path, state in self.run.complete_checkpoints(map_location=self.device):
            self._check_own(path, state)
            if state.get("precision", self.precision) != self.precision:
                warnings.warn(f"{path} was trained in {state['precision']}; it resumes in "
                              f"{self.precision} (--precision {self.cfg.precision} on this "
                              f"machine): the rest of the run differs from an unbroken one",
                              RuntimeWarning)
            self.load_checkpoint_state(state)
            if self.dist.main:
                self.run.keep_metrics(self.step)
            self.resumed_from = path
            return path
        if self.dist.main:
            self.run.keep_metrics(None)
        return None

    def _check_own(self, path: Path, state: dict) -> None:
        from ..config import ModelConfig
        problem = None
        recorded = recorded_vocabulary(path, state)
        try:
            theirs = ModelConfig.from_dict(state["model_config"]).to_dict()
        except (KeyError, TypeError, ValueError):
            theirs = None
        if theirs != self.model_cfg.to_dict():
            problem = "its model configuration differs"
        elif self.tokenizer is not None and recorded is not None and \
                not same_vocabulary(recorded, self.tokenizer):
            problem = "its vocabulary differs"
        elif not all(k in state for k in ("optimizer", "batches", "step", "rng")):
            problem = "it holds no training state"
        if problem:
            raise TrainingError(f"{path} is not a checkpoint of the run in {self.run.path} "
                                f"({problem}): move it out of {path.parent} to resume")

    # -------------------------------------------------------------- saving
    def checkpoint_state(self) -> dict:
        """Everything a checkpoint holds: weights, optimizer, batch position, generators,
        configurations, the tokenizer and its fingerprint (which stays when the tokenizer
        is stripped: :func:`~transformer.checkpoint.check_vocabulary`)."""
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "batches": self.train_iter.state_dict(),
            "step": self.step,
            "train_seconds": self.train_seconds,
            "rng": {"torch": torch.get_rng_state(), "python": _python_rng_to_list()},
            "model_config": self.model_cfg.to_dict(),
            "train_config": dataclasses.asdict(self.cfg),
            "precision": self.precision,        # what --precision (auto) resolved to
        }
        if self.tokenizer is not None:
            state["tokenizer"] = self.tokenizer.serialized()
            state["vocabulary"] = self.tokenizer.fingerprint
        if self.device.type == "cuda":
            state["rng"]["cuda"] = torch.cuda.get_rng_state()
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def load_checkpoint_state(self, state: dict) -> None:
        """The inverse of :meth:`checkpoint_state`: continue exactly where it was taken."""
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

    def last_checkpoint_text(self, kind: str = "") -> str:
        """``the last <kind> checkpoint is <path>``, or that none was written yet: for the
        messages of a stopped run."""
        last = self.run.checkpoints() if self.run is not None else []
        if not last:
            return "no checkpoint was written yet"
        return f"the last {kind + ' ' if kind else ''}checkpoint is {last[-1]}"

    def save(self) -> Path | None:
        """Checkpoint the current update into the run folder (rank 0 only)."""
        if self.run is None or not self.dist.main:
            return None
        return self.run.save(self.checkpoint_state(), self.step, self.cfg.keep_last)

    def average(self) -> Path | None:
        """Average the kept checkpoints into run/average.pt (section 6.1)."""
        if self.run is None or not self.dist.main:
            return None
        return self.run.average(self.cfg.keep_last)

    # ------------------------------------------------------------- metrics
    def log(self, record: dict) -> None:
        """Record ``record`` (and append it to the run's metrics.jsonl, rank 0 only)."""
        if self.dist.main:
            self.records.append(record)
            if self.run is not None:
                self.run.log(record)

    # ------------------------------------------------------------ training
    def lr(self, step: int) -> float:
        """The learning rate of update ``step`` (1-based): equation (3), or the schedule
        ``cfg.lr_schedule`` names, with the cool-down ``cfg.cooldown`` at its end."""
        cfg, schedule = self.cfg, SCHEDULES[self.cfg.lr_schedule]
        rate = lambda s: schedule(s, self.model_cfg.d_model, cfg.warmup, cfg.lr_factor)
        return with_cooldown(rate, step, cfg.cooldown, cfg.cooldown_end)

    def time_is_up(self) -> bool:
        """Whether ``cfg.time_limit_min`` minutes of training have passed. Under torchrun
        each rank keeps its own clock and they differ a little: all stop after the same
        update, the first at which any rank's time is up."""
        return self.dist.sum(float(self.train_seconds >= self.cfg.time_limit_min * 60)) > 0

    def next_micro_batches(self, batches):
        """The micro-batches of the next update, from the iterator ``batches``.

        Takes ``accum * world`` batches; returns this rank's share and the number of
        target tokens in all of them (the update's loss is divided by that). Every rank
        draws the same batches and keeps every ``world``-th. At an epoch's end fewer than
        ``world`` batches cannot give every rank one: they are left out (no batches: the
        epoch is over), on every rank alike, so that no rank trains an update alone (its
        gradients would meet another update's of the other ranks).
        """
        group = []
        for _ in range(self.accum * self.dist.world):
            try:
                group.append(next(batches))
            except StopIteration:
                break
        if len(group) < self.dist.world:
            return [], 0
        return group[self.dist.rank::self.dist.world], sum(b.n_tgt_tokens for b in group)

    def train_update(self, micro_batches, n_tokens_global: int) -> float:
        """One optimizer update from this rank's micro-batches; returns the mean loss."""
        model = self.train_model
        model.train()
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)  # on the device:
        for i, batch in enumerate(micro_batches):                            # one sync an update
            batch = batch.to(self.device, non_blocking=True)
            last = i == len(micro_batches) - 1
            ctx = model.no_sync() if self.dist.distributed and not last else contextlib.nullcontext()
            with ctx, autocast(self.device, self.precision):
                loss = model(batch.src, batch.tgt_in, batch.tgt_out)
            scaled = loss * (self.dist.world / n_tokens_global)
            (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            loss_sum += loss.detach()
        mean_loss = self.dist.sum(loss_sum.item()) / n_tokens_global
        if not math.isfinite(mean_loss):
            advice = " or use fp32/bf16 precision" if self.precision == "fp16" else ""
            raise LossDiverged(f"loss is {mean_loss} at update {self.step + 1}: training "
                               f"stopped; {self.last_checkpoint_text('good')}. Lower --lr-factor"
                               f"{advice}.")
        if self.divergence.update(mean_loss):
            watch = self.divergence
            raise LossDiverged(
                f"loss diverged at update {self.step + 1}: its smoothed value "
                f"{watch.smoothed:.4g} has stayed above twice its best ({watch.best:.4g}) "
                f"for {watch.streak} updates; training stopped, "
                f"{self.last_checkpoint_text('good')}. Lower --lr-factor or lengthen --warmup.")
        lr = self.lr(self.step + 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        if self.scaler:
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)        # skipped when a gradient is inf or nan,
            self.scaler.update()                    # and then the scale backs off
            if self.scaler.get_scale() < scale:
                self.optimizer.zero_grad(set_to_none=True)
                return mean_loss                    # not an update: the step count stays
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return mean_loss

    def fit(self) -> dict:
        """Train until ``max_updates``, ``cooldown_end``, ``max_epochs`` or ``time_limit_min``;
        then checkpoint, validate, average the last checkpoints and return the final figures.

        A loss that becomes inf or NaN, or runs away (:class:`DivergenceWatch`), raises
        :class:`LossDiverged` naming the last good checkpoint; nothing is written after it.
        The run folder's lock (:meth:`from_config`) is released on the way out, and torch's
        CPU threads are left at the run's count, whatever the governor last chose."""
        try:
            return self._fit()
        finally:
            self.close()
            if self.governor is not None:
                torch.set_num_threads(self.governor.most)

    def close(self) -> None:
        """Release the run folder's lock (:meth:`from_config` takes it; :meth:`fit` ends
        with this): another ``train`` may then write the run."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def _fit(self) -> dict:
        cfg = self.cfg
        last_update = min(filter(None, (cfg.max_updates, cfg.cooldown_end)), default=0)
        bar = None
        if cfg.progress and self.dist.main:
            from tqdm.auto import tqdm
            bar = tqdm(total=last_update or None, initial=self.step, unit="upd",
                       dynamic_ncols=True)
        start, window_tokens, window_start = time.perf_counter(), 0, time.perf_counter()
        base_seconds = self.train_seconds
        stop = False
        while not stop:
            if cfg.max_epochs and self.train_iter.epoch >= cfg.max_epochs:
                break
            batches = iter(self.train_iter)
            while True:
                if last_update and self.step >= last_update:
                    stop = True
                    break
                if cfg.time_limit_min and self.time_is_up():
                    stop = True
                    break
                micro, n_tokens = self.next_micro_batches(batches)
                if not micro:
                    break
                before = self.step
                if self.governor is not None and (threads := self.governor.tick()):
                    self.log({"step": self.step, "threads": threads})
                loss = self.train_update(micro, n_tokens)
                self.train_seconds = base_seconds + time.perf_counter() - start
                window_tokens += n_tokens
                if self.step == before:             # fp16: a gradient overflowed, skipped
                    self.log({"step": self.step, "skipped_overflow": True,
                              "loss_scale": self.scaler.get_scale()})
                    continue
                if self.step % cfg.log_every == 0:
                    now = time.perf_counter()
                    tps = window_tokens / (now - window_start)
                    window_tokens, window_start = 0, now
                    record = {"step": self.step, "loss": loss, "lr": self.lr(self.step),
                              "tokens_per_s": tps, "epoch": self.train_iter.epoch,
                              "elapsed_s": self.train_seconds}
                    if self.scaler is not None:
                        record["loss_scale"] = self.scaler.get_scale()
                    self.log(record)
                    if bar is not None:
                        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{record['lr']:.2e}",
                                        tok_s=f"{tps:,.0f}")
                if bar is not None:
                    bar.update(1)
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.log({"step": self.step, **self.evaluate()})
                if self.step % cfg.save_every == 0 and self.divergence.healthy:
                    self.save()
            if cfg.max_epochs and self.train_iter.epoch >= cfg.max_epochs:
                stop = True
        if bar is not None:
            bar.close()
        saved = self.run.checkpoints() if self.run is not None else []
        if not saved or saved[-1].name != step_file(self.step):
            self.save()
        final = self.evaluate()
        self.log({"step": self.step, **final, "train_seconds": self.train_seconds,
                  "precision": self.precision, "final": True})
        self.average()
        result = {"step": self.step, "train_seconds": self.train_seconds,
                  "precision": self.precision, **final}
        if self.run is not None and self.dist.main:
            self.run.write_summary(self.cfg, result, model=self.model_cfg.to_dict(),
                                   params=self.model.num_parameters(), device=self.device,
                                   command=self.command, recipe=self.recipe)
        self.dist.barrier()
        return result

    # ---------------------------------------------------------- evaluation
    @torch.no_grad()
    def valid_sum(self, loss_module) -> tuple[float, int]:
        """``loss_module``'s summed loss over the validation batches, and their target
        tokens (the model's mode is the caller's)."""
        total, tokens = 0.0, 0
        for batch in self.valid_iter.batches(0):
            batch = self.valid_iter.collate(batch).to(self.device)
            with autocast(self.device, self.precision):
                total += loss_module(batch.src, batch.tgt_in, batch.tgt_out).item()
            tokens += batch.n_tgt_tokens
        return total, tokens

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Validation figures per target token: ``valid_loss`` (label-smoothed, what is
        trained), ``valid_nll`` (the negative log-likelihood) and ``valid_ppl`` (its
        exponential, the per-wordpiece perplexity of Table 3), over ``valid_tokens``
        tokens; and greedy BLEU on a subset."""
        if self.valid_iter is None:
            return {}
        self.model.eval()
        total, tokens = self.valid_sum(self.loss_module)
        nll, _ = self.valid_sum(self.nll_module)
        nan = float("nan")
        result = {"valid_loss": total / tokens if tokens else nan,
                  "valid_nll": nll / tokens if tokens else nan,
                  "valid_ppl": math.exp(nll / tokens) if tokens else nan,
                  "valid_tokens": tokens}
        n = self.cfg.eval_bleu_sentences
        if n and self.dist.main and self.tokenizer is not None and self.valid is not None:
            from ..translation import translate
            from ..evaluate import score
            hyps = translate(self.model, self.tokenizer, self.valid.src[:n], beam_size=1,
                             device=self.device)
            result["valid_bleu"] = score(hyps, self.valid.tgt[:n])["bleu"]
        self.model.train()
        return result
