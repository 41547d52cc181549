"""Section 6.2, Table 3: change one setting of the base model at a time, and measure.

The paper varies its base model (N=6, d_model=512, h=8, 100K steps on WMT 2014) row by
row and reports dev perplexity, dev BLEU (beam search, no checkpoint averaging) and
parameters. :data:`ROWS` are the same rows scaled to the CPU preset (``small``: N=3,
d_model=256, h=4, d_ff=1024), each paired with the paper row it scales, plus rows the
paper does not have (post- vs pre-norm, each with and without warm-up; separate
embeddings). :func:`run_table` trains every row with the same update budget and seed
through :class:`~transformer.training.loop.Trainer` (so a row resumes after a crash like any
run), scores it and appends it to one results file with its provenance; rows already
in the file are skipped, so running the same command again finishes an interrupted
table. ``python -m transformer ablate`` is the command line.

:data:`BUDGETS` name the update budgets: ``cpu`` (the CPU table of chapter 11, 400 updates
of 2,048 tokens), ``gpu`` (4,000 updates of 8,000 tokens, where the base row has learnt;
benchmarks/gpu/table3.sh) and ``smoke`` (a rehearsal of the GPU path on a tiny model).
The base row runs first, at ``base_seeds`` seeds, then the rows with a paper value, then
the rows the paper does not have; ``jobs`` rows train at once (each in its own process),
and a time budget starts no row that would end after it, so a table grows over several
calls.
"""
from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import resource
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..config import ModelConfig
from ..decoding import PAPER_SEARCH, Search
from ..translation import translate
from ..errors import InputError
from ..evaluate import score
from ..inference import resolve_device
from ..model import Transformer
from ..output import write_output
from ..tokenizer import Tokenizer, same_vocabulary, vocabulary_fingerprint
from ..training.config import LossDiverged, TrainConfig, TrainingError
from ..training.loop import Trainer
from ..training.precision import resolve_precision
from ..training.run_data import load_split
from ..training.vocabulary import train_tokenizer
from ..measuring.provenance import git_commit
from ..measuring.provenance import provenance as machine_provenance

PAPER_SOURCE = ("Vaswani et al. 2017, Table 3: newstest2013 (dev), per-wordpiece perplexity, "
                "BLEU with beam 4 and no checkpoint averaging, params x 10^6")
PAPER_BASE = {"row": "base", "ppl": 4.92, "bleu": 25.8, "params_m": 65}


@dataclass(frozen=True)
class Row:
    """One row of the table: what it changes from the base, and the paper row it scales."""

    name: str                       # e.g. "A-h1"
    group: str                      # Table 3's letter, or "norm" / "embed" (not in the paper)
    label: str                      # what the row changes, in the table's own words
    model: dict = field(default_factory=dict)   # ModelConfig overrides
    train: dict = field(default_factory=dict)   # TrainConfig overrides
    paper: dict | None = None       # {"row", "ppl", "bleu", "params_m"} of the paper's row


def _paper(row: str, ppl: float, bleu: float, params_m: int | None = None) -> dict:
    return {"row": row, "ppl": ppl, "bleu": bleu, "params_m": params_m or PAPER_BASE["params_m"]}


