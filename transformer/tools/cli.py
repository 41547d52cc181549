"""Command line: ``python -m transformer fetch | train | prepare | translate | evaluate |
average | export | ablate | demo``.

Each command is a pair, side by side below: ``add_NAME(sub)`` gives its options and
``cmd_NAME(args)`` runs it; :data:`COMMANDS` lists them in the order ``--help`` shows.
The options of ``train`` are generated from the fields of
:class:`~transformer.training.config.TrainConfig` (name, type, default, help, choices and
bounds from each field's metadata), and :func:`train_command` writes the command that
reproduces a configuration.

What goes wrong is told apart (:func:`main`): what the user can fix (a
:class:`~transformer.errors.UserError`: a bad value, a damaged or foreign file, a missing
package; or an error of the operating system: a missing or read-only folder, a full disk)
ends the program with one line naming the file or option (exit status 2); anything else
is a bug in the package, shown with its traceback and a line asking for a report.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import json
import shlex
import signal
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import warnings
from pathlib import Path

import torch

from ..checkpoint import average_checkpoints, checkpoint_file, save_checkpoint, step_checkpoints
from ..corpora.fetching import fetch
from ..corpora.registry import fetched_names
from ..data import load_corpus
from ..decoding import PAPER_SEARCH, check_search
from ..doubt import cross_attention, doubt
from ..translation import translate, translations
from ..errors import ISSUES, InputError, UserError
from ..evaluate import format_score, score
from ..inference import load_model, resolve_device
from ..output import open_output
from ..training.command import train_command  # noqa: F401  (chapter 7 imports it from here)
from ..training.command import train_config
from ..training.config import MAX_SEED, MIN_VOCABULARY, TrainConfig, TrainingError
from ..training.loop import Trainer
from ..training.corpus_files import PreparedCorpus
from ..training.prepare import DEFAULT_SAMPLE, prepare_corpus
from ..training.recipes import RECIPES, describe, recipe
from .ablation import BUDGETS, GROUPS, run_table, select_rows
from .export import export_checkpoint
from .host_memory import exec_with_jemalloc
from .interrupts import CtrlCBetweenLines
from . import words
from .options import (DescribedHelpFormatter, HelpFormatter, add_common, add_json,
                      add_train_options, bounded)
from ..measuring.provenance import provenance, record_text

DESCRIPTION = """\
Train, run and score the Transformer of "Attention Is All You Need" (English-German).

examples:
  python -m transformer fetch multi30k-en-de tatoeba-en-de     # once (first use does it too)
  python -m transformer train --recipe tiny --out runs/tiny      # the 30-minute CPU recipe
  python -m transformer train --recipe small --out runs/small --warmup 800
  echo "A man is riding a bike." | python -m transformer translate runs/small/average.pt
  python -m transformer evaluate runs/small/average.pt --corpus multi30k-en-de --split test --json score.json
  python -m transformer average runs/small/checkpoints --last 5 --out runs/small/avg5.pt
  python -m transformer ablate --rows A,B --updates 400 --out runs/table3
  python -m transformer ablate --budget gpu --base-seeds 2 --jobs 4 --out runs/table3_gpu
  torchrun --nproc_per_node 8 -m transformer train --recipe base-wmt14 --out runs/base
  python -m transformer prepare --recipe base-wmt14 --out data/wmt14-prepared  # once, then
  torchrun --nproc_per_node 8 -m transformer train --recipe base-wmt14 --corpus data/wmt14-prepared

