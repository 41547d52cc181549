"""Command line: ``python -m transformer train | translate | evaluate | average | demo``.

Examples::

    python -m transformer train --preset small --corpus multi30k-en-de --out runs/small \\
        --time-limit-min 30
    echo "A man is riding a bike." | python -m transformer translate runs/small/average.pt
    python -m transformer evaluate runs/small/average.pt --corpus multi30k-en-de --split test
    python -m transformer average runs/small/checkpoints/step_*.pt --out avg.pt
    torchrun --nproc_per_node 8 -m transformer train --preset base --corpus wmt14 ...
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from .config import PRESETS


def _add_train(sub):
    from .trainer import TrainConfig
    d = TrainConfig()
    p = sub.add_parser("train", help="train a model (resumes when --out holds a run)",
                       description="Train an English-German Transformer. Running the same "
                       "command again resumes from the newest complete checkpoint.")
    p.add_argument("--preset", choices=sorted(PRESETS), default=d.preset,
                   help="model size: small (CPU), base or big (Table 3)")
    p.add_argument("--corpus", default=d.corpus,
                   help="folder under the data dir (multi30k-en-de, tatoeba-en-de) or a path "
                        "holding {train,valid,test}.{src,tgt}[.gz]")
    p.add_argument("--direction", default=d.direction, choices=["en-de", "de-en"])
    p.add_argument("--data-root", default=None, help="data dir (default $TRANSFORMER_DATA)")
    p.add_argument("--out", default=d.out_dir, help="run folder (checkpoints, logs, vocabulary)")
    p.add_argument("--vocab-size", type=int, default=d.vocab_size)
    p.add_argument("--max-tokens", type=int, default=d.max_tokens, help="tokens per micro-batch")
    p.add_argument("--update-tokens", type=int, default=d.update_tokens,
                   help="target tokens per update (gradient accumulation; paper: 25000)")
    p.add_argument("--max-updates", type=int, default=0)
    p.add_argument("--max-epochs", type=int, default=0)
    p.add_argument("--time-limit-min", type=float, default=0.0,
                   help="stop after this many minutes of training")
    p.add_argument("--warmup", type=int, default=d.warmup)
    p.add_argument("--lr-factor", type=float, default=d.lr_factor)
    p.add_argument("--label-smoothing", type=float, default=d.label_smoothing)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--precision", default=d.precision, choices=["auto", "fp32", "bf16", "fp16"])
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-bleu-sentences", type=int, default=d.eval_bleu_sentences)
    p.add_argument("--save-every", type=int, default=d.save_every)
    p.add_argument("--keep-last", type=int, default=d.keep_last)
    p.add_argument("--log-every", type=int, default=d.log_every)
    p.add_argument("--max-len", type=int, default=d.max_len,
                   help="skip training pairs longer than this many tokens")
    p.add_argument("--device", default="auto")
    p.add_argument("--model", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a ModelConfig field, e.g. --model norm_position=pre")
    p.add_argument("--no-progress", action="store_true")


def train_command(cfg, out: str | None = None) -> list[str]:
    """The ``python -m transformer train`` arguments that reproduce TrainConfig ``cfg``."""
    import dataclasses
    from .trainer import TrainConfig
    default = TrainConfig()
    args = ["python", "-m", "transformer", "train", "--out", out or cfg.out_dir]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name == "out_dir" or value == getattr(default, f.name):
            continue
        if f.name == "model_overrides":
            args += [a for k, v in value.items() for a in ("--model", f"{k}={json.dumps(v)}")]
        elif f.name == "progress":
            args.append("--no-progress")
        elif f.name == "compile":
            args.append("--compile")
        else:
            args += ["--" + f.name.replace("_", "-"), str(value)]
    return args


def _model_overrides(pairs):
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--model expects FIELD=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def cmd_train(args):
    from .trainer import TrainConfig, Trainer
    cfg = TrainConfig(out_dir=args.out, corpus=args.corpus, direction=args.direction,
                      data_root=args.data_root, preset=args.preset,
                      model_overrides=_model_overrides(args.model), vocab_size=args.vocab_size,
                      max_tokens=args.max_tokens, update_tokens=args.update_tokens,
                      max_updates=args.max_updates, max_epochs=args.max_epochs,
                      time_limit_min=args.time_limit_min, warmup=args.warmup,
                      lr_factor=args.lr_factor, label_smoothing=args.label_smoothing,
                      seed=args.seed, precision=args.precision, compile=args.compile,
                      threads=args.threads, eval_every=args.eval_every,
                      eval_bleu_sentences=args.eval_bleu_sentences, save_every=args.save_every,
                      keep_last=args.keep_last, log_every=args.log_every, device=args.device,
                      max_len=args.max_len,
                      progress=not args.no_progress)
    trainer = Trainer(cfg)
    if trainer.dist.main:
        print(f"model: {trainer.model_cfg.extra.get('preset')} "
              f"{trainer.model.num_parameters():,} parameters, precision {trainer.precision}, "
              f"device {trainer.device}, {trainer.accum} micro-batch(es) per update, "
              f"padding {trainer.train_iter.padding_fraction():.1%}"
              + (f"; resumed from {trainer.resumed_from}" if trainer.resumed_from else ""),
              flush=True)
    result = trainer.fit()
    if trainer.dist.main:
        print(json.dumps(result))


def _decode_args(p):
    p.add_argument("checkpoint", help="a checkpoint file (e.g. run/average.pt)")
    p.add_argument("--beam", type=int, default=4, help="beam size (1 = greedy)")
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty")
    p.add_argument("--max-extra", type=int, default=50, help="output length limit: source + this")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)


def _load(args):
    import torch
    from .trainer import load_model, resolve_device
    if args.threads:
        torch.set_num_threads(args.threads)
    return load_model(args.checkpoint, resolve_device(args.device))


def cmd_translate(args):
    from .decoding import translate
    model, tokenizer = _load(args)
    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    lines = [line.rstrip("\n") for line in source]
    outputs = translate(model, tokenizer, lines, beam_size=args.beam, alpha=args.alpha,
                        max_extra=args.max_extra, device=next(model.parameters()).device)
    sink = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    for line in outputs:
        sink.write(line + "\n")
    sink.flush()


def cmd_evaluate(args):
    from .data import load_corpus
    from .decoding import translate
    from .evaluate import format_score, score
    model, tokenizer = _load(args)
    corpus = load_corpus(args.corpus, args.split, args.direction, args.data_root)
    src, ref = corpus.src[:args.limit or None], corpus.tgt[:args.limit or None]
    start = time.perf_counter()
    hyps = translate(model, tokenizer, src, beam_size=args.beam, alpha=args.alpha,
                     max_extra=args.max_extra, device=next(model.parameters()).device)
    seconds = time.perf_counter() - start
    result = score(hyps, ref)
    print(format_score(result))
    print(f"{len(src)} sentences of {args.corpus}/{args.split} ({args.direction}), beam "
          f"{args.beam}, alpha {args.alpha}, {seconds:.1f} s")
    if args.hypotheses:
        with open(args.hypotheses, "w", encoding="utf-8") as f:
            f.writelines(h + "\n" for h in hyps)


def cmd_average(args):
    from pathlib import Path
    from .checkpoint import average_checkpoints, save_checkpoint, step_checkpoints
    paths = list(args.checkpoints)
    if len(paths) == 1 and Path(paths[0]).is_dir():
        paths = step_checkpoints(paths[0])
    paths = paths[-args.last:] if args.last else paths
    save_checkpoint(average_checkpoints(paths), args.out)
    print(f"averaged {len(paths)} checkpoints into {args.out}")


def cmd_demo(args):
    """A few training steps of a tiny model on real data: shapes and falling losses."""
    import torch
    from .trainer import TrainConfig, Trainer
    import tempfile
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig(out_dir=out, corpus="multi30k-en-de", vocab_size=1000,
                          model_overrides=dict(d_model=64, d_ff=128, n_heads=4,
                                               n_encoder_layers=2, n_decoder_layers=2),
                          max_tokens=1024, update_tokens=1024, max_updates=args.steps,
                          warmup=20, log_every=5, eval_bleu_sentences=0, progress=False,
                          save_every=10**9)
        trainer = Trainer(cfg)
        batch = next(iter(trainer.train_iter))
        print(f"batch: src {tuple(batch.src.shape)}, tgt_in {tuple(batch.tgt_in.shape)}, "
              f"logits {tuple(trainer.model(batch.src, batch.tgt_in).shape)}")
        result = trainer.fit()
        for line in open(f"{out}/metrics.jsonl"):
            print(line.strip())
        print(json.dumps(result))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m transformer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train(sub)
    p = sub.add_parser("translate", help="translate stdin or a file, one sentence per line")
    _decode_args(p)
    p.add_argument("--input", help="input file (default stdin)")
    p.add_argument("--output", help="output file (default stdout)")
    p = sub.add_parser("evaluate", help="sacrebleu BLEU and chrF on a corpus split")
    _decode_args(p)
    p.add_argument("--corpus", default="multi30k-en-de")
    p.add_argument("--split", default="test")
    p.add_argument("--direction", default="en-de", choices=["en-de", "de-en"])
    p.add_argument("--data-root", default=None)
    p.add_argument("--limit", type=int, default=0, help="first N sentences only")
    p.add_argument("--hypotheses", help="write the translations to this file")
    p = sub.add_parser("average", help="average checkpoints (section 6.1)")
    p.add_argument("checkpoints", nargs="+", help="checkpoint files, or one checkpoints folder")
    p.add_argument("--last", type=int, default=0, help="only the last N")
    p.add_argument("--out", required=True)
    p = sub.add_parser("demo", help="train a tiny model a few steps on Multi30k")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from .checkpoint import CheckpointError
    from .trainer import TrainingError
    command = {"train": cmd_train, "translate": cmd_translate, "evaluate": cmd_evaluate,
               "average": cmd_average, "demo": cmd_demo}[args.command]
    try:
        command(args)
    except (CheckpointError, TrainingError, ValueError, FileNotFoundError) as exc:
        # Problems with the user's input or files: one clear line, no traceback.
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