ROWS: tuple[Row, ...] = (
    Row("base", "base", "small preset: N=3, d_model=256, d_ff=1024, h=4, d_k=d_v=64",
        paper=PAPER_BASE),
    # (A) heads at constant computation: d_k = d_v = d_model / h
    Row("A-h1", "A", "h=1, d_k=d_v=256", {"n_heads": 1}, paper=_paper("h=1, d_k=d_v=512", 5.29, 24.9)),
    Row("A-h2", "A", "h=2, d_k=d_v=128", {"n_heads": 2}, paper=_paper("h=4, d_k=d_v=128", 5.00, 25.5)),
    Row("A-h8", "A", "h=8, d_k=d_v=32", {"n_heads": 8}, paper=_paper("h=16, d_k=d_v=32", 4.91, 25.8)),
    Row("A-h16", "A", "h=16, d_k=d_v=16", {"n_heads": 16}, paper=_paper("h=32, d_k=d_v=16", 5.01, 25.4)),
    # (B) a smaller key size, d_v unchanged
    Row("B-dk32", "B", "d_k=32 (halved)", {"d_k": 32}, paper=_paper("d_k=32", 5.01, 25.4, 60)),
    Row("B-dk16", "B", "d_k=16 (quartered)", {"d_k": 16}, paper=_paper("d_k=16", 5.16, 25.1, 58)),
    # (C) size: depth, width (d_k = d_model / h), feed-forward
    Row("C-N1", "C", "N=1", {"n_encoder_layers": 1, "n_decoder_layers": 1},
        paper=_paper("N=2", 6.11, 23.7, 36)),
    Row("C-N2", "C", "N=2", {"n_encoder_layers": 2, "n_decoder_layers": 2},
        paper=_paper("N=4", 5.19, 25.3, 50)),
    Row("C-N4", "C", "N=4", {"n_encoder_layers": 4, "n_decoder_layers": 4},
        paper=_paper("N=8", 4.88, 25.5, 80)),
    Row("C-N6", "C", "N=6", {"n_encoder_layers": 6, "n_decoder_layers": 6}),
    Row("C-d128", "C", "d_model=128, d_k=d_v=32", {"d_model": 128},
        paper=_paper("d_model=256, d_k=d_v=32", 5.75, 24.5, 28)),
    Row("C-d512", "C", "d_model=512, d_k=d_v=128", {"d_model": 512},
        paper=_paper("d_model=1024, d_k=d_v=128", 4.66, 26.0, 168)),
    Row("C-ff512", "C", "d_ff=512", {"d_ff": 512}, paper=_paper("d_ff=1024", 5.12, 25.4, 53)),
    Row("C-ff2048", "C", "d_ff=2048", {"d_ff": 2048}, paper=_paper("d_ff=4096", 4.75, 26.2, 90)),
    # (D) regularisation
    Row("D-drop0", "D", "P_drop=0.0", {"dropout": 0.0}, paper=_paper("P_drop=0.0", 5.77, 24.6)),
    Row("D-drop0.2", "D", "P_drop=0.2", {"dropout": 0.2}, paper=_paper("P_drop=0.2", 4.95, 25.5)),
    Row("D-drop0.3", "D", "P_drop=0.3", {"dropout": 0.3}),
    Row("D-ls0", "D", "eps_ls=0.0", train={"label_smoothing": 0.0},
        paper=_paper("eps_ls=0.0", 4.67, 25.3)),
    Row("D-ls0.2", "D", "eps_ls=0.2", train={"label_smoothing": 0.2},
        paper=_paper("eps_ls=0.2", 5.47, 25.7)),
    # (E) learned positions
    Row("E-learned", "E", "learned positional embedding instead of sinusoids",
        {"positional": "learned"}, paper=_paper("positional embedding instead of sinusoids",
                                                4.92, 25.7)),
    # not in the paper: where the layer norm sits, and warm-up; sharing the embeddings
    Row("norm-pre", "norm", "pre-norm (LayerNorm before each sub-layer)",
        {"norm_position": "pre"}),
    Row("norm-post-nowarmup", "norm", "post-norm without warm-up",
        train={"lr_schedule": "no-warmup"}),
    Row("norm-pre-nowarmup", "norm", "pre-norm without warm-up", {"norm_position": "pre"},
        train={"lr_schedule": "no-warmup"}),
    Row("embed-separate", "embed", "separate source, target and output embeddings",
        {"share_embeddings": False}),
)
ROW_BY_NAME = {row.name: row for row in ROWS}
GROUPS = tuple(dict.fromkeys(row.group for row in ROWS))

# The settings every row shares; a row's own `train` overrides go on top. Sized for a
# table of about two hours on two cores: updates of 2,048 target tokens (more updates
# per token than `make train-small`'s 4,096 in a short budget), warm-up 150 and a peak
# rate of 0.4 * 256^-0.5 * 150^-0.5 = 0.0020 (0.003 with 4,096-token updates and
# warm-up 100 made the post-norm base diverge).
TABLE_TRAIN = dict(preset="small", corpus="multi30k-en-de", max_tokens=2048,
                   update_tokens=2048, warmup=150, lr_factor=0.4, precision="auto",
                   eval_bleu_sentences=0, keep_last=1, progress=False, log_every=10)


