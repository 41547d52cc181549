"""Time the residual dropout forward + backward: ``nn.Dropout``, the 16-bit mask applied
as a bool tensor (``masked_fill`` with :func:`transformer.fast.dropout.drop_mask`), and
:class:`transformer.fast.CheapDropout` (the same mask applied with a bitwise AND).

    python -m benchmarks.cpu.dropout_speed [--rows 2000] [--threads 2] [--record PATH]

Rounds alternate the three; the best round of each is printed, in ms, and recorded with
``--record`` (``benchmarks.record``).
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from benchmarks.record import add_option, save
from transformer.fast.dropout import LEVELS, CheapDropout, drop_mask
from transformer.measuring.timing import Stopwatch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=2000, help="tokens (the recipe's update: ~2,000)")
    p.add_argument("--width", type=int, default=128, help="d_model (tiny preset: 128)")
    p.add_argument("--p", type=float, default=0.2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=50)
    add_option(p, "dropout_speed")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    scale = LEVELS / (LEVELS - round(args.p * LEVELS))
    cheap = CheapDropout(args.p).train()
    forms = {
        "nn.Dropout": lambda x: F.dropout(x, args.p, True),
        "bool mask (masked_fill)": lambda x: x.masked_fill(drop_mask(x.shape, args.p), 0) * scale,
        "CheapDropout (bitwise AND)": cheap,
    }
    short = dict(zip(forms, ("nn.Dropout", "bool mask", "bitwise AND")))
    ms = {}
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(args.rows, args.width, dtype=dtype, requires_grad=True)
        grad = torch.randn(args.rows, args.width, dtype=dtype)
        best = {name: float("inf") for name in forms}
        for _ in range(args.rounds):
            for name, form in forms.items():
                with Stopwatch() as watch:
                    for _ in range(args.calls):
                        form(x).backward(grad)
                best[name] = min(best[name], watch.seconds / args.calls)
        print(f"({args.rows}, {args.width}) {str(dtype).removeprefix('torch.')}, "
              f"{args.threads} threads, forward + backward:")
        for name, seconds in best.items():
            print(f"  {name:28s} {seconds * 1e3:7.3f} ms")
        ms[str(dtype).removeprefix("torch.").replace("bfloat16", "bf16").replace("float32", "fp32")] = {
            short[name]: round(seconds * 1e3, 3) for name, seconds in best.items()}
    save(args.record, f"residual dropout forward + backward at ({args.rows}, {args.width}), "
         f"p {args.p}: nn.Dropout, the 16-bit mask as a bool tensor, and CheapDropout's "
         f"bitwise AND; best of {args.rounds} rounds of {args.calls} calls, ms",
         {"ms": ms}, threads=args.threads)


if __name__ == "__main__":
    main()
