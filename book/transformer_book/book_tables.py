"""The tables only the book shows, and the Markdown a chapter shows a measured table in.

* Under the hood B's departures of the recipe ``book`` from the paper
  (:func:`book_departures`): the paper's setting, the recipe's (read from it) and what the
  records say each buys; and its note on the first build (:func:`first_build_note`);
* chapter 7's validation perplexity with the norm placed either way, with and without
  warm-up (:func:`norm_and_warmup`, from the Table 3 study's record);
* a table of :mod:`transformer.measuring.tables` followed by its records' provenance, for
  the Results page (:func:`with_provenance`, :func:`self_measured`).

Every figure is read from a record (:mod:`transformer.measuring.records`), never typed.
"""
from __future__ import annotations

from pathlib import Path

from transformer.measuring import records
from transformer.measuring.records import load, provenance_text
from transformer.measuring.registry import BENCHMARKS, ratio as _x
from transformer.measuring.tables import (DEPART_AT, departure_verdicts, first_build,
                                          markdown_table, muon_and_adam)


# The book recipe's departures from the paper (Under the hood B): what the paper does for
# each name of transformer.training.recipes.DEPARTURES["book"], and the corpus; a paper's
# setting, quoted, not a measurement.
PAPER_SETTINGS = {
    "model": "base: 6 + 6 layers, d_model 512",
    "norm_position": "post-norm",
    "dropout": "0.1",
    "optimizer": "Adam",
    "warmup": "4,000 updates",
    "schedule": "equation (3)",
    "vocab_size": "about 37,000",
    "update_tokens": "about 25,000 target tokens",
    "training_length": "100,000 updates (12 h on 8 GPUs)",
    "corpus": "WMT 2014, 4.5M pairs",
}


def _have(*names: str) -> bool:
    return all(records.exists(n) for n in names)


def _book_setting(name: str, cfg) -> str:
    """The recipe ``cfg``'s value of the departure ``name``, read from its settings."""
    from transformer.config import ModelConfig
    from transformer.corpora import CorpusSpec
    model = ModelConfig.from_preset(cfg.preset, **cfg.model_overrides)
    parts = [(part.name, part.times) for part in CorpusSpec.parse(cfg.corpus).parts]
    return {
        "model": f"{cfg.preset}: {model.n_encoder_layers} + {model.n_decoder_layers} layers, "
                 f"d_model {model.d_model}",
        "norm_position": f"{model.norm_position}-norm",
        "dropout": "none" if model.dropout == 0 else f"{model.dropout}",
        "optimizer": "Muon + Adam" if cfg.optimizer == "muon" else cfg.optimizer,
        "warmup": f"{cfg.warmup:,} updates",
        "schedule": f"equation (3) × {cfg.lr_factor}" + (
            f", cool-down over the last {cfg.cooldown:,}" if cfg.cooldown else ""),
        "vocab_size": f"{cfg.vocab_size:,}",
        "update_tokens": f"{cfg.update_tokens:,} target tokens",
        "training_length": f"{cfg.max_updates:,} updates",
        "corpus": " + ".join(Path(part).name + (f" ×{times}" if times > 1 else "")
                             for part, times in parts),
    }[name]