# The GPU budget: every row 4,000 updates of 8,000 target tokens (32M tokens, about 70
# epochs of Multi30k), sixteen times the CPU table's tokens, where the base row's dev BLEU
# has flattened rather than begun to rise. Warm-up 400 (a tenth of the budget, as 150 is of
# 400 less its tail) and a peak rate of 0.7 * 256^-0.5 * 400^-0.5 = 0.0022, the CPU table's
# 0.0020 that the post-norm base trains at (larger updates only steady it), then eq. (3)'s
# decay to 0.0007 at update 4,000. Validation every 1,000 updates (loss and greedy BLEU on
# 200 sentences) shows whether a row has flattened. On a GPU, kernel launches rather than
# arithmetic bound a model this small; benchmarks/gpu/table3.sh measures a row's time.
GPU_TRAIN = dict(TABLE_TRAIN, max_tokens=8000, update_tokens=8000, warmup=400,
                 lr_factor=0.7, eval_every=1000, eval_bleu_sentences=200, log_every=50)
# A rehearsal of the GPU path on a CPU: a one-layer model of width 32, 3 updates.
SMOKE_TRAIN = dict(TABLE_TRAIN, vocab_size=300, max_tokens=512, update_tokens=512, warmup=5,
                   precision="fp32")
SMOKE_MODEL = dict(d_model=32, d_ff=64, n_heads=2, n_encoder_layers=1, n_decoder_layers=1)


@dataclass(frozen=True)
class Budget:
    """What every row of one table shares: updates, training settings, model overrides."""

    updates: int
    train: dict                     # TrainConfig settings
    model: dict = field(default_factory=dict)


BUDGETS = {"cpu": Budget(400, TABLE_TRAIN), "gpu": Budget(4000, GPU_TRAIN),
           "smoke": Budget(3, SMOKE_TRAIN, SMOKE_MODEL)}


def budget_train(budget: str) -> dict:
    """The shared TrainConfig settings of the budget named ``budget``."""
    if budget not in BUDGETS:
        raise InputError(f"unknown budget {budget!r}; choose one of {', '.join(BUDGETS)}")
    return dict(BUDGETS[budget].train)


def select_rows(spec: str) -> list[Row]:
    """Rows named by ``spec``: comma-separated row names or groups (``A``, ``norm``),
    or ``all``; the base row is always included first (every row is read against it)."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise InputError("--rows is empty: name rows (e.g. A-h1) or groups "
                         f"({', '.join(GROUPS)}), or all")
    chosen = []
    for name in names:
        if name == "all":
            chosen += ROWS
        elif name in GROUPS:
            chosen += [row for row in ROWS if row.group == name]
        elif name in ROW_BY_NAME:
            chosen.append(ROW_BY_NAME[name])
        else:
            raise InputError(f"--rows: unknown row or group {name!r}; rows: "
                             f"{', '.join(ROW_BY_NAME)}; groups: {', '.join(GROUPS)}")
    names = dict.fromkeys(row.name for row in [ROW_BY_NAME["base"], *chosen])
    return [ROW_BY_NAME[name] for name in names]


def paper_first(rows: list[Row]) -> list[Row]:
    """``rows`` in the order a table runs them: the base, the rows with a paper value
    (groups A-E), then the rows the paper does not have; otherwise as given."""
    return sorted(rows, key=lambda row: (row.name != "base", row.paper is None))


def row_config(row: Row, out_dir: Path, *, seed: int, updates: int, budget: str = "cpu",
               **settings) -> TrainConfig:
    """The :class:`TrainConfig` of ``row`` with ``seed``: the budget's shared settings,
    ``settings`` (the command's options) and the row's own overrides, in that order."""
    values = {**budget_train(budget), **settings, **row.train}
    return TrainConfig(out_dir=str(out_dir / f"{row.name}-seed{seed}"), seed=seed,
                       max_updates=updates, save_every=max(1, updates // 4),
                       model_overrides={**BUDGETS[budget].model, **row.model}, **values)


# ------------------------------------------------------------------ results
class ResultsFile:
    """``results.json``: the provenance and one entry per (row, seed), written atomically."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def read(self) -> dict:
        if not self.path.exists():
            return {"provenance": {}, "rows": []}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data.get("rows"), list):
                raise ValueError
            return data
        except (ValueError, AttributeError):
            raise TrainingError(f"{self.path} is not a results file of `transformer ablate`: "
                                f"move it away or use another --out folder") from None

    def write(self, data: dict) -> None:
        write_output(self.path, json.dumps(data, indent=1) + "\n")


