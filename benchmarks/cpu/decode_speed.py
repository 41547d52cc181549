"""Decoding speed: KV-cached greedy decoding against recomputing the whole prefix, and
beam search (beam 4) against greedy.

    python -m benchmarks.cpu.decode_speed                  # small preset, batch 64, 50 steps
    python -m benchmarks.cpu.decode_speed --threads 1 --batch 16 --steps 30

Part 1 runs exactly ``--steps`` decoder steps in a local loop that calls
``model.decode`` / ``model.project`` directly (argmax, EOS not special), once with a
:class:`~transformer.fast.KVCache` (one new position per step) and once feeding the
whole prefix every step (projecting only its last position, so the baseline does not pay
for logits it throws away). Part 2 times the library's ``greedy_decode`` and
``beam_search`` on the same sources, with ``max_extra = steps - source length`` so that
both may produce ``--steps`` tokens; the model is randomly initialised, so it rarely
emits EOS and both run close to the limit (the mean output length is printed).
Wall-clock times on a shared machine are noisy: other processes inflate them.
"""
from __future__ import annotations

import argparse
import sys

import torch

from benchmarks.record import add_option, save
from transformer import FastTransformer, KVCache, ModelConfig
from transformer.decoding import PAPER_SEARCH, beam_search, build_source_batch, greedy_decode
from transformer.measuring.timing import best_seconds


def fixed_steps(model, src, steps, use_cache):
    """Greedy tokens for exactly ``steps`` steps; returns (B, steps) ids."""
    cfg = model.cfg
    with torch.inference_mode():
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        prefix = torch.full((src.size(0), 1), cfg.bos_id, dtype=torch.long)
        cache = KVCache() if use_cache else None
        for _ in range(steps):
            if use_cache:
                states = model.decode(prefix[:, -1:], memory, src_mask, cache)
            else:
                states = model.decode(prefix, memory, src_mask)[:, -1:]
            token = model.project(states)[:, -1].argmax(-1)
            prefix = torch.cat([prefix, token[:, None]], dim=1)
    return prefix[:, 1:]


def timed(fn, repeats):
    """The best of ``repeats`` timed calls of ``fn``, and what the last call returned."""
    out = []
    return best_seconds(lambda: out.append(fn()), repeats), out[-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="small", help="ModelConfig preset (small, base, big)")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50, help="output tokens per sentence")
    p.add_argument("--src-len", type=int, default=20, help="source tokens, EOS included")
    p.add_argument("--beam", type=int, default=PAPER_SEARCH.beam_size)
    p.add_argument("--repeats", type=int, default=1, help="best of N timings")
    p.add_argument("--seed", type=int, default=0)
    add_option(p, "decode_speed")
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch < 1 or args.src_len < 1 or args.steps < args.src_len:
        p.error("need --steps >= --src-len >= 1 and --batch >= 1")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = ModelConfig.from_preset(args.preset, vocab_size=args.vocab)
    model = FastTransformer(cfg).eval()
    gen = torch.Generator().manual_seed(args.seed)
    tokens = torch.randint(4, cfg.vocab_size, (args.batch, args.src_len - 1), generator=gen)
    src = build_source_batch(tokens.tolist(), cfg.pad_id, cfg.eos_id)

    print(f"preset={args.preset} d_model={cfg.d_model} layers={cfg.n_encoder_layers}+"
          f"{cfg.n_decoder_layers} vocab={cfg.vocab_size} params={model.num_parameters():,}")
    print(f"batch={args.batch} src_len={args.src_len} steps={args.steps} "
          f"torch threads={torch.get_num_threads()} (shared machine: times are noisy)")
    fixed_steps(model, src[:2], 3, True)                                   # warm-up

    t_cache, tok_cache = timed(lambda: fixed_steps(model, src, args.steps, True), args.repeats)
    t_full, tok_full = timed(lambda: fixed_steps(model, src, args.steps, False), args.repeats)
    agree = (tok_cache == tok_full).float().mean().item()
    n_tok = args.batch * args.steps

    max_extra = args.steps - args.src_len
    t_greedy, greedy = timed(lambda: greedy_decode(model, src, max_extra=max_extra), args.repeats)
    t_beam, beam = timed(lambda: beam_search(model, src, beam_size=args.beam, alpha=PAPER_SEARCH.alpha,
                                             max_extra=max_extra), args.repeats)
    mean_len = lambda hyps: sum(map(len, hyps)) / len(hyps)  # noqa: E731

    rows = [
        ("recompute prefix, fixed steps", t_full, n_tok, "1.00x"),
        ("KV cache, fixed steps", t_cache, n_tok, f"{t_full / t_cache:.2f}x faster"),
        (f"greedy_decode (mean len {mean_len(greedy):.1f})", t_greedy,
         sum(map(len, greedy)), "1.00x"),
        (f"beam_search k={args.beam} (mean len {mean_len(beam):.1f})", t_beam,
         sum(map(len, beam)), f"{t_beam / t_greedy:.2f}x greedy's time"),
    ]
    print(f"\n{'method':<40} {'total s':>8} {'ms/sent':>8} {'tok/s':>8}  ratio")
    for name, secs, toks, ratio in rows:
        print(f"{name:<40} {secs:>8.2f} {1000 * secs / args.batch:>8.1f} "
              f"{toks / secs:>8.0f}  {ratio}")
    print(f"\ncached and recomputed decoding chose the same token at {100 * agree:.1f}% of "
          f"positions (float32)")
    options = " ".join(a for a in (argv if argv is not None else sys.argv[1:]))
    row = {"command": options.split(" --record")[0] or "(defaults)", "preset": args.preset,
           "kv_cache_speedup": round(t_full / t_cache, 2),
           "beam4_over_greedy": round(t_beam / t_greedy, 2),
           "cached_tokens_per_s": round(n_tok / t_cache), "same_tokens": agree}
    save(args.record, f"greedy decoding of {args.batch} sources for {args.steps} tokens with "
         f"the KV cache against recomputing the prefix, and beam {args.beam} against greedy; "
         f"random weights, best of {args.repeats}", {"rows": [row]}, precision="fp32",
         threads=args.threads)


if __name__ == "__main__":
    main()
