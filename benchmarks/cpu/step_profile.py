"""Where the seconds of one training update of the book's recipe go on a CPU.

    python -m benchmarks.cpu.step_profile                      # fp32 and bf16
    python -m benchmarks.cpu.step_profile --precisions fp32 --updates 5

Builds the recipe ``book`` (``transformer/training/recipes.py``: the tiny preset, Muon for
the layers' matrices and the paper's Adam for the rest, updates of 2,048 target tokens,
the recipe's thread count) with the trainer itself (``Trainer.from_config``: the corpus,
its BPE vocabulary, the batches), then, for each precision, a fresh model and optimizer
from the recipe's seed run the trainer's own update (``Trainer.next_micro_batches`` and
``Trainer.train_update``) on the same batches: one untimed update, then ``--updates``
timed ones without the profiler and as many under ``torch.profiler``, fewer where they
do not fit in ``--budget-s`` (then none without and one under the profiler: bf16 on a CPU
without bf16 instructions takes about a minute an update). The trainer's thread governor is left out (it changes the thread
count when the machine is busy), so every update runs on the recipe's threads.

Each profiled operation's own time (``self_cpu_time_total``: its time less its children's,
so the parts add up to the whole update) goes to one part:

* **stage**: inside ``Optimizer.step#Adam.step`` / ``Optimizer.zero_grad#Adam...``: *Adam*;
  likewise *Muon* (torch's optimizers name these scopes themselves); inside the benchmark's
  ``data and batching`` scope (``next_micro_batches``: drawing and collating the batch):
  *data and batching*; else *backward* when inside an ``autograd::engine::evaluate_function``
  (the autograd engine running a node), else *forward*. The fused loss
  (``ProjectedSmoothedCrossEntropy``) computes its gradient during the forward pass, so its
  gradient's matrix multiplies count as forward.
* **kind**, for the forward and the backward: the innermost name, the operation's own or an
  enclosing one's, that :data:`KINDS` recognises: *matrix multiplies* (``mm``, ``addmm``,
  ``bmm``, ``baddbmm``, ``linear``, ``matmul``, their backward nodes; attention's two
  products QK^T and AV too, since the CPU runs attention on the "math" kernel), *attention*
  (softmax and its backward, the mask: ``scaled_dot_product_attention``'s other work,
  ``masked_fill``, ``tril``), *norms* (``layer_norm``), *embeddings* (``embedding`` and its
  backward), *loss* (the fused loss's own work: max, exp, sums, gather), *casts*
  (``_to_copy``: bf16 autocast's conversions); any other ``aten::`` operation is
  *element-wise and copies* (residual adds, ReLU, the scaling by sqrt(d_model), the
  packing of non-pad positions).
* **other**: time in no operation at all, a scope's own time (Python between operations,
  the autograd engine's bookkeeping, waking the threads) and the profiler's own cost.

The record holds, per precision, the seconds of a profiled update (the profiler adds a
little per operation: ``ops_per_update`` says how many), the unprofiled seconds where
measured, each part's share of the profiled time, and the load average (``os.getloadavg``)
before and after, since other work may share the machine.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from benchmarks.record import add_option, save
from transformer.fast import FastTransformer
from transformer.measuring.provenance import cpu_name
from transformer.tokenizer import Tokenizer
from transformer.training.loop import Trainer
from transformer.training.optimizers import make_optimizer
from transformer.cpu import BF16_INSTRUCTIONS
from transformer.training.precision import cpu_flags, resolve_precision
from transformer.training.recipes import recipe
from transformer.measuring.timing import Stopwatch

RECIPE = "book"
DATA = "data and batching"            # the benchmark's scope around drawing a batch
UPDATE = "update"                     # and around the whole update

# Kinds of work in the forward and backward passes: (kind, names it recognises). A name
# is matched whole ("aten::mm"), or as an autograd node ("MmBackward0" and the engine's
# "autograd::engine::evaluate_function: MmBackward0"), case-insensitively.
KINDS = [
    ("matrix multiplies", ("aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm",
                           "aten::baddbmm", "aten::linear", "aten::matmul", "mmbackward0",
                           "addmmbackward0", "bmmbackward0", "baddbmmbackward0",
                           "linearbackward0")),
    ("attention", ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
                   "aten::softmax", "aten::_softmax", "aten::_safe_softmax",
                   "aten::_softmax_backward_data", "aten::masked_fill", "aten::masked_fill_",
                   "aten::tril", "softmaxbackward0", "safesoftmaxbackward0",
                   "maskedfillbackward0")),
    ("norms", ("aten::layer_norm", "aten::native_layer_norm",
               "aten::native_layer_norm_backward", "nativelayernormbackward0")),
    ("embeddings", ("aten::embedding", "aten::embedding_backward",
                    "aten::embedding_dense_backward", "embeddingbackward0")),
    ("loss", ("projectedsmoothedcrossentropy", "projectedsmoothedcrossentropybackward",
              "smoothedcrossentropy", "smoothedcrossentropybackward")),
    ("casts", ("aten::_to_copy", "tocopybackward0")),
]
ELEMENTWISE = "element-wise and copies"
PASS_KINDS = [k for k, _ in KINDS] + [ELEMENTWISE]
# Every part of an update, in the order the record and the figure give them.
PARTS = ([f"forward: {k}" for k in PASS_KINDS] + [f"backward: {k}" for k in PASS_KINDS]
         + ["Adam", "Muon", DATA, "other"])
_KIND_OF = {name: kind for kind, names in KINDS for name in names}
_ENGINE = "autograd::engine::evaluate_function:"


def kind_of(name: str) -> str | None:
    """The kind of work one profiler name stands for (:data:`KINDS`), or None."""
    name = name.strip().lower()
    if name.startswith(_ENGINE):
        name = name[len(_ENGINE):].strip()
    return _KIND_OF.get(name)


def stage_of(name: str) -> str | None:
    """The part an enclosing scope puts everything inside it into (Adam, Muon, data and
    batching), "backward" for an autograd node run by the engine, or None."""
    if name.startswith("Optimizer."):                   # Optimizer.step#Adam.step
        owner = name.split("#", 1)[-1].split(".", 1)[0]
        return {"Adam": "Adam", "Muon": "Muon"}.get(owner, "other")
    if name == DATA:
        return DATA
    if name.startswith(_ENGINE):
        return "backward"
    return None


def part_of(chain: list[str]) -> str:
    """The part of an operation, given its name and its enclosing scopes' (``chain``,
    innermost first, up to the update): see the module's docstring."""
    stages = [s for s in map(stage_of, chain) if s is not None]
    outer = next((s for s in reversed(stages) if s != "backward"), None)
    if outer is not None:                               # Adam, Muon, data: whatever is inside
        return outer
    kind = next((k for k in map(kind_of, chain) if k is not None), None)
    if kind is None:
        if not chain[0].startswith("aten::"):
            return "other"                              # a scope's own time: no operation
        kind = ELEMENTWISE
    return f"{'backward' if 'backward' in stages else 'forward'}: {kind}"