def done(data: dict, row: Row, seed: int) -> bool:
    return any(r["row"] == row.name and r["seed"] == seed for r in data["rows"])


# ---------------------------------------------------------------- one row
def run_row(row: Row, cfg: TrainConfig, tokenizer, *, search: Search = PAPER_SEARCH,
            bleu_sentences: int = 0) -> dict:
    """Train (or resume) ``row`` and score its last checkpoint on the valid split: dev
    perplexity, and sacreBLEU of ``search`` (as the paper: no checkpoint averaging)."""
    trainer = Trainer.from_config(cfg, tokenizer=tokenizer)
    entry = {"row": row.name, "group": row.group, "label": row.label, "seed": cfg.seed,
             "model": dict(row.model), "train": dict(row.train),
             "params": trainer.model.num_parameters(), "paper": row.paper,
             "commit": git_commit()}
    try:
        final = trainer.fit()          # its validation: per-wordpiece perplexity (valid_ppl)
    except LossDiverged as e:                  # a diverged row is a result, not a crash
        return {**entry, "diverged": True, "error": str(e).split(":")[0],
                "updates": trainer.step, "train_seconds": round(trainer.train_seconds, 1)}
    records = trainer.run.records()
    speeds = [r["tokens_per_s"] for r in records if "tokens_per_s" in r]
    curve = {r["step"]: [r["step"], round(r["valid_loss"], 4)]
             + ([round(r["valid_bleu"], 2)] if "valid_bleu" in r else [])
             for r in records if "valid_loss" in r}
    valid = trainer.valid
    n = bleu_sentences or len(valid.src)
    start = time.perf_counter()
    hyps = translate(trainer.model, trainer.tokenizer, valid.src[:n], search,
                     device=trainer.device)
    scored = score(hyps, valid.tgt[:n])
    return {**entry, "diverged": False, "updates": trainer.step,
            "train_seconds": round(trainer.train_seconds, 1),
            "tokens_per_s": round(sum(speeds) / len(speeds)) if speeds else None,
            "dev_ppl": round(final["valid_ppl"], 4), "dev_tokens": final["valid_tokens"], "dev_bleu": round(scored["bleu"], 2),
            "dev_chrf": round(scored["chrf"], 2), "dev_sentences": n,
            "decode_seconds": round(time.perf_counter() - start, 1),
            **({"valid_curve": sorted(curve.values())} if len(curve) > 1 else {})}


