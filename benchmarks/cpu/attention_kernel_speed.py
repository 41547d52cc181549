"""Which attention kernel should a CPU training step use: PyTorch's fused ("flash") CPU
kernel or its "math" kernel?

Both compute equation (1) through ``F.scaled_dot_product_attention``; the backend is
chosen with ``torch.nn.attention.sdpa_kernel``. The trainer's ``autocast`` picks the math
kernel on a CPU (transformer/training/precision.py). This measures why, two ways:

1. the kernel alone, forward + backward, at the shapes a 2,048-token update of the
   ``tiny`` preset makes (4 heads of d_k 32; ``tokens // L`` sentences of L pieces): the
   encoder's self-attention (a key-padding mask) and the decoder's (causal), the two
   backends in turn, fp32, then bf16 autocast if this CPU has bf16 instructions;
2. whole training updates of ``make train-tiny`` (tiny preset, dropout 0.2, 2,048-token
   updates, ``--precision auto``; ``benchmarks.cpu.trainer``): two trainers built
   alike (same seed, so the same batches), one with each kernel, in rounds of
   ``--updates`` updates taking turns.

    python -m benchmarks.cpu.attention_kernel_speed
    python -m benchmarks.cpu.attention_kernel_speed --skip-kernels --rounds 6 --updates 30
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import transformer.training.loop as loop_module
from benchmarks.cpu.trainer import recipe_trainer
from benchmarks.record import add_option, save
from transformer.training.precision import cpu_has_native_bf16
from transformer.measuring.timing import Stopwatch, median_seconds

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}
TRAINER_AUTOCAST = loop_module.autocast        # mixed precision + the math kernel


def kernel_ms(backend, n_seq: int, length: int, causal: bool, dtype, reps: int) -> float:
    """Median milliseconds of one forward + backward of the attention of ``n_seq``
    sentences of ``length`` pieces (4 heads, d_k 32) with ``backend``."""
    q, k, v = (torch.randn(n_seq, 4, length, 32, dtype=dtype, requires_grad=True)
               for _ in range(3))
    mask = None
    if not causal:                                        # key padding, as the encoder's
        mask = torch.rand(n_seq, 1, 1, length) > 0.1
        mask[..., 0] = True
    grad = torch.randn(n_seq, 4, length, 32, dtype=dtype)

    def call():
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal).backward(grad)
    with sdpa_kernel(backend):
        return 1e3 * median_seconds(call, reps, warmup=2)      # two untimed warm-up calls


def kernels(tokens: int, reps: int) -> dict:
    """Prints the kernel table; returns math's speed-up at 8-16 pieces in fp32 (low, high)."""
    short = []
    dtypes = [torch.float32] + ([torch.bfloat16] if cpu_has_native_bf16() else [])
    for dtype in dtypes:
        print(f"kernel alone, {dtype}, forward + backward, ms (median of {reps})")
        print(f"{'L':>4} {'sentences':>9}  {'padded: flash':>13} {'math':>6} {'ratio':>6}"
              f"  {'causal: flash':>13} {'math':>6} {'ratio':>6}")
        for length in (8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128):
            n_seq, row = max(1, tokens // length), []
            for causal in (False, True):
                flash, math_ = (kernel_ms(BACKENDS[b], n_seq, length, causal, dtype, reps)
                                for b in ("flash", "math"))
                row += [flash, math_, flash / math_]
            print(f"{length:>4} {n_seq:>9}  {row[0]:>13.2f} {row[1]:>6.2f} {row[2]:>6.2f}"
                  f"  {row[3]:>13.2f} {row[4]:>6.2f} {row[5]:>6.2f}")
            if dtype == torch.float32 and length <= 16:
                short += [row[2], row[5]]
    return {"kernel_math_speedup_8_to_16_pieces": [round(min(short), 2), round(max(short), 2)]}


def flash_autocast(device, precision):
    """The trainer's ``autocast`` with the fused kernel in place of the math one."""
    stack = contextlib.ExitStack()
    stack.enter_context(TRAINER_AUTOCAST(device, precision))
    stack.enter_context(sdpa_kernel(SDPBackend.FLASH_ATTENTION))   # innermost wins
    return stack


def updates(scratch: Path, args) -> dict:
    runs = {}
    for name in BACKENDS:                   # the same seed, so the same batches, in turn
        trainer = recipe_trainer(8000, scratch / name, args.threads, args.data_root,
                                 args.tokens)
        runs[name] = {"trainer": trainer, "batches": iter(trainer.train_iter), "seconds": []}
    for r in range(args.rounds + 1):                       # round 0: untimed warm-up
        for name in (list(BACKENDS) if r % 2 else list(BACKENDS)[::-1]):
            run = runs[name]
            loop_module.autocast = flash_autocast if name == "flash" else TRAINER_AUTOCAST
            try:
                with Stopwatch() as watch:
                    for _ in range(args.updates if r else 3):
                        run["trainer"].train_update(
                            *run["trainer"].next_micro_batches(run["batches"]))
                if r:
                    run["seconds"].append(watch.seconds / args.updates)
            finally:
                loop_module.autocast = TRAINER_AUTOCAST
        if r:
            print(f"round {r}/{args.rounds}: " + ", ".join(
                f"{n} {runs[n]['seconds'][-1]:.3f} s/update" for n in BACKENDS), flush=True)
    flash, math_ = (statistics.median(runs[n]["seconds"]) for n in ("flash", "math"))
    print(f"whole updates ({runs['math']['trainer'].precision}), median of {args.rounds} "
          f"rounds of {args.updates}: flash {flash:.3f} s, math {math_:.3f} s, "
          f"math is {flash / math_:.3f}x as fast")
    return {"update_s": {"flash": round(flash, 4), "math": round(math_, 4)},
            "math_speedup": round(flash / math_, 3),
            "precision": runs["math"]["trainer"].precision}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=2048, help="tokens per update")
    p.add_argument("--reps", type=int, default=15, help="kernel calls per shape")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--updates", type=int, default=20, help="updates per kernel per round")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--skip-kernels", action="store_true")
    p.add_argument("--data-root", default=None,
                   help="the data dir (default: as the trainer: $TRANSFORMER_DATA, else "
                        "../shared/data beside this checkout)")
    add_option(p, "attention_kernel")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    figures = {} if args.skip_kernels else kernels(args.tokens, args.reps)
    with tempfile.TemporaryDirectory() as scratch:
        figures.update(updates(Path(scratch), args))
    save(args.record, "PyTorch's fused ('flash') CPU attention kernel against its math "
         "kernel: forward + backward at 8-16 pieces a sentence (fp32), and whole updates "
         f"of make train-tiny (median of {args.rounds} rounds of {args.updates})", figures,
         precision=figures.pop("precision"), threads=args.threads)


if __name__ == "__main__":
    main()