def breakdown(events) -> tuple[dict, int]:
    """Microseconds per part over the profiled updates (the events inside each ``update``
    scope, its own time included), and the number of operations."""
    micros, ops = dict.fromkeys(PARTS, 0.0), 0
    for root in (e for e in events if e.name == UPDATE):
        stack = [(root, [])]
        while stack:
            event, above = stack.pop()
            chain = [event.name] + above                # innermost first, up to the update
            micros[part_of(chain) if event is not root else "other"] += event.self_cpu_time_total
            ops += event.name.startswith("aten::")
            stack.extend((child, chain) for child in event.cpu_children)
    return micros, ops


# ------------------------------------------------------------------------ the run
def build(args, out: Path) -> Trainer:
    """The recipe's trainer (corpus, vocabulary, batches) in the folder ``out``."""
    tokenizer = Tokenizer.load(args.tokenizer) if args.tokenizer else None
    cfg = recipe(RECIPE, out_dir=str(out), data_root=args.data_root, precision="fp32",
                 eval_every=0, save_every=10**9, adapt_threads=False,
                 **({"threads": args.threads} if args.threads else {}))
    return Trainer.from_config(cfg, tokenizer=tokenizer)


def one_update(trainer: Trainer, batches) -> None:
    with record_function(UPDATE):
        with record_function(DATA):
            micro, n_tokens = trainer.next_micro_batches(batches)
        trainer.train_update(micro, n_tokens)