def _row_in_child(name: str, cfg: TrainConfig, spm: str, kwargs: dict) -> dict:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    entry = run_row(ROW_BY_NAME[name], cfg, Tokenizer.load(spm), **kwargs)
    entry["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return entry


def start_row_apart(row: Row, cfg: TrainConfig, spm: Path, **kwargs):
    """:func:`run_row` in a fresh process, started: returns its pool and its future. Each
    row starts with the host memory of one run (a table of rows in one process grew
    until it was killed), and its peak resident memory is measured on its own
    (``peak_rss_mb``)."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    return pool, pool.submit(_row_in_child, row.name, cfg, str(spm), kwargs)


# -------------------------------------------------------------- the table
def run_table(rows: list[Row], out_dir: str | os.PathLike, *, updates: int | None = None,
              seed: int = 1, command: str | None = None, search: Search = PAPER_SEARCH,
              bleu_sentences: int = 0, log=print, budget: str = "cpu", base_seeds: int = 1,
              jobs: int = 1, time_budget_s: float = 0, **settings) -> dict:
    """Train and score ``rows`` (skipping those ``results.json`` already holds) with
    ``updates`` updates each (default: the budget's); return the results file's contents.

    The base row runs at seeds ``seed`` .. ``seed + base_seeds - 1``, first; every other
    row at ``seed``, those with a paper value before the others (:func:`paper_first`).
    ``jobs`` rows train at once, each in its own process. With ``time_budget_s`` a row
    starts only while the time spent so far plus the longest row of this call fits in it
    (the first ``jobs`` rows always start): the table stops between rows, and the same
    command finishes it later. ``settings`` are TrainConfig fields shared by every row
    (e.g. ``threads``, ``corpus``, ``data_root``); the budget's shared settings, the
    updates and the vocabulary (one ``spm.model`` for all rows, so perplexities compare)
    must match the file's.
    """
    started = time.monotonic()
    budget_train(budget)                                   # a known budget
    if base_seeds < 1 or jobs < 1:
        raise InputError(f"base_seeds and jobs must be >= 1, got {base_seeds} and {jobs}")
    updates = updates or BUDGETS[budget].updates
    out = Path(out_dir)
    results = ResultsFile(out / "results.json")
    data = results.read()
    device = resolve_device(settings.get("device", "auto"))
    shared = _shared_settings(budget, settings, updates, search, bleu_sentences, device)
    probe = row_config(ROWS[0], out, seed=seed, updates=updates, budget=budget,
                       **settings)                                       # checks values
    provenance = data["provenance"]
    if provenance and provenance.get("shared") != shared:
        raise TrainingError(f"{results.path} holds a table with other shared settings "
                            f"({json.dumps(provenance.get('shared'))}); use another --out folder")
    spm, vocabulary = _table_vocabulary(out, probe, provenance, results)
    data["provenance"] = _provenance(provenance, shared=shared, budget=budget,
                                     vocabulary=vocabulary, command=command, device=device,
                                     settings=settings, jobs=jobs)
    results.write(data)
    todo = [(ROW_BY_NAME["base"], seed + i) for i in range(base_seeds)] + \
        [(row, seed) for row in paper_first(rows) if row.name != "base"]
    _train_rows(todo, data, results, log, started=started, jobs=jobs,
                time_budget_s=time_budget_s,
                config=lambda row, row_seed: row_config(row, out, seed=row_seed,
                                                        updates=updates, budget=budget,
                                                        **settings),
                start=lambda row, cfg: start_row_apart(row, cfg, spm, search=search,
                                                       bleu_sentences=bleu_sentences))
    return results.read()


def _shared_settings(budget: str, settings: dict, updates: int, search: Search,
                     bleu_sentences: int, device) -> dict:
    """What every row of a table shares and a resumed table must match: the budget's
    settings, the command's (but where it runs), the updates, the search and the precision
    the rows train in here (auto: bf16 or fp32 by CPU, bf16 on a GPU), so that a table is
    never resumed in another one."""
    shared = {**budget_train(budget), **{k: v for k, v in settings.items()
                                         if k not in ("threads", "data_root", "device")},
              "updates": updates, **_search_settings(search),
              "bleu_sentences": bleu_sentences}
    if BUDGETS[budget].model:
        shared["model"] = dict(BUDGETS[budget].model)
    shared["precision"] = resolve_precision(shared["precision"], device)
    return shared


def _table_vocabulary(out: Path, probe: TrainConfig, provenance: dict,
                      results: ResultsFile) -> tuple[Path, str]:
    """The table's one vocabulary, ``out/spm.model`` (trained on the first call, so that
    the rows' perplexities compare), and its fingerprint, which must be the one the
    results file records."""
    spm = out / "spm.model"
    if not spm.exists():
        write_output(spm, train_tokenizer(load_split(probe, "train"), probe).serialized())
    vocabulary = vocabulary_fingerprint(spm.read_bytes())
    recorded = provenance.get("vocabulary", vocabulary)     # the table's vocabulary
    try:
        vocabulary_fingerprint(recorded if isinstance(recorded, str) else "")
    except ValueError:
        raise TrainingError(f"{results.path}: its provenance's 'vocabulary' is {recorded!r}, "
                            f"not a fingerprint (sha256:<hex>)") from None
    if not same_vocabulary(recorded, vocabulary):           # a copied file, a retrained BPE
        raise TrainingError(f"{spm} is not the vocabulary of the rows in {results.path} "
                            f"({vocabulary[:19]}..., the file's {recorded[:19]}...): use "
                            f"another --out folder")
    return spm, vocabulary


def _provenance(provenance: dict, *, shared: dict, budget: str, vocabulary: str,
                command: str | None, device, settings: dict, jobs: int) -> dict:
    """The results file's ``provenance`` with this call's: its settings, its command
    added to the table's, and the machine (each row records its own commit)."""
    here = {k: v for k, v in machine_provenance(command, device).items()
            if k not in ("commit", "command", "date")}     # each row has its commit
    provenance.update({
        "shared": shared, "budget": budget, "source": PAPER_SOURCE, "vocabulary": vocabulary,
        "started": provenance.get("started") or _now(),
        "commands": list(dict.fromkeys([*provenance.get("commands", []),
                                        command or " ".join(sys.argv)])),
        **here,                                    # cpu, torch (and gpu, cuda on a GPU)
        "threads": settings.get("threads") or torch.get_num_threads(),
        "device": settings.get("device", "auto"),
    })
    if jobs > 1:
        provenance["jobs"] = jobs      # rows trained at once: their tokens/s are shared
    return provenance


def _train_rows(todo: list, data: dict, results: ResultsFile, log, *, started: float,
                jobs: int, time_budget_s: float, config, start) -> None:
    """Train the ``todo`` rows (row, seed) the results file does not hold, ``jobs`` at
    once, each added to it as it ends; with ``time_budget_s``, no row starts that would
    end after it (by the longest row so far). ``config(row, seed)``: its TrainConfig;
    ``start(row, cfg)``: its process (:func:`start_row_apart`)."""
    running, longest = {}, 0.0
    for row, row_seed in todo:
        if done(data, row, row_seed):
            log(f"{row.name} seed {row_seed}: in {results.path} already")
            continue
        while len(running) >= jobs:
            data, longest = _collect(running, results, log, longest)
        spent = time.monotonic() - started
        if time_budget_s and longest and spent + longest > time_budget_s:
            log(f"{row.name} seed {row_seed}: not started, {spent / 60:.1f} min spent and a "
                f"row takes up to {longest / 60:.1f} min (budget {time_budget_s / 60:.1f} "
                f"min); the same command goes on from here")
            break
        cfg = config(row, row_seed)
        log(f"{row.name} seed {row_seed}: {row.label} ...")
        running[start(row, cfg)] = (row, row_seed, time.monotonic())
    while running:
        data, longest = _collect(running, results, log, longest)


def _search_settings(search: Search) -> dict:
    """The search as a table's shared settings record it: ``beam`` and ``alpha`` (the names
    of the tables written so far, which resume only when these are equal), and each other
    setting only where it is not the paper's."""
    return {"beam": search.beam_size, "alpha": search.alpha,
            **{k: v for k, v in search.to_dict().items()
               if k not in ("beam_size", "alpha") and v != PAPER_SEARCH.to_dict()[k]}}


def _collect(running: dict, results: ResultsFile, log, longest: float):
    """Wait for one of the ``running`` rows to end; add its entry to the results file."""
    finished, _ = wait([future for _, future in running], return_when=FIRST_COMPLETED)
    for key in [key for key in running if key[1] in finished]:
        (pool, future), (row, seed, began) = key, running.pop(key)
        pool.shutdown()
        entry = future.result()
        entry["finished"] = _now()
        longest = max(longest, time.monotonic() - began)
        data = results.read()                 # another process may have added rows
        data["rows"] = [r for r in data["rows"]
                        if not (r["row"] == row.name and r["seed"] == seed)] + [entry]
        data["provenance"]["finished"] = entry["finished"]
        results.write(data)
        log(format_entry(entry))
    return results.read(), longest


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def format_entry(entry: dict) -> str:
    """One line: the row, its parameters and its dev figures (or that it diverged)."""
    head = f"{entry['row']:>20} seed {entry['seed']}  {entry['params'] / 1e6:5.2f}M params"
    if entry.get("diverged"):
        return f"{head}  diverged at update {entry['updates']}"
    return (f"{head}  dev ppl {entry['dev_ppl']:6.2f}  dev BLEU {entry['dev_bleu']:5.2f}  "
            f"{entry['updates']} updates in {entry['train_seconds'] / 60:.1f} min")


def parameters(row: Row, vocab_size: int = 8000) -> int:
    """The parameter count of ``row``'s model, without building a trainer."""
    return Transformer(ModelConfig.small(vocab_size=vocab_size, **row.model)).num_parameters()


__all__ = ["Row", "ROWS", "GROUPS", "TABLE_TRAIN", "GPU_TRAIN", "BUDGETS", "PAPER_SOURCE",
           "select_rows", "paper_first", "row_config", "run_row", "run_table",
           "ResultsFile", "format_entry", "parameters"]
