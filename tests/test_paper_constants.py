"""The paper's constants, read from what a run builds.

Each row of :data:`RUN` is a value the book calls the paper's, with the paper's value and
section, and a reader that takes it from the objects ``python -m transformer train``
builds for a recipe, and without one: the optimizer's ``param_groups``, the trainer's
learning-rate schedule, loss and checkpoint averaging, the model's modules. A recipe may
depart from a row only by naming it, with its reason, in
``transformer.training.recipes.DEPARTURES`` (``DEFAULT_DEPARTURES`` for ``train`` without
``--recipe``); a departure named there that the run no longer makes fails too. :data:`PRESETS` and
:data:`SEARCH` hold Table 3's two models and section 6.1's search, which no recipe changes.

The values below are typed from the paper on purpose: they are what the code is held
to, not a second home of the code's constants.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from transformer import ModelConfig, Transformer
from transformer.decoding import Search
from transformer.translation import translate, translations
from transformer.fast import FastTransformer
from transformer.layers import Residual
from transformer.tools import cli
from transformer.training.loop import Trainer
from transformer.training.optimizers import make_optimizer
from transformer.training.config import TrainConfig
from transformer.training.recipes import DEFAULT_DEPARTURES, DEPARTURES, RECIPES, recipe

BASE = dict(n_encoder_layers=6, n_decoder_layers=6, d_model=512, d_ff=2048, h=8, d_k=64, d_v=64)
BIG = dict(n_encoder_layers=6, n_decoder_layers=6, d_model=1024, d_ff=4096, h=16, d_k=64, d_v=64)
EQUATION_3 = "equation (3)"
SINUSOIDS = "sin/cos of pos / 10000^(2i/d_model)"


# ------------------------------------------------------------------ readers
def sizes(model) -> dict:
    """Table 3's columns as the built model has them."""
    layer, width = model.encoder_layers[0], model.src_embed.weight.shape[1]
    attn = layer.self_attn
    return dict(n_encoder_layers=len(model.encoder_layers),
                n_decoder_layers=len(model.decoder_layers), d_model=width,
                d_ff=layer.feed_forward.linear1.out_features, h=attn.n_heads,
                d_k=attn.q_proj.out_features // attn.n_heads,
                d_v=attn.v_proj.out_features // attn.n_heads)


def residual_dropout(model) -> set[float]:
    """The rates of section 5.4's dropouts: on each sub-layer's output and on the sums of
    the embeddings and the positional encodings."""
    return {m.dropout.p for m in model.modules() if isinstance(m, Residual)} | \
        {model.embed_dropout.p}


def other_dropout(model) -> set[float]:
    """The rates of every other dropout: on the attention weights, inside the feed-forward."""
    counted = {id(m.dropout) for m in model.modules() if isinstance(m, Residual)}
    counted.add(id(model.embed_dropout))
    rates = {m.p for m in model.modules()
             if isinstance(m, torch.nn.Dropout) and id(m) not in counted}
    return rates | {float(m.dropout) for m in model.modules()
                    if hasattr(m, "dropout") and isinstance(m.dropout, float)}


def norm_position(model) -> str:
    pre = {m.pre_norm for m in model.modules() if isinstance(m, Residual)}
    return {frozenset({False}): "post", frozenset({True}): "pre"}.get(frozenset(pre), "mixed")


def shared_embeddings(model) -> bool:
    return model.tgt_embed is model.src_embed and model.output_weight is model.src_embed.weight


def embedding_scale(model) -> str:
    width = model.src_embed.weight.shape[1]
    ids = torch.tensor([[4, 5]])
    ratio = (model.src_embed(ids) / model.src_embed.weight[ids]).flatten()
    return "sqrt(d_model)" if torch.allclose(ratio, torch.full_like(ratio, math.sqrt(width))) \
        else f"x{ratio[0].item():.4g}"


def positional(model) -> str:
    """Whether the encoder's and the decoder's position tables are section 3.5's."""
    for table in (model.src_pos.table, model.tgt_pos.table):
        table = table.detach().double()
        length, width = table.shape
        pos = torch.arange(length, dtype=torch.float64)[:, None]
        angle = pos / 10000.0 ** (torch.arange(0, width, 2, dtype=torch.float64) / width)
        expected = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)
        if not torch.allclose(table, expected, atol=1e-6):
            return "another table"
    return SINUSOIDS