def _departure_evidence(name: str) -> tuple[str, list[str]]:
    """What the records say the departure ``name`` buys, and the records it reads; "no
    record" where none measures it."""
    valid = lambda x: (f"{x['valid_beam4']['multi30k-en-de']['bleu']} / "           # noqa: E731
                       f"{x['valid_beam4']['tatoeba-en-de']['bleu']}")
    measured = {x["departure"]: x for x in departure_verdicts()} if _have("book_departures") else {}
    if name in measured:
        x, seeds = measured[name], lambda xs: ", ".join(f"{b:.2f}" for b in xs)  # noqa: E731
        cost, read = "", ["book_departures"]
        if name == "optimizer" and _have("optimizer_speed"):
            cost = f"; an update takes {_x(load('optimizer_speed')['muon_over_adam_median'])} Adam's time"
            read.append("optimizer_speed")
        return (f"valid BLEU (seeds 1, 2; mean of Multi30k and Tatoeba): the paper's "
                f"{seeds(x['paper'])}, the book's {seeds(x['book'])}; gain {x['gain']:+.2f}, "
                f"seed spread {x['spread']:.2f} (chapter 7){cost}", read)
    if name == "model" and _have("tiny_recipe", "small_recipe"):
        t, s = load("tiny_recipe"), load("small_recipe")
        tb = next(v for k, v in t["test"].items() if k.startswith("beam"))
        sb = next(v for k, v in s["test"].items() if k.startswith("beam"))
        return (f"30 min on Multi30k: test BLEU {tb['bleu']}, the small preset {sb['bleu']} "
                f"(other optimizer and dropout too)", ["tiny_recipe", "small_recipe"])
    if name == "norm_position" and _have("table3"):
        rows = {r["row"]: r for r in load("table3")["rows"] if r["seed"] == 1}
        pre, post = rows["norm-pre"], rows["base"]
        return (f"{pre['updates']} updates: dev perplexity {pre['dev_ppl']:.1f}, post-norm "
                f"{post['dev_ppl']:.1f}", ["table3"])
    if name == "dropout" and _have("book_dropout"):
        runs = sorted((x for x in load("book_dropout")["runs"]
                       if x["seed"] == 1 and x["multi30k_repeats"] == 2), key=lambda x: x["dropout"])
        return ("valid BLEU, Multi30k / Tatoeba: " + "; ".join(
            f"{x['dropout'] or 'none'}: {valid(x)}" for x in runs), ["book_dropout"])
    if name == "optimizer" and _have("book_optimizer", "book_dropout"):
        muon, adam = muon_and_adam()
        cost = ""
        if _have("optimizer_speed"):
            cost = f"; an update takes {_x(load('optimizer_speed')['muon_over_adam_median'])} Adam's time"
        return (f"valid BLEU, Multi30k / Tatoeba: Muon {valid(muon)}, Adam {valid(adam)} "
                f"(one seed each){cost}",
                ["book_optimizer", "book_dropout"] + (["optimizer_speed"] if cost else []))
    if name == "optimizer" and _have("optimizer_speed"):
        o = load("optimizer_speed")
        return (f"no record of its scores; an update takes {_x(o['muon_over_adam_median'])} "
                f"Adam's time", ["optimizer_speed"])
    if name == "training_length" and _have("book_build"):
        b = load("book_build")
        return f"{b['train_s'] / 60:.0f} min on 2 CPU cores ({b['precision']})", ["book_build"]
    if name == "corpus" and _have("book_mixture", "book_model_before", "book_model"):
        runs = load("book_mixture")["runs"]
        before = load("book_model_before")["test"]["tatoeba-en-de"]["beam4"]
        now = load("book_model")["test"]["tatoeba-en-de"]["beam4"]
        return ("valid BLEU with dropout 0.2, Multi30k / Tatoeba: " + "; ".join(
            f"×{x['multi30k_repeats']}: {valid(x)}" for x in runs)
            + f"; Tatoeba test: {now['bleu']}, captions alone {before['bleu']}",
            ["book_mixture", "book_model_before", "book_model"])
    return "no record", []


def book_departures() -> str:
    """The book recipe's departures from the paper as Markdown: for each name of
    ``DEPARTURES["book"]`` and the corpus, the paper's setting, the recipe's (read from
    it) and what the records say it buys ("no record" where none measures it), then the
    records read."""
    from transformer.training.recipes import DEPARTURES, recipe
    cfg, rows, read = recipe("book"), [], []
    for name in [*DEPARTURES["book"], "corpus"]:
        evidence, names = _departure_evidence(name)
        rows.append([f"`{name}`", PAPER_SETTINGS[name], _book_setting(name, cfg), evidence])
        read += [r for r in names if r not in read]
    return (markdown_table(["setting", "the paper", "the book", "what it buys here"], rows)
            + "\n\nRecords read: " + ", ".join(f"`{r}`" for r in read) + ".")


