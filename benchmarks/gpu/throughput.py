"""Training throughput on a GPU: ours vs torch.nn.Transformer vs Hugging Face Marian.

    python -m benchmarks.gpu.throughput --compile --json out.json   # base and big, bf16
    python -m benchmarks.gpu.throughput --dry-run                   # tiny, on the CPU (tested)

The models and batches of the CPU benchmark (``benchmarks.baselines``), at the paper's
sizes: each update accumulates micro-batches of ``--max-tokens`` padded slots per side
until about ``--update-tokens`` target tokens (the paper: 25,000), as the trainer does,
under bf16 autocast. Reports target tokens/s, model FLOPs per second (``model_flops``)
as a fraction of the bf16 matmul peak measured in the same run, and ours' ratios.

Implementations: ``ours`` is the trainer's form (FastTransformer, padding-free rows,
SequenceLoss); ``ours_padded`` the same on the padded layout (no data-dependent sizes);
``torch`` and ``marian`` as on a CPU (``benchmarks.baselines``). With ``--compile`` each
is also timed compiled: ours through :func:`transformer.fast.compile_layers` (what
``--compile`` does in the trainer), the others with ``torch.compile(model,
dynamic=True)``; the first update's time (the compilation) and the number of graphs
compiled are recorded. Rows run in order of importance, base first; with ``--budget-min``
no row starts after that many minutes (those left out are listed; by default every row
runs). The JSON record, with its provenance, is rewritten after every row.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time

import torch

from benchmarks.baselines import TorchTransformerMT, build_marian, make_batches, model_flops
from transformer import FastTransformer, ModelConfig
from transformer.fast import FastLabelSmoothingLoss, SequenceLoss, compile_layers
from transformer.measuring.provenance import provenance, write_record
from transformer.training.adam import paper_adam
from transformer.measuring.timing import Stopwatch, best_seconds


def matmul_peak(device, n: int, reps: int = 10) -> float:
    """Best bf16 GFLOP/s of an n^3 matrix multiply on ``device``."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    return 2 * n ** 3 / best_seconds(lambda: a @ b, reps, device) / 1e9


def build(name: str, cfg: ModelConfig, device, compile: bool):
    """(model, loss(batch) -> summed loss) for one of the implementations."""
    criterion = FastLabelSmoothingLoss(0.1, pad_id=cfg.pad_id)
    model = {"ours": lambda: FastTransformer(cfg),
             "ours_padded": lambda: FastTransformer(cfg, skip_padding=False),
             "torch": lambda: TorchTransformerMT(cfg),
             "marian": lambda: build_marian(cfg)}[name]().to(device).train()
    if name.startswith("ours"):
        if compile:
            compile_layers(model)
        forward = SequenceLoss(model, criterion)
        return model, lambda src, tgt_in, tgt_out: forward(src, tgt_in, tgt_out)
    if compile:
        model = torch.compile(model, dynamic=True)
    if name == "torch":
        return model, lambda src, tgt_in, tgt_out: criterion(model(src, tgt_in), tgt_out, "sum")

    def loss_of(src, tgt_in, tgt_out):
        logits = model(input_ids=src, attention_mask=(src != cfg.pad_id).long(),
                       decoder_input_ids=tgt_in, use_cache=False).logits
        return criterion(logits, tgt_out, "sum")
    return model, loss_of


def graphs_compiled() -> int:
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def time_updates(name, cfg, updates, device, compile, warmup):
    """Median seconds of an update after ``warmup`` untimed ones; the first update's
    seconds; graphs compiled on the way."""
    graphs = graphs_compiled()
    model, loss_of = build(name, cfg, device, compile)
    params = [p for p in model.parameters()]
    opt = paper_adam(params)                  # fused: on CUDA and on a CPU
    for group in opt.param_groups:
        group["lr"] = 1e-4
    times = []
    for micro in updates:
        with Stopwatch(device) as watch:
            n_tokens = sum(int((b[2] != cfg.pad_id).sum()) for b in micro)
            for src, tgt_in, tgt_out in micro:
                with torch.autocast(device.type, dtype=torch.bfloat16):
                    loss = loss_of(src, tgt_in, tgt_out) / n_tokens
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        times.append(watch.seconds)
    del model, opt, params
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"seconds": statistics.median(times[warmup:]), "first_update_s": times[0],
            "graphs_compiled": graphs_compiled() - graphs}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--presets", nargs="+", default=["base", "big"])
    p.add_argument("--update-tokens", type=int, default=25000)
    p.add_argument("--max-tokens", type=int, default=12500, help="padded slots per micro-batch")
    p.add_argument("--updates", type=int, default=6, help="timed updates per model")
    p.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--compile", action="store_true", help="also time torch.compile'd steps")
    p.add_argument("--models", nargs="+", default=["ours", "ours_padded", "torch", "marian"])
    p.add_argument("--budget-min", type=float, default=0.0,
                   help="start no row after this many minutes (the rest are listed as left "
                        "out; default 0: every row runs)")
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
    record = {"provenance": provenance(device=device), "peak_gflops": peak,
              "settings": {"update_tokens": args.update_tokens, "max_tokens": args.max_tokens,
                           "vocab": args.vocab, "updates": args.updates,
                           "warmup": args.warmup, "autocast": "bf16",
                           "budget_min": args.budget_min},
              "results": [], "left_out": []}
    start = time.perf_counter()
    plan = [(preset, compiled) for compiled in ([False, True] if args.compile else [False])
            for preset in args.presets]                  # every eager row first
    for preset, compiled in plan:
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
        row = {"preset": preset, "compile": compiled, "target_tokens": n_tokens,
               "micro_batches": per_update, "shapes": len({tuple(b[0].shape) + tuple(b[1].shape)
                                                           for b in batches})}
        for name in args.models:
            if args.budget_min and time.perf_counter() - start > 60 * args.budget_min:
                record["left_out"].append(f"{preset} {'compiled' if compiled else 'eager'} {name}")
                continue
            try:
                timed = time_updates(name, cfg, updates, device, compiled, args.warmup)
            except Exception as exc:                     # noqa: BLE001 - keep the others
                row[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
                continue
            row[name] = {**timed, "tokens_per_s": n_tokens / timed["seconds"],
                         "mfu": flops / timed["seconds"] / 1e9 / peak}
        for name in args.models[1:]:
            if "seconds" in row.get(name, {}) and "seconds" in row.get("ours", {}):
                row[f"ours/{name}"] = row[name]["seconds"] / row["ours"]["seconds"]
        record["results"].append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            write_record(args.json, record)
    record["wall_s"] = time.perf_counter() - start
    if args.json:
        write_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
