"""Training-step throughput: our Transformer vs torch.nn.Transformer vs Hugging Face Marian.

One training step = forward + label-smoothed loss (eps_ls = 0.1, section 5.4) + backward +
Adam step, on the same right-padded batch, with the same dimensions, dropout, thread count
and optimizer. The three models run alternately in one process (warm-up steps first, then
rounds of ours / torch / marian in rotating order) and we report medians.

    (a) ours    transformer.FastTransformer (the form the trainer uses) +
                transformer.fast.SequenceLoss (the trainer's loss), which projects and
                scores only the non-pad target positions, the projection fused into the
                loss; its position-wise layers skip padding (transformer.fast.packing); its
                dropout is transformer.fast.CheapDropout;
    (b) torch   torch.nn.Transformer (post-norm, ReLU, batch_first) wrapped with the same
                shared embedding (x sqrt(d_model)), sinusoidal table and tied output
                projection; the usual masks (causal tgt_mask + three key padding masks);
                logits at every target position, then the same loss
                (transformer.fast.FastLabelSmoothingLoss, written-out gradient);
    (c) marian  transformers.MarianMTModel from a MarianConfig of the same dimensions
                (random weights), SDPA attention, source attention_mask, logits at every
                target position, then the same loss.

All three use dropout P_drop on the residual branches and the embeddings only (attention
and activation dropout 0, as in ModelConfig), no final LayerNorm after a post-norm stack,
the same fused Adam, and in bf16 the same attention kernel (see ``precision``).
Batches are made like the trainer's (``transformer.batching``: bucketed by length, packed
to a token budget) from corpus-like sentence lengths; ``--random-batches`` packs them in
random order instead (about half the positions are then padding).

Throughput counts real (non-pad) target tokens per second. Model FLOPs are counted
analytically on the real tokens (see ``model_flops``) and shown as a fraction of this
machine's 2048^3 matmul peak measured in the same run. Finally each batch runs once more
through ours with its matrix multiplies timed (``GemmTimer``): their share of our step,
and the speed-up over torch.nn.Transformer fp32 that ours would reach if everything else
in the step took no time, a ceiling no eager rewrite of the model can pass.

``--padded`` runs ours on the padded layout (``FastTransformer(skip_padding=False)``), to
measure what skipping padding gives.

The comparison models, the batches and the FLOP count are in ``benchmarks.baselines``.

    python -m benchmarks.cpu.train_throughput                 # small and base, fp32 and bf16
    python -m benchmarks.cpu.train_throughput --preset small --quick
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from contextlib import contextmanager

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.baselines import TorchTransformerMT, build_marian, make_batches, model_flops
from benchmarks.record import add_option, save
from transformer import FastTransformer, ModelConfig
from transformer.measuring.provenance import cpu_name
from transformer.training.adam import paper_adam
from transformer.config import PAD_ID
from transformer.fast import FastLabelSmoothingLoss, SequenceLoss
from transformer.measuring.timing import Stopwatch, best_seconds

# Batch size in padded slots per side (the trainer's --max-tokens): ~3k real target
# tokens at the CPU preset, ~1k at base dims.
MAX_TOKENS = {"small": 3584, "base": 1280}
SKIP_PADDING = True       # --padded: ours on the padded layout


# ------------------------------------------------------------------------ the step
@contextmanager
def precision(dtype: str):
    """fp32, or bf16 autocast with PyTorch's "math" attention kernel.

    On CPUs without AMX (this one: AVX512-BF16) the fused ("flash") attention kernel's
    bf16 backward is 2-3x slower than the plain matmul-softmax-matmul one at sentence
    lengths; in fp32 the two tie. The choice applies to all three models alike.
    """
    if dtype == "fp32":
        yield
        return
    with torch.autocast("cpu", dtype=torch.bfloat16), sdpa_kernel(SDPBackend.MATH):
        yield


def make_steps(cfg: ModelConfig):
    """{name: (model, step(batch, dtype))}; each step runs forward, loss, backward, Adam."""
    criterion = FastLabelSmoothingLoss(0.1, pad_id=cfg.pad_id)
    models = {"ours": FastTransformer(cfg, skip_padding=SKIP_PADDING),
              "torch": TorchTransformerMT(cfg),
              "marian": build_marian(cfg)}
    sequence_loss = SequenceLoss(models["ours"], criterion)        # summed over tokens

    def forward_loss(name, model, src, tgt_in, tgt_out):
        if name == "ours":
            return sequence_loss(src, tgt_in, tgt_out) / (tgt_out != cfg.pad_id).sum()
        if name == "torch":
            return criterion(model(src, tgt_in), tgt_out)
        logits = model(input_ids=src, attention_mask=(src != cfg.pad_id).long(),
                       decoder_input_ids=tgt_in, use_cache=False).logits
        return criterion(logits, tgt_out)

    steps = {}
    for name, model in models.items():
        model.train()
        # The same Adam for all three (section 5.3 settings); fused=True is one kernel per
        # update instead of ~10 small ones per parameter: ~10x faster on CPU.
        opt = paper_adam(model.parameters())
        for group in opt.param_groups:
            group["lr"] = 1e-4

        def step(batch, dtype, name=name, model=model, opt=opt):
            opt.zero_grad(set_to_none=True)
            with precision(dtype):
                loss = forward_loss(name, model, *batch)
            loss.backward()
            opt.step()
            return loss.item()
        steps[name] = (model, step)
    return steps


# ------------------------------------------------------------------ matrix multiplies
class GemmTimer(TorchDispatchMode):
    """Wall time spent inside matrix multiplies (mm, addmm, bmm, baddbmm: the same
    oneDNN/MKL kernels whichever model calls them), forward and backward."""

    OPS = {torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm, torch.ops.aten.baddbmm}

    def __init__(self):
        super().__init__()
        self.seconds = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket not in self.OPS:
            return func(*args, **(kwargs or {}))
        with Stopwatch() as watch:
            out = func(*args, **(kwargs or {}))
        self.seconds += watch.seconds
        return out


def gemm_seconds(step, batch, dtype: str) -> float:
    """Seconds one training step spends in matrix multiplies.

    Attention runs on the "math" kernel here, so that QK^T and AV are bmm calls and
    counted (in fp32 the fused kernel, which hides them, takes the same time; bf16 uses
    the math kernel anyway).
    """
    with GemmTimer() as timer, sdpa_kernel(SDPBackend.MATH):
        step(batch, dtype)
    return timer.seconds


class MatmulPeak:
    """Best GFLOP/s seen for a 2048^3 matmul at the current thread count, per dtype.

    Sampled at the start, after every round and at the end, so that a busy spell on a
    shared machine does not pass for the peak.
    """

    def __init__(self, n: int = 2048):
        self.n, self.best = n, {"fp32": 0.0, "bf16": 0.0}

    def sample(self, reps: int = 1) -> dict:
        for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            a, b = torch.randn(self.n, self.n, dtype=dtype), torch.randn(self.n, self.n, dtype=dtype)
            a @ b                                                   # untimed
            seconds = best_seconds(lambda: a @ b, reps)
            self.best[name] = max(self.best[name], 2 * self.n ** 3 / seconds / 1e9)
        return self.best


# -------------------------------------------------------------------------- main
def run_preset(preset: str, args, peaks: MatmulPeak) -> dict:
    """Time every (model, dtype) on the same batches, alternating; return the medians."""
    cfg = ModelConfig.from_preset(preset, vocab_size=args.vocab)
    max_tokens = MAX_TOKENS[preset] // (2 if args.quick else 1)
    torch.manual_seed(0)
    steps = make_steps(cfg)
    batches = make_batches(args.steps + 1, max_tokens, cfg.vocab_size,
                           bucketed=not args.random_batches)

    def padding(i):   # share of pad positions in src (i=0) or tgt_out (i=2)
        return 1 - (sum(int((b[i] != PAD_ID).sum()) for b in batches)
                    / sum(b[i].numel() for b in batches))
    n_tgt = [int((b[2] != PAD_ID).sum()) for b in batches]
    print(f"\n== {preset}: d_model={cfg.d_model} h={cfg.n_heads} d_ff={cfg.d_ff} "
          f"N={cfg.n_encoder_layers}+{cfg.n_decoder_layers} V={cfg.vocab_size}; batches of "
          f"<= {max_tokens} slots per side: {statistics.mean(len(b[0]) for b in batches):.0f} "
          f"sentences and {statistics.mean(n_tgt):.0f} target tokens on average, padding "
          f"{padding(0):.0%} of source and {padding(2):.0%} of target positions")
    for name, (model, _) in steps.items():
        print(f"   {name:7s} {sum(p.numel() for p in model.parameters()):,} parameters")

    variants = [(name, dtype) for dtype in args.dtypes for name in steps]
    for name, dtype in variants:                                      # warm-up
        for _ in range(args.warmup):
            steps[name][1](batches[0], dtype)
    wall = {v: [] for v in variants}
    cpu = {v: [] for v in variants}
    for r, batch in enumerate(batches[1:]):
        order = variants[r % len(variants):] + variants[:r % len(variants)]   # rotate
        for v in order:
            with Stopwatch() as watch:
                steps[v[0]][1](batch, v[1])
            wall[v].append(watch.seconds)
            cpu[v].append(watch.cpu_seconds)
        peaks.sample()
        print(f"   round {r + 1}/{args.steps}: " + " ".join(
            f"{n}/{d} {wall[(n, d)][-1]:.2f}s" for n, d in variants), flush=True)

    # The floor: ours' matrix multiplies alone, each batch timed once more after the
    # timed rounds. If everything else in our step took no time, ours would run at most
    # torch_fp32_time / gemm_time faster than torch.nn.Transformer in fp32.
    floor = {}
    for dtype in args.dtypes:
        gemm = [gemm_seconds(steps["ours"][1], b, dtype) for b in batches[1:]]
        share = statistics.median(g / t for g, t in zip(gemm, wall[("ours", dtype)]))
        bound = (statistics.median(t / g for g, t in zip(gemm, wall[("torch", "fp32")]))
                 if "fp32" in args.dtypes else None)
        floor[dtype] = dict(share=share, bound=bound)

    flops = [model_flops(cfg, b[0], b[2]) for b in batches[1:]]
    rows = {v: dict(tok_s=statistics.median(n / t for n, t in zip(n_tgt[1:], wall[v])),
                    step_s=statistics.median(wall[v]), cpu_s=statistics.median(cpu[v]),
                    gflop_s=statistics.median(f / t for f, t in zip(flops, wall[v])) / 1e9)
            for v in variants}

    def paired(a, b, times):   # median over rounds of the per-round time ratio b / a
        return statistics.median(tb / ta for ta, tb in zip(times[a], times[b]))
    pairs = [(("ours", d), (o, d)) for d in args.dtypes for o in ("torch", "marian")]
    if "bf16" in args.dtypes and "fp32" in args.dtypes:
        pairs += [(("ours", "bf16"), (o, "fp32")) for o in ("torch", "marian")]
    speedups = {(a, b): (paired(a, b, wall), paired(a, b, cpu)) for a, b in pairs}
    return dict(preset=preset, tokens=statistics.mean(n_tgt[1:]), rows=rows,
                speedups=speedups, floor=floor)


def report(result: dict, peaks: MatmulPeak) -> None:
    print(f"\n{result['preset']}: {result['tokens']:.0f} target tokens per step (mean)")
    print(f"   {'model':7s} {'dtype':5s} {'tok/s':>7s} {'s/step':>7s} {'cpu s':>6s} "
          f"{'GFLOP/s':>8s} {'of peak':>8s}")
    for (name, dtype), row in result["rows"].items():
        print(f"   {name:7s} {dtype:5s} {row['tok_s']:7.0f} {row['step_s']:7.2f} "
              f"{row['cpu_s']:6.2f} {row['gflop_s']:8.1f} "
              f"{row['gflop_s'] / peaks.best[dtype]:8.1%}")
    print("   speed-up of ours (median over rounds of paired step times; by CPU time):")
    for (a, b), (by_wall, by_cpu) in result["speedups"].items():
        print(f"     ours {a[1]} vs {b[0]} {b[1]}: {by_wall:.2f}x  ({by_cpu:.2f}x)")
    print("   matrix multiplies in ours' step, and the speed-up over torch fp32 "
          "ours would reach if nothing else took time:")
    for dtype, f in result["floor"].items():
        bound = f"at most {f['bound']:.2f}x" if f["bound"] else "n/a (no fp32 run)"
        print(f"     ours {dtype}: {f['share']:.0%} of the step; ours {dtype} vs torch fp32 "
              f"{bound}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=["small", "base", "all"], default="all")
    p.add_argument("--steps", type=int, default=None,
                   help="timed rounds per preset; each round times every model and dtype "
                        "once (default 5, --quick 2)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps per model and dtype")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=8000, help="shared vocabulary size")
    p.add_argument("--dtypes", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    p.add_argument("--quick", action="store_true", help="half-size batches, 2 rounds")
    p.add_argument("--random-batches", action="store_true",
                   help="pack sentences in random order (about half padding) instead of "
                        "bucketing them by length as the trainer does")
    p.add_argument("--padded", action="store_true",
                   help="ours on the padded layout (FastTransformer(skip_padding=False))")
    add_option(p, "train_throughput")
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = 2 if args.quick else 5
    torch.set_num_threads(args.threads)
    global SKIP_PADDING
    SKIP_PADDING = not args.padded
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, python "
          f"{platform.python_version()}, {args.threads} threads of {os.cpu_count()} CPUs "
          f"({cpu_name()}), LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}; ours {'padded' if args.padded else 'skips padding'}")
    peaks = MatmulPeak()
    first = dict(peaks.sample(reps=5))
    print(f"2048^3 matmul now: fp32 {first['fp32']:.0f} GFLOP/s, bf16 {first['bf16']:.0f} GFLOP/s")
    presets = ["small", "base"] if args.preset == "all" else [args.preset]
    with Stopwatch() as total:
        results = [run_preset(preset, args, peaks) for preset in presets]
        peaks.sample(reps=3)
    print(f"\n2048^3 matmul peak, best seen in this run: fp32 {peaks.best['fp32']:.0f}, bf16 "
          f"{peaks.best['bf16']:.0f} GFLOP/s (the 'of peak' column divides by these)")
    for result in results:
        report(result, peaks)
    print(f"\ntotal {total.seconds:.0f} s")
    save(args.record, "one training step (forward, label-smoothed loss, backward, Adam) of "
         "ours (the trainer's fast form) against torch.nn.Transformer and Hugging Face Marian, "
         "same batches, medians of paired rounds; target tokens/s",
         {"rows": record_rows(results), "matmul_peak_gflop_s": dict(peaks.best)},
         threads=args.threads, transformers=transformers.__version__,
         allocator=os.environ.get("LD_PRELOAD") or "glibc malloc")
    return 0


def record_rows(results: list[dict]) -> list[dict]:
    """One row per preset and precision: tokens/s of each model and ours' speed-ups."""
    rows = []
    for result in results:
        speed = {(a[1], b): by_wall for (a, b), (by_wall, _) in result["speedups"].items()}
        for dtype in dict.fromkeys(d for _, d in result["rows"]):
            row = {"preset": result["preset"], "precision": dtype}
            row.update({name: round(r["tok_s"]) for (name, d), r in result["rows"].items()
                        if d == dtype})
            for other in ("torch", "marian"):
                if (dtype, (other, dtype)) in speed:
                    row[f"ours_over_{other}"] = round(speed[dtype, (other, dtype)], 2)
            if dtype == "bf16" and ("bf16", ("torch", "fp32")) in speed:
                row["ours_bf16_over_torch_fp32"] = round(speed["bf16", ("torch", "fp32")], 2)
            rows.append(row)
    return rows


if __name__ == "__main__":
    sys.exit(main())
