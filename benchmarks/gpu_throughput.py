"""Training throughput on a GPU: ours vs torch.nn.Transformer vs Hugging Face Marian.

    python benchmarks/gpu_throughput.py                       # base and big, bf16, eager
    python benchmarks/gpu_throughput.py --compile             # and torch.compile'd
    python benchmarks/gpu_throughput.py --dry-run             # tiny, on the CPU (tested)

The models and batches of ``train_throughput.py`` (the CPU benchmark), at the paper's
sizes: each update accumulates micro-batches of ``--max-tokens`` padded slots per side
until about ``--update-tokens`` target tokens (the paper: 25,000), as the trainer does,
under bf16 autocast. Reports target tokens/s, model FLOPs per second (``model_flops``)
as a fraction of the bf16 matmul peak measured in the same run, and ours' ratios.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_throughput import (TorchTransformerMT, build_marian, make_batches,  # noqa: E402
                              model_flops)

from transformer import FastTransformer, ModelConfig  # noqa: E402
from transformer.fast import FastLabelSmoothingLoss, SequenceLoss  # noqa: E402


def matmul_peak(device, n: int, reps: int = 10) -> float:
    """Best bf16 GFLOP/s of an n^3 matrix multiply on ``device``."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    best = 0.0
    for _ in range(reps):
        sync(device)
        t = time.perf_counter()
        a @ b
        sync(device)
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def build(name: str, cfg: ModelConfig, device, compile: bool):
    """(model, loss(batch) -> summed loss) for one of the three implementations."""
    criterion = FastLabelSmoothingLoss(0.1, pad_id=cfg.pad_id)
    model = {"ours": lambda: FastTransformer(cfg), "torch": lambda: TorchTransformerMT(cfg),
             "marian": lambda: build_marian(cfg)}[name]().to(device).train()
    if name == "ours":
        forward = SequenceLoss(model, criterion)
        loss_of = lambda src, tgt_in, tgt_out: forward(src, tgt_in, tgt_out)  # noqa: E731
    elif name == "torch":
        loss_of = lambda src, tgt_in, tgt_out: criterion(model(src, tgt_in), tgt_out, "sum")  # noqa: E731
    else:
        def loss_of(src, tgt_in, tgt_out):
            logits = model(input_ids=src, attention_mask=(src != cfg.pad_id).long(),
                           decoder_input_ids=tgt_in, use_cache=False).logits
            return criterion(logits, tgt_out, "sum")
    if compile:
        loss_of = torch.compile(loss_of, dynamic=True)
    return model, loss_of


def time_updates(name, cfg, updates, device, compile, warmup):
    model, loss_of = build(name, cfg, device, compile)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                           fused=device.type in ("cuda", "cpu"))
    times = []
    for i, micro in enumerate(updates):
        sync(device)
        t = time.perf_counter()
        n_tokens = sum(int((b[2] != cfg.pad_id).sum()) for b in micro)
        for src, tgt_in, tgt_out in micro:
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = loss_of(src, tgt_in, tgt_out) / n_tokens
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t)
    del model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--presets", nargs="+", default=["base", "big"])
    p.add_argument("--update-tokens", type=int, default=25000)
    p.add_argument("--max-tokens", type=int, default=12500, help="padded slots per micro-batch")
    p.add_argument("--updates", type=int, default=6, help="timed updates per model")
    p.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--compile", action="store_true", help="also time torch.compile'd steps")
    p.add_argument("--models", nargs="+", default=["ours", "torch", "marian"])
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--dry-run", action="store_true",
                   help="tiny dims, two updates, on the CPU: checks the script runs")
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    if "marian" in args.models and importlib.util.find_spec("transformers") is None:
        print("transformers is not installed: Marian left out (pip install transformers)")
        args.models = [m for m in args.models if m != "marian"]
    if args.dry_run:
        args.presets, args.update_tokens, args.max_tokens = ["small"], 600, 300
        args.updates, args.warmup, args.vocab = 1, 1, 200
    peak = matmul_peak(device, 8192 if device.type == "cuda" else 256,
                       reps=10 if device.type == "cuda" else 2)
    where = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"{where}, torch {torch.__version__}; bf16 matmul peak {peak:,.0f} GFLOP/s")
    results = []
    for preset in args.presets:
        overrides = dict(d_model=32, d_ff=64, n_heads=2, n_encoder_layers=1,
                         n_decoder_layers=1) if args.dry_run else {}
        cfg = ModelConfig.from_preset(preset, vocab_size=args.vocab, **overrides)
        per_update = max(1, round(args.update_tokens / (args.max_tokens * 0.8)))
        batches = make_batches(per_update * (args.updates + args.warmup), args.max_tokens,
                               cfg.vocab_size)
        batches = [tuple(t.to(device) for t in b) for b in batches]
        updates = [batches[i:i + per_update] for i in range(0, len(batches), per_update)]
        n_tokens = statistics.mean(sum(int((b[2] != cfg.pad_id).sum()) for b in u)
                                   for u in updates)
        flops = statistics.mean(sum(model_flops(cfg, b[0], b[2]) for b in u) for u in updates)
        for compiled in ([False, True] if args.compile else [False]):
            row = {"preset": preset, "compile": compiled, "target_tokens": n_tokens,
                   "micro_batches": per_update}
            for name in args.models:
                seconds = time_updates(name, cfg, updates, device, compiled, args.warmup)
                row[name] = {"seconds": seconds, "tokens_per_s": n_tokens / seconds,
                             "mfu": flops / seconds / 1e9 / peak}
            for name in args.models[1:]:
                row[f"ours/{name}"] = row[name]["seconds"] / row["ours"]["seconds"]
            results.append(row)
            print(json.dumps(row))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": where, "peak_gflops": peak,
                                               "torch": torch.__version__,
                                               "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