def last_update(cfg) -> int | None:
    return min(filter(None, (cfg.max_updates, cfg.cooldown_end)), default=None)


def schedule_steps(run) -> range:
    """The updates the schedule is read at: three warm-ups' worth, or the whole run."""
    return range(1, min(3 * 4000, last_update(run.cfg) or 3 * 4000) + 1)


def warmup(run) -> int:
    """The update at which the trainer's learning rate peaks."""
    steps = schedule_steps(run)
    return max(steps, key=run.trainer.lr)


def schedule(run) -> str:
    """Whether the trainer's rate at every update is equation (3) with its own warm-up."""
    d, w = sizes(run.model)["d_model"], warmup(run)
    for step in schedule_steps(run):
        lr, paper = run.trainer.lr(step), d ** -0.5 * min(step ** -0.5, step * w ** -1.5)
        if not math.isclose(lr, paper, rel_tol=1e-9):
            return f"{lr:.4g} at update {step}, where eq. (3) gives {paper:.4g}"
    return EQUATION_3


def adam_groups(run) -> list[dict]:
    return [g for g in run.optimizer.param_groups if "betas" in g]


def checkpoints_averaged(run) -> int:
    """How many checkpoints the trainer averages into average.pt at the end."""
    asked = []
    trainer = run.trainer
    trainer.run = SimpleNamespace(average=lambda k: asked.append(k))
    try:
        trainer.average()
    finally:
        trainer.run = None
    return asked[0]


def training_length(run) -> str:
    cfg = run.cfg
    if cfg.time_limit_min:
        return f"{cfg.time_limit_min:g} minutes"
    return f"{last_update(cfg):,} updates" if last_update(cfg) else "no limit"


# (name, the paper's value, where the paper says so, reader of a built run)
RUN = [
    ("optimizer", "Adam", "5.3", lambda r: type(r.optimizer).__name__),
    ("adam_betas", {(0.9, 0.98)}, "5.3", lambda r: {tuple(g["betas"]) for g in adam_groups(r)}),
    ("adam_eps", {1e-9}, "5.3", lambda r: {g["eps"] for g in adam_groups(r)}),
    ("warmup", 4000, "5.3", warmup),
    ("schedule", EQUATION_3, "5.3", schedule),
    ("label_smoothing", 0.1, "5.4", lambda r: r.trainer.criterion.smoothing),
    ("dropout", {0.1}, "5.4", lambda r: residual_dropout(r.model)),
    ("other_dropout", {0.0}, "5.4", lambda r: other_dropout(r.model)),
    ("model", BASE, "Table 3, base", lambda r: sizes(r.model)),
    ("norm_position", "post", "3.1", lambda r: norm_position(r.model)),
    ("shared_embeddings", True, "3.4", lambda r: shared_embeddings(r.model)),
    ("embedding_scale", "sqrt(d_model)", "3.4", lambda r: embedding_scale(r.model)),
    ("positional", SINUSOIDS, "3.5", lambda r: positional(r.model)),
    ("vocab_size", 37000, "5.1", lambda r: r.model.src_embed.weight.shape[0]),
    ("update_tokens", 25000, "5.1", lambda r: r.trainer.accum * r.cfg.max_tokens),
    ("training_length", "100,000 updates", "5.2", training_length),
    ("checkpoints_averaged", 5, "6.1", checkpoints_averaged),
]
ROWS = {name: (paper, section, read) for name, paper, section, read in RUN}


NO_RECIPE = "(no recipe)"          # `train` without --recipe: TrainConfig's defaults
SUBJECTS = [*RECIPES, NO_RECIPE]


@pytest.fixture(scope="module")
def built():
    """Each recipe's model, optimizer and trainer, and those of the defaults, as
    Trainer.from_config builds them (without the data: the vocabulary has its set size)."""
    runs = {}
    for name in SUBJECTS:
        torch.manual_seed(0)
        cfg = TrainConfig() if name == NO_RECIPE else recipe(name)
        model = FastTransformer(cfg.model_config(cfg.vocab_size))
        optimizer = make_optimizer(model, cfg.optimizer)
        trainer = Trainer(model, optimizer, None, None, cfg)   # sets torch's threads (put
        # back when the module ends: conftest's pytest_fixture_setup)
        runs[name] = SimpleNamespace(cfg=cfg, model=model, optimizer=optimizer, trainer=trainer)
    return runs