def profile_precision(base: Trainer, precision: str, args) -> dict:
    """One precision: a fresh model and optimizer on the recipe's batches from the start."""
    cfg = dataclasses.replace(base.cfg, precision=precision)
    torch.manual_seed(cfg.seed)
    model = FastTransformer(base.model_cfg)
    trainer = Trainer(model, make_optimizer(model, cfg.optimizer, precision), base.train_iter,
                      cfg=cfg)
    base.train_iter.load_state_dict(args.start)         # the same batches in each precision
    batches = iter(base.train_iter)
    load_before = os.getloadavg()
    with Stopwatch() as first:
        one_update(trainer, batches)                    # untimed: first-use costs
    fit = min(args.updates, int(args.budget_s // first.seconds))   # what the budget allows
    unprofiled = []
    for _ in range(fit):
        with Stopwatch() as watch:
            one_update(trainer, batches)
        unprofiled.append(watch.seconds)
    profiled = max(1, fit)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(profiled):
            one_update(trainer, batches)
    load_after = os.getloadavg()
    micros, ops = breakdown(prof.events())
    total = sum(micros.values())
    seconds = total / 1e6 / profiled
    print(f"\n{precision}: {seconds:.3f} s per profiled update"
          + (f", {statistics.median(unprofiled):.3f} s unprofiled" if unprofiled else "")
          + f"; load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    for part, us in sorted(micros.items(), key=lambda kv: -kv[1]):
        print(f"   {us / total:6.1%}  {us / 1e6 / profiled:8.4f} s  {part}")
    return {"seconds_per_update": round(seconds, 4),
            "unprofiled_seconds_per_update": (round(statistics.median(unprofiled), 4)
                                              if unprofiled else None),
            "updates_profiled": profiled, "updates_unprofiled": len(unprofiled),
            "ops_per_update": round(ops / profiled),
            "shares": {part: round(us / total, 4) for part, us in micros.items()},
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--precisions", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    p.add_argument("--updates", type=int, default=2,
                   help="timed updates per precision, unprofiled and then profiled")
    p.add_argument("--budget-s", type=float, default=10.0,
                   help="seconds for each of the two, per precision: fewer updates where "
                        "one takes longer (then none unprofiled, one profiled)")
    p.add_argument("--threads", type=int, default=None, help="default: the recipe's")
    p.add_argument("--data-root", default=None, help="where the corpora are (default: "
                   "$TRANSFORMER_DATA, else the download cache)")
    p.add_argument("--tokenizer", default=None, help="an spm.model to use instead of "
                   "training the recipe's BPE vocabulary (a run folder's)")
    add_option(p, "step_profile")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = build(args, Path(tmp) / "run")
        args.start = base.train_iter.state_dict()
        print(f"recipe {RECIPE}: {base.model.num_parameters():,} parameters, updates of "
              f"{base.cfg.update_tokens:,} target tokens, {torch.get_num_threads()} threads, "
              f"torch {torch.__version__}, {cpu_name()}")
        runs = {precision: profile_precision(base, precision, args)
                for precision in args.precisions}
        base.close()
    save(args.record, f"one training update of the recipe {RECIPE!r} on a CPU, broken down "
         "by torch.profiler into parts (forward and backward by kind of work, Adam, Muon, "
         "data and batching, other): seconds per update and each part's share",
         {"recipe": RECIPE, "auto_precision": resolve_precision("auto", torch.device("cpu")),
          "cpu_bf16_instructions": sorted(set(BF16_INSTRUCTIONS) & (cpu_flags() or set())),
          "parts": PARTS, "precisions": runs},
         threads=torch.get_num_threads())
    return 0


if __name__ == "__main__":
    sys.exit(main())