Each command has --help.
"""


# -------------------- what the commands share
def _search(kind, setting: str, low: int):
    """An argparse type for a search setting (beam_size, alpha, max_extra) of at least
    ``low``, also checked by :func:`transformer.decoding.check_search`, as the Python API
    checks it (the options' bounds test holds the two to the same values)."""
    return bounded(kind, low, check=lambda value: check_search(**{setting: value}))


SEARCH_OPTIONS = {"beam_size": "beam", "alpha": "alpha", "max_extra": "max_extra"}
"""Each search setting a command may take, by the option's name in ``args``."""


def _add_search(p, beam_help: str = "beam size (1 = greedy)", max_extra: bool = True) -> None:
    """``--beam``, ``--alpha`` and (with ``max_extra``) ``--max-extra``: the search settings
    of section 6.1, which :func:`main` gathers into one :class:`~transformer.decoding.Search`
    (``args.search``) before the command runs."""
    p.add_argument("--beam", type=_search(int, "beam_size", 1), default=PAPER_SEARCH.beam_size,
                   help=beam_help)
    p.add_argument("--alpha", type=_search(float, "alpha", 0), default=PAPER_SEARCH.alpha,
                   help="length penalty exponent (section 6.1)")
    if max_extra:
        p.add_argument("--max-extra", type=_search(int, "max_extra", 0),
                       default=PAPER_SEARCH.max_extra,
                       help="output length limit: source length + this")


def gather_search(args) -> None:
    """``args.search``: the one :class:`~transformer.decoding.Search` of the command's
    search options (those it lacks at the paper's), which replaces them in ``args``; a
    command without search options is left as it is."""
    given = {setting: vars(args).pop(name) for setting, name in SEARCH_OPTIONS.items()
             if name in vars(args)}
    if given:
        args.search = PAPER_SEARCH.replace(**given)


def _decode_args(p):
    p.add_argument("checkpoint", help="a checkpoint file (e.g. run/average.pt)")
    _add_search(p)
    p.add_argument("--tokenizer", default=None,
                   help="the vocabulary (spm.model) of a checkpoint that carries neither its "
                        "tokenizer nor its fingerprint (written by an older version): you "
                        "vouch that it is the one the model was trained with (default: the "
                        "checkpoint's own, else the spm.model of its run folder)")
    add_common(p, "device", "threads")


def _load(args):
    """The model and tokenizer of ``args.checkpoint`` on ``--device``."""
    device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    return load_model(args.checkpoint, device, tokenizer=args.tokenizer)


class Interrupted(Exception):
    """Ctrl-C: the message says what was kept (exit status 130, no traceback)."""


def _describe(exc: OSError) -> str:
    """One line for an error of the operating system, naming the file."""
    if exc.strerror is None:                    # raised by this package with its own words
        return str(exc)
    if exc.errno == errno.ENOSPC:
        return "no space left on device" + (f" writing {exc.filename}" if exc.filename else "")
    return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror



# -------------------- fetch
def add_fetch(sub):
    p = sub.add_parser("fetch", help="put corpora into the data dir (first use does it too)",
                       formatter_class=HelpFormatter,
                       description="Fetch each corpus into the data dir, checking every "
                                   "file's SHA-256; a folder already there is checked, "
                                   "never replaced.")
    p.add_argument("corpora", nargs="+", choices=fetched_names(), metavar="CORPUS",
                   help=f"one or more of: {', '.join(fetched_names())}")
    add_common(p, "data_root")
    p.add_argument("--url", help="a mirror of a downloaded corpus (default: its source, or "
                                 "$TRANSFORMER_MULTI30K_URL for Multi30k)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(handler=cmd_fetch)


def cmd_fetch(args):
    """Fetch each corpus named (transformer.corpora), or check the folder it is in."""
    for name in args.corpora:
        folder = fetch(name, args.data_root, url=args.url, progress=args.progress)
        print(f"{name}: {folder}")



# -------------------- train
def add_train(sub):
    p = sub.add_parser(
        "train", help="train a model (resumes when --out holds a run)",
        formatter_class=DescribedHelpFormatter,
        description=textwrap.fill(
            "Train an English-German Transformer (section 5). Running the same command "
            "again resumes from the newest complete checkpoint.", 88) + "\n\n" + textwrap.fill(
            "With --recipe NAME the run is that recipe (transformer/training/recipes.py) and "
            "each option given overrides its field; without it, an option left out takes "
            "the default shown.", 88)
        + "\n\nrecipes:\n" + "\n".join(f"  {describe(name)}" for name in RECIPES))
    p.add_argument("--recipe", choices=list(RECIPES), default=None,
                   help="a named run to start from (listed above); the options given "
                        "override its fields (default: none, each field's default)")
    add_train_options(p)
    add_json(p, "the result as one JSON line (what fit() returns), for scripts")
    p.set_defaults(handler=cmd_train)


def cmd_train(args):
    """``train``: build the TrainConfig from the options, train (or resume), print the result."""
    cfg = train_config(args)
    trainer = Trainer.from_config(cfg, recipe=args.recipe, command=shlex.join(
        ["python", "-m", "transformer", *args.argv]))
    if trainer.dist.main:
        print(f"model: {trainer.model_cfg.extra.get('preset')} "
              f"{trainer.model.num_parameters():,} parameters, precision {trainer.precision}, "
              f"device {trainer.device}"
              + (f" ({trainer.dist.world} process(es), {trainer.dist.backend})"
                 if trainer.dist.distributed else "")
              + f", {trainer.accum} micro-batch(es) per update, "
              f"padding {trainer.train_iter.padding_fraction():.1%}"
              + (f"; resumed from {trainer.resumed_from}" if trainer.resumed_from else ""),
              flush=True)
    try:
        result = trainer.fit()
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted at update {trainer.step}; "
                          f"{trainer.last_checkpoint_text()}; run the same command to "
                          f"resume") from None
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise TrainingError(f"{_describe(exc)}; nothing lost, "
                                f"{trainer.last_checkpoint_text()}") from None
        raise
    if trainer.dist.main:
        if args.as_json:
            print(json.dumps(result))
        else:
            print(f"done: {words.result_sentence(result)}. The run is in {cfg.out_dir} "
                  f"(metrics.jsonl, summary.json, average.pt)")



# -------------------- prepare
def add_prepare(sub):
    meta = {f.name: f.metadata["help"] for f in dataclasses.fields(TrainConfig)}
    p = sub.add_parser(
        "prepare", help="prepare a large corpus once: BPE on a sample, token ids on disk "
                        "that every training process memory-maps",
        formatter_class=HelpFormatter,
        description="Read the train and valid splits of a corpus in pieces, train the BPE "
        "vocabulary on a random sample of pairs, encode every pair and write OUT: token ids "
        "and offsets per language, spm.model and prepared.json "
        "(transformer/training/corpus_files.py). Train from it with --corpus OUT: every "
        "process (every GPU under torchrun) maps the same files. --corpus wmt14 is prepared "
        "this way on first use by train itself.")
    p.add_argument("--corpus", default=None,
                   help=meta["corpus"] + " (default: the recipe's, else multi30k-en-de)")
    p.add_argument("--out", required=True, help="the folder to write (required)")
    p.add_argument("--recipe", choices=list(RECIPES), default=None,
                   help="take --corpus, --vocab-size and --seed from this recipe (e.g. "
                        "base-wmt14); the options given override them (default: none)")
    p.add_argument("--vocab-size", type=bounded(int, MIN_VOCABULARY), default=None,
                   help=meta["vocab_size"] + " (default: the recipe's, else "
                        f"{TrainConfig().vocab_size}); train must use the same")
    p.add_argument("--seed", type=bounded(int, 0, MAX_SEED), default=None,
                   help="seed of the BPE sample (default: the recipe's, else "
                        f"{TrainConfig().seed})")
    p.add_argument("--sample", type=bounded(int, 1), default=DEFAULT_SAMPLE,
                   help="train the vocabulary on this many sentence pairs drawn at random "
                        "(all of them when the corpus has no more)")
    p.add_argument("--workers", type=bounded(int, 0), default=0,
                   help="processes that encode (0: one per CPU, at most 8)")
    add_common(p, "data_root")
    p.set_defaults(handler=cmd_prepare)


def cmd_prepare(args):
    """``prepare``: a corpus into memory-mapped token ids (transformer.training.prepare; the
    format, transformer.training.corpus_files)."""
    given = {k: v for k, v in (("corpus", args.corpus), ("vocab_size", args.vocab_size),
                               ("seed", args.seed), ("data_root", args.data_root))
             if v is not None}
    cfg = recipe(args.recipe, **given) if args.recipe else TrainConfig(**given)
    out = prepare_corpus(cfg, args.out, sample=args.sample, workers=args.workers,
                         log=lambda line: print(line, flush=True))
    store = PreparedCorpus(out)
    for split in ("train", "valid"):
        entry = store.manifest["splits"][split]
        print(f"{split}: {entry['pairs']:,} pairs, {entry['tokens']['en']:,} English and "
              f"{entry['tokens']['de']:,} German tokens")
    print(f"train with: python -m transformer train --corpus {out} --vocab-size "
          f"{store.vocab_size} ...")



# -------------------- translate
def add_translate(sub):
    p = sub.add_parser("translate", help="translate stdin or a file, one sentence per line",
                       formatter_class=HelpFormatter)
    _decode_args(p)
    p.add_argument("--input", help="input file, UTF-8, one sentence per line (default: stdin)")
    p.add_argument("--output", help="output file (default: stdout)")
    p.set_defaults(handler=cmd_translate)


def read_sentences(path: str | None) -> list[str]:
    """The lines of ``path`` (stdin when ``None``), one sentence each; bytes that are not
    UTF-8 raise :class:`~transformer.errors.InputError` naming the file (or ``<stdin>``) and the line."""
    name = path or "<stdin>"
    try:
        source = open(path, "rb") if path else contextlib.nullcontext(sys.stdin.buffer)
    except FileNotFoundError:
        raise FileNotFoundError(f"input file not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"--input {path} is a folder, not a file") from None
    lines = []
    with source as f:
        for number, raw in enumerate(f, start=1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as e:
                raise InputError(f"{name}: line {number} is not valid UTF-8 ({e.reason} at "
                                 f"byte {e.start})") from None
    return lines


def cmd_translate(args):
    """``translate``: decode each input line with beam search (section 6.1), writing each
    translation as soon as it and the ones before it are done (a blank line stays blank).
    An ``--output`` file is written beside its name and renamed into place when complete
    (:mod:`transformer.output`); on Ctrl-C the finished lines are put in place and the
    message says how many."""
    model, tokenizer = _load(args)
    ctrl_c, sink, lines, written = CtrlCBetweenLines(), None, None, 0
    try:
        ctrl_c.install()
        # opened before reading and decoding: a path that cannot be written fails at once
        sink = open_output(args.output)
        lines = read_sentences(args.input)
        for done in translations(model, tokenizer, lines, args.search,
                                 device=next(model.parameters()).device):
            with ctrl_c.held():
                sink.write(done.text + "\n")
                written += 1
            reason = doubt(done.source, model.cfg.unk_id, done.text,
                           [tokenizer.id_to_piece(i) for i in done.ids],
                           source=lines[written - 1],
                           source_pieces=[tokenizer.id_to_piece(i) for i in done.source],
                           cross=cross_attention(model, done.source, done.ids)
                           if done.source and done.ids else None)
            if reason:                     # on stderr: the output keeps one line per input
                print(f"line {written}: the model is unsure: {reason}", file=sys.stderr)
        ctrl_c.holding = True              # all written: a Ctrl-C now changes nothing
        sink.commit()
    except KeyboardInterrupt:
        ctrl_c.holding = True              # a second Ctrl-C does not cut this short
        if lines is None:                  # before any translation: the old file stays
            raise
        sink.commit()                      # the finished lines, whole, in place
        raise Interrupted(f"interrupted: the first {written} of {len(lines)} translations "
                          f"are in {args.output or 'the output'}") from None
    finally:
        if sink is not None:
            sink.discard()                 # after a failure; nothing once committed
        ctrl_c.restore()



# -------------------- evaluate
def add_evaluate(sub):
    p = sub.add_parser("evaluate", help="sacrebleu BLEU and chrF on a corpus split",
                       formatter_class=HelpFormatter)
    _decode_args(p)
    add_common(p, "corpus", "direction", "data_root")
    p.add_argument("--split", default="test", help="train, valid or test")
    p.add_argument("--limit", type=bounded(int, 0), default=0,
                   help="score the first N sentences only (0: all)")
    p.add_argument("--hypotheses", help="write the translations to this file "
                                        "(default: not written)")
    p.add_argument("--json", help="write the scores, the settings and their provenance "
                                  "to this JSON file (default: not written)")
    p.set_defaults(handler=cmd_evaluate)


def cmd_evaluate(args):
    """``evaluate``: translate a corpus split and score it with sacrebleu BLEU and chrF."""
    corpus = load_corpus(args.corpus, args.split, args.direction, args.data_root)
    model, tokenizer = _load(args)
    src, ref = corpus.src[:args.limit or None], corpus.tgt[:args.limit or None]
    # opened before any decoding: a path that cannot be written fails now, not at the end
    with contextlib.ExitStack() as outputs:
        hypotheses, record = (outputs.enter_context(open_output(path)) if path else None
                              for path in (args.hypotheses, args.json))
        start = time.perf_counter()
        hyps = translate(model, tokenizer, src, args.search,
                         device=next(model.parameters()).device)
        seconds = time.perf_counter() - start
        if hypotheses is not None:
            hypotheses.write("".join(h + "\n" for h in hyps))
        result = score(hyps, ref)
        print(format_score(result))
        print(f"{len(src)} sentences of {args.corpus}/{args.split} ({args.direction}), beam "
              f"{args.search.beam_size}, alpha {args.search.alpha}, {seconds:.1f} s", flush=True)
        if record is not None:
            record.write(record_text({
                "provenance": provenance(shlex.join(["python", "-m", "transformer",
                                                     *args.argv]),
                                         next(model.parameters()).device),
                "checkpoint": str(args.checkpoint), "corpus": str(args.corpus),
                "split": args.split, "direction": args.direction, "sentences": len(src),
                "beam": args.search.beam_size, "alpha": args.search.alpha,
                "max_extra": args.search.max_extra, "decode_seconds": round(seconds, 2),
                **{k: v for k, v in result.items() if k != "n"}}))



# -------------------- average
def add_average(sub):
    p = sub.add_parser("average", help="average checkpoints (section 6.1)",
                       formatter_class=HelpFormatter)
    p.add_argument("checkpoints", nargs="+", help="checkpoint files, or one checkpoints folder")
    p.add_argument("--last", type=bounded(int, 0), default=0,
                   help="only the last N (0: all)")
    p.add_argument("--out", required=True, help="the averaged checkpoint to write (required)")
    p.set_defaults(handler=cmd_average)


def cmd_average(args):
    """``average``: the element-wise mean of checkpoints (section 6.1) into ``--out``."""
    paths = list(args.checkpoints)
    if len(paths) == 1 and Path(paths[0]).is_dir():
        paths = step_checkpoints(paths[0])
        if not paths:
            raise FileNotFoundError(f"no step_*.pt checkpoints in {args.checkpoints[0]}")
    paths = [checkpoint_file(p) for p in (paths[-args.last:] if args.last else paths)]
    with open_output(args.out, make_parents=True) as out:     # checked before the work
        state = average_checkpoints(paths)
        save_checkpoint(state, out)
    print(f"averaged {len(paths)} checkpoint{'s' if len(paths) > 1 else ''} into {args.out}")



# -------------------- export
def add_export(sub):
    p = sub.add_parser("export", help="ONNX graphs + tokenizer + manifest, for the browser",
                       formatter_class=HelpFormatter)
    p.add_argument("checkpoint", help="a checkpoint file (e.g. run/average.pt)")
    p.add_argument("--out", required=True, help="the folder to write (required)")
    # 14: the first opset with Trilu (the causal mask); 20: the last the TorchScript
    # exporter (dynamo=False, transformer/tools/export.py) writes
    p.add_argument("--opset", type=bounded(int, 14, 20), default=17, help="ONNX opset version")
    p.add_argument("--weights", choices=["fp32", "fp16", "int8"], default="fp32",
                   help="how weights.bin stores the weight matrices (int8: one scale a row; "
                   "the graphs restore fp32 when loaded)")
    _add_search(p, beam_help="the page's beam size (the manifest's decoding settings)")
    p.set_defaults(handler=cmd_export)


def cmd_export(args):
    """``export``: ONNX graphs, tokenizer and manifest of a checkpoint (for the browser).
    The folder is written whole or not at all (:func:`transformer.output.output_folder`);
    a Ctrl-C during the export leaves ``--out`` as it was, one once it is in place is held
    back until the report is printed: either way the message says what ``--out`` holds
    (status 130), as for ``translate``."""
    ctrl_c, manifest = CtrlCBetweenLines(), None
    try:
        ctrl_c.install()
        manifest = export_checkpoint(args.checkpoint, args.out, opset=args.opset,
                                     weights=args.weights, search=args.search)
        ctrl_c.holding = True              # the export is whole: report it, then stop
        sizes = ", ".join(f"{name} {entry['bytes'] / 2**20:.1f} MiB"
                          for name, entry in manifest["files"].items())
        print(f"exported {args.checkpoint} into {args.out} ({args.weights} weights): {sizes}; "
              f"checked against torch (onnxruntime, within 1e-4)", flush=True)
    except KeyboardInterrupt:
        ctrl_c.holding = True
        raise Interrupted(f"interrupted: the export was not finished; {args.out} is as it "
                          f"was") from None
    finally:
        ctrl_c.restore()
    if ctrl_c.pending:
        raise Interrupted(f"interrupted after the export was finished: {args.out} is whole "
                          f"(its manifest.json lists and checks every file)")



# -------------------- ablate
def add_ablate(sub):
    p = sub.add_parser("ablate", help="Table 3 (section 6.2) at CPU or GPU scale: one row "
                       "per changed setting", formatter_class=HelpFormatter,
                       description="Train the rows of transformer.tools.ablation.ROWS with one "
                       "update budget and seed (the base first, then the rows with a paper "
                       "value, then the others), score each on the valid split and write "
                       "OUT/results.json. Running the same command again skips finished rows "
                       "and resumes the one that was running.")
    p.add_argument("--rows", default="all",
                   help=f"row names (e.g. A-h1,C-N2) or groups ({', '.join(GROUPS)}), comma-"
                        f"separated; the base row always runs")
    p.add_argument("--budget", default="cpu", choices=list(BUDGETS),
                   help="the shared settings: cpu (chapter 11's table, 400 updates of 2,048 "
                        "tokens), gpu (4,000 updates of 8,000 tokens), smoke (a rehearsal on "
                        "a tiny model)")
    p.add_argument("--updates", type=bounded(int, 1), default=None,
                   help="updates per row, the same for every row (default: the budget's: "
                        + ", ".join(f"{k} {v.updates}" for k, v in BUDGETS.items()) + ")")
    p.add_argument("--base-seeds", type=bounded(int, 1), default=1,
                   help="the base row runs first at this many seeds (--seed, --seed + 1, ...)")
    p.add_argument("--jobs", type=bounded(int, 1), default=1,
                   help="rows trained at once, each in its own process (on a GPU a small "
                        "model leaves it mostly idle)")
    p.add_argument("--time-budget-min", type=bounded(float, 0.0), default=0.0,
                   help="start no row that would end after this many minutes (judged by "
                        "the longest row so far); 0: no limit")
    p.add_argument("--out", default="runs/table3", help="the table's folder")
    p.add_argument("--seed", type=bounded(int, 0, MAX_SEED), default=1,
                   help="seed of every row run by this command, the base's first (a second "
                        "seed gives error bars)")
    add_common(p, "corpus", "data_root", "device", "threads")
    _add_search(p, beam_help="beam size of dev BLEU", max_extra=False)
    p.add_argument("--bleu-sentences", type=bounded(int, 0), default=0,
                   help="dev BLEU on the first N valid sentences (0: all)")
    p.set_defaults(handler=cmd_ablate)


def cmd_ablate(args):
    """``ablate``: Table 3's rows at CPU scale, one results file (transformer.tools.ablation)."""
    rows = select_rows(args.rows)
    settings = {k: v for k, v in (("threads", args.threads), ("corpus", args.corpus),
                                  ("data_root", args.data_root), ("device", args.device))
                if v is not None}
    command = shlex.join(["python", "-m", "transformer", *args.argv])
    data = run_table(rows, args.out, updates=args.updates, seed=args.seed, command=command,
                     search=args.search, bleu_sentences=args.bleu_sentences,
                     budget=args.budget, base_seeds=args.base_seeds, jobs=args.jobs,
                     time_budget_s=args.time_budget_min * 60, **settings)
    missing = [f"{row.name}" for row in rows
               if not any(r["row"] == row.name for r in data["rows"])]
    print(f"{len(data['rows'])} results in {args.out}/results.json"
          + (f"; not yet run: {', '.join(missing)}" if missing else ""))



# -------------------- demo
def add_demo(sub):
    p = sub.add_parser("demo", help="train a tiny model a few steps on Multi30k",
                       formatter_class=HelpFormatter,
                       description="Train a tiny model a few updates on Multi30k (the quick "
                                   "recipe) and say what happens: the shapes of a batch, "
                                   "then the falling loss, in sentences.")
    p.add_argument("--steps", type=bounded(int, 1), default=30, help="updates to train")
    add_common(p, "threads", threads=2)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal)")
    add_json(p, "the shapes' line, then the run's metrics.jsonl records and the result as "
                "JSON lines")
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args):
    """A few training steps of a tiny model on real data: shapes and falling losses, in
    sentences as they come (``--json``: the records as JSON lines, once trained)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    bar = sys.stderr.isatty() if args.progress is None else args.progress
    if not args.as_json:
        words.say(f"Training a tiny Transformer on Multi30k (English to German) for "
                  f"{args.steps} update{'s' * (args.steps != 1)}, on {torch.get_num_threads()} "
                  f"CPU thread{'s' * (torch.get_num_threads() != 1)}; first its vocabulary "
                  f"and batches...")
    with tempfile.TemporaryDirectory() as out:
        cfg = recipe("quick", out_dir=out, max_updates=args.steps, log_every=5,
                     save_every=10**9, progress=bar)
        trainer = Trainer.from_config(cfg)
        batch = next(iter(trainer.train_iter))
        logits = tuple(trainer.model(batch.src, batch.tgt_in).shape)
        if args.as_json:
            print(f"batch: src {tuple(batch.src.shape)}, tgt_in {tuple(batch.tgt_in.shape)}, "
                  f"logits {logits}")
            result = trainer.fit()
            for line in open(f"{out}/metrics.jsonl"):
                print(line.strip())
            print(json.dumps(result))
            return
        (n, src), (_, tgt), vocabulary = batch.src.shape, batch.tgt_in.shape, logits[-1]
        words.say(f"One batch: {n} sentence pairs, the English side {n} x {src} token ids "
                  f"(padded to its longest), the German input {n} x {tgt}; the model "
                  f"gives {n} x {tgt} x {vocabulary:,} logits, a score for each of the "
                  f"{vocabulary:,} pieces of the vocabulary at every German position.")
        log = trainer.log

        def log_and_say(record):
            log(record)
            line = words.record_sentence(record, args.steps)
            if line:
                words.say(line)

        trainer.log = log_and_say
        result = trainer.fit()
        words.say(f"done: {words.result_sentence(result)}. (--json prints the records as "
                  f"JSON lines.)")



# -------------------- the program
COMMANDS = (add_fetch, add_train, add_prepare, add_translate, add_evaluate, add_average,
            add_export, add_ablate, add_demo)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m transformer``: one subcommand per entry of
    :data:`COMMANDS`, each with its handler as ``args.handler``."""
    parser = argparse.ArgumentParser(prog="python -m transformer", description=DESCRIPTION,
                                     formatter_class=DescribedHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def run(argv=None):
    """``python -m transformer`` and the ``transformer`` console script, one entry point:
    the command line under jemalloc when it is installed (see
    :mod:`transformer.tools.host_memory`), warnings as one line each, as the errors are."""
    exec_with_jemalloc()
    warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\n"
    try:
        main(argv)
    except KeyboardInterrupt:                   # before a command could say more
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    _finished()


def _finished() -> None:
    """The command has finished and said so: a Ctrl-C from now on changes nothing. Python
    gives SIGINT back its default action while it shuts down (and torch's and onnxruntime's
    libraries take a while to unload after that), so a Ctrl-C there would kill the process
    with no message (status -2) although all was done; ignored, it cannot."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def main(argv=None):
    """Run ``python -m transformer`` with ``argv`` (default: ``sys.argv[1:]``).

    What the user can fix ends it with one line on stderr and exit status 2: a
    :class:`~transformer.errors.UserError` (a bad value, a damaged checkpoint, a foreign
    run folder, a missing optional package) or an error of the operating system (a
    read-only or missing folder, a full disk). Ctrl-C ends it with a line saying what was
    kept and status 130. Anything else is a bug in the package: its traceback, then a line
    asking for a report, and status 1."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    gather_search(args)
    try:
        args.handler(args)
    except Interrupted as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except OSError as exc:
        print(f"error: {_describe(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception:
        traceback.print_exc()
        print(f"this is a bug in the transformer package, not a mistake of yours: please "
              f"report it with the command and the lines above at {ISSUES}", file=sys.stderr)
        raise SystemExit(1) from None



if __name__ == "__main__":
    run()