@pytest.mark.parametrize("name", SUBJECTS)
def test_every_recipe_is_the_paper_but_for_the_departures_it_declares(built, name):
    declared = DEFAULT_DEPARTURES if name == NO_RECIPE else DEPARTURES[name]
    where = "DEFAULT_DEPARTURES" if name == NO_RECIPE else f"DEPARTURES[{name!r}]"
    unknown = set(declared) - set(ROWS)
    assert not unknown, f"{where} names {sorted(unknown)}, not among {list(ROWS)}"
    wrong, stale = [], []
    for row, (paper, section, read) in ROWS.items():
        value = read(built[name])
        if value != paper and row not in declared:
            wrong.append(f"{row} is {value!r}, the paper's ({section}) is {paper!r}")
        if value == paper and row in declared:
            stale.append(f"{row} is the paper's {paper!r} ({section})")
    assert not wrong, f"{name} departs from the paper without saying so in {where}: " \
                      f"{'; '.join(wrong)}"
    assert not stale, f"{name} declares departures it does not make: {'; '.join(stale)}"


def test_every_recipe_says_why_it_departs():
    assert set(DEPARTURES) == set(RECIPES)
    for name, rows in (*DEPARTURES.items(), (NO_RECIPE, DEFAULT_DEPARTURES)):
        for row, reason in rows.items():
            assert isinstance(reason, str) and len(reason.split()) >= 3, (name, row)


def test_the_paper_base_recipe_departs_from_nothing():
    assert DEPARTURES["base-wmt14"] == {}


# ------------------------------------------------------- Table 3's two models
PRESETS = [
    ("base", BASE, {0.1}, "Table 3, base"),
    ("big", BIG, {0.3}, "Table 3, big"),
]


@pytest.mark.parametrize("preset, paper_sizes, paper_dropout, section", PRESETS)
def test_the_presets_are_table_3s_rows(preset, paper_sizes, paper_dropout, section):
    with torch.device("meta"):                    # the shapes without the memory
        for cls in (Transformer, FastTransformer):
            model = cls(ModelConfig.from_preset(preset, vocab_size=37000))
            assert sizes(model) == paper_sizes, (cls.__name__, section)
            assert residual_dropout(model) == paper_dropout, (cls.__name__, section)
            assert other_dropout(model) == {0.0} and norm_position(model) == "post"
            assert shared_embeddings(model)


# -------------------------------------------------------- section 6.1's search
def defaults(function) -> dict:
    import inspect
    return {k: p.default for k, p in inspect.signature(function).parameters.items()}


def parsed(*argv) -> dict:
    return vars(cli.build_parser().parse_args(list(argv)))


SEARCH = [("beam", 4, "beam_size"), ("alpha", 0.6, "alpha")]


@pytest.mark.parametrize("option, paper, parameter", SEARCH)
def test_the_search_is_section_6_1s_wherever_a_reader_decodes(option, paper, parameter):
    places = {"Search()": getattr(Search(), parameter),
              "translate()": getattr(defaults(translate)["search"], parameter),
              "translations()": getattr(defaults(translations)["search"], parameter),
              "python -m transformer translate": parsed("translate", "m.pt")[option],
              "python -m transformer evaluate": parsed("evaluate", "m.pt")[option],
              "python -m transformer ablate": parsed("ablate")[option]}
    assert places == dict.fromkeys(places, paper)


def test_the_output_is_at_most_the_input_plus_50_tokens():           # section 6.1
    places = {"Search()": Search().max_extra,
              "translate()": defaults(translate)["search"].max_extra,
              "translations()": defaults(translations)["search"].max_extra,
              "python -m transformer translate": parsed("translate", "m.pt")["max_extra"],
              "python -m transformer evaluate": parsed("evaluate", "m.pt")["max_extra"]}
    assert places == dict.fromkeys(places, 50)