def departures_measured() -> str:
    """Chapter 7's table: each departure of ``book_departures`` set back to the paper's
    against the recipe, the valid BLEU of seeds 1 and 2 (each the mean over Multi30k and
    Tatoeba), the recipe's gain, the seed spread and the verdict (:func:`departure_verdicts`)."""
    from transformer.training.recipes import recipe
    if not _have("book_departures"):
        command = next(c for _, _, c, n, _ in BENCHMARKS if n == "book_departures")
        return (f"No measured record yet: `{command} --record "
                f"book/results/book_departures.json` writes it.")
    cfg, rows = recipe("book"), []
    seeds = lambda xs: ", ".join(f"{b:.2f}" for b in xs)                       # noqa: E731
    for x in departure_verdicts():
        name = x["departure"]
        if x["narrowly"]:
            verdict = f"departs, narrowly: it clears {DEPART_AT:g} BLEU by less than the seed spread"
        elif x["departs"]:
            verdict = f"departs: more than the seed spread and at least {DEPART_AT:g} BLEU"
        else:
            verdict = ("within the seed spread" if x["gain"] <= x["spread"] else
                       f"less than {DEPART_AT:g} BLEU")
        rows.append([f"`{name}`", f"{PAPER_SETTINGS[name]}: {seeds(x['paper'])}",
                     f"{_book_setting(name, cfg)}: {seeds(x['book'])}", f"{x['gain']:+.2f}",
                     f"{x['spread']:.2f}", verdict])
    return markdown_table(["setting", "the paper's: valid BLEU, seeds 1, 2", "the book's",
                           "gain (book − paper)", "seed spread", "verdict"], rows)


# The Table 3 study's rows with the norm placed either way, with and without warm-up
# (chapter 7, "Why warm up?"): (norm, warm-up) -> row of table3.json, seed 1.
NORM_AND_WARMUP = {("post-norm (the paper)", "warm-up"): "base",
                   ("post-norm (the paper)", "none"): "norm-post-nowarmup",
                   ("pre-norm", "warm-up"): "norm-pre", ("pre-norm", "none"): "norm-pre-nowarmup"}


def norm_and_warmup() -> dict:
    """The study's validation perplexity for each (norm, warm-up) of
    :data:`NORM_AND_WARMUP`."""
    rows = {r["row"]: r for r in load("table3")["rows"] if r["seed"] == 1}
    return {key: rows[row]["dev_ppl"] for key, row in NORM_AND_WARMUP.items()}


def norm_and_warmup_table():
    """:func:`norm_and_warmup` as a Markdown table for chapter 7."""
    from IPython.display import Markdown
    ppl = norm_and_warmup()
    norms = dict.fromkeys(norm for norm, _ in ppl)
    return Markdown("| model | with warm-up | without |\n|---|---:|---:|\n" + "\n".join(
        f"| {n} | {ppl[n, 'warm-up']:.1f} | {ppl[n, 'none']:.1f} |" for n in norms))


def first_build_note():
    """:func:`first_build` as Markdown for Under the hood B, beside the cached run."""
    from IPython.display import Markdown
    return Markdown(first_build())


def with_provenance(table: str, *names: str):
    """The table followed by each record's provenance, as Markdown for a notebook cell."""
    from IPython.display import Markdown
    lines = [table, ""] + [f"* `book/results/{n}.json`: {provenance_text(load(n))}" for n in names]
    return Markdown("\n".join(lines))


def self_measured(table, name: str, *others: str):
    """``with_provenance(table(), name, *others)`` for a record that measures the very
    build that renders it (``book_build``): the build before the first measurement says
    so instead of failing."""
    from IPython.display import Markdown
    if not records.exists(name):
        command = next(c for _, _, c, n, _ in BENCHMARKS if n == name)
        return Markdown(f"No measured build yet: `{command} --record book/results/{name}.json` "
                        f"writes it.")
    return with_provenance(table(), name, *others)
