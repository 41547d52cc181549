"""The named training recipes (transformer/training/recipes.py): each is a valid
TrainConfig, ``train --recipe NAME`` runs it with the options given on top, and every
command in the repository that names a recipe names one that exists."""
import argparse
import dataclasses
import json
import re
from pathlib import Path

import pytest

import corpus_host
from transformer.config import PRESETS
from transformer.tools import cli
from transformer.training.command import train_command, train_config
from transformer.training.config import TrainConfig, check_value
from transformer.training.recipes import RECIPES, TOY_MODEL, recipe

REPO = Path(__file__).resolve().parents[1]


def parse(*argv) -> TrainConfig:
    return train_config(cli.build_parser().parse_args(["train", *map(str, argv)]))


def test_the_recipes_the_project_names_exist():
    assert {"tiny", "small", "book", "quick", "base-wmt14"} <= set(RECIPES)


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_validates(name):
    cfg = recipe(name)
    for f in dataclasses.fields(cfg):               # each field within its declared rules
        check_value(f, getattr(cfg, f.name))
    assert cfg.preset in PRESETS
    assert cfg.model_config(cfg.vocab_size).vocab_size == cfg.vocab_size  # overrides apply
    assert cfg.out_dir == f"runs/{name}"
    assert cfg.max_updates or cfg.time_limit_min, "a recipe ends by itself"
    assert dataclasses.replace(cfg) == cfg == RECIPES[name]


def test_the_30_minute_recipe_is_the_one_the_readme_measured():
    cfg = recipe("tiny")
    assert (cfg.preset, cfg.corpus, cfg.optimizer, cfg.model_overrides) == \
        ("tiny", "multi30k-en-de", "muon", {"dropout": 0.2})
    assert (cfg.max_tokens, cfg.update_tokens, cfg.warmup, cfg.lr_factor) == \
        (2048, 2048, 2000, 1.789)
    assert (cfg.time_limit_min, cfg.precision, cfg.threads) == (30, "auto", 2)
    assert (cfg.save_every, cfg.keep_last, cfg.eval_every) == (50, 7, 2000)


def test_the_paper_base_reaches_25000_tokens_an_update_on_1_2_4_or_8_gpus():
    cfg = recipe("base-wmt14")
    assert (cfg.preset, cfg.corpus, cfg.vocab_size, cfg.warmup, cfg.max_updates) == \
        ("base", "wmt14", 37000, 4000, 100_000)
    for gpus in (1, 2, 4, 8):                  # Trainer.accum's rule
        accum = max(1, round(cfg.update_tokens / cfg.max_tokens / gpus))
        assert accum * gpus * cfg.max_tokens == 25000, gpus


def test_a_recipe_is_a_copy_and_overrides_add_to_its_model_overrides():
    cfg = recipe("tiny", warmup=10, model_overrides={"n_heads": 2})
    assert cfg.warmup == 10 and cfg.model_overrides == {"dropout": 0.2, "n_heads": 2}
    cfg.model_overrides["dropout"] = 0.9
    assert RECIPES["tiny"].model_overrides == {"dropout": 0.2}     # the module's stays
    assert recipe("quick").model_overrides == TOY_MODEL
    with pytest.raises(ValueError, match="unknown recipe 'huge'; choose one of tiny, small"):
        recipe("huge")


def test_train_recipe_with_options_overrides_only_what_is_given():
    assert parse("--recipe", "tiny") == RECIPES["tiny"]
    cfg = parse("--recipe", "tiny", "--out", "r", "--warmup", 10, "--no-progress",
                "--model", "n_heads=2")
    assert cfg == dataclasses.replace(RECIPES["tiny"], out_dir="r", warmup=10, progress=False,
                                      model_overrides={"dropout": 0.2, "n_heads": 2})
    assert parse("--out", "r") == TrainConfig(out_dir="r")         # no recipe: the defaults
    assert parse("--recipe", "small", "--max-updates", 5).time_limit_min == 30


def test_an_override_out_of_bounds_or_an_unknown_recipe_is_one_line(capsys):
    for argv, message in ((["--recipe", "huge"], "argument --recipe: invalid choice: 'huge'"),
                          (["--recipe", "tiny", "--warmup", "0"],
                           "argument --warmup: must be >= 1, got 0")):
        with pytest.raises(SystemExit) as exc:
            cli.main(["train", *argv])
        assert exc.value.code == 2 and message in capsys.readouterr().err


def test_train_command_names_the_recipe_and_what_differs():
    cfg = recipe("tiny", out_dir="r", warmup=10, model_overrides={"n_heads": 2})
    command = train_command(cfg, recipe="tiny")
    assert command == ["python", "-m", "transformer", "train", "--recipe", "tiny", "--out", "r",
                       "--model", "n_heads=2", "--warmup", "10"]
    assert parse(*command[4:]) == cfg


def test_help_lists_every_recipe():
    parser = cli.build_parser()
    train = next(a for a in parser._actions
                 if isinstance(a, argparse._SubParsersAction)).choices["train"]
    text = train.format_help()
    for name in RECIPES:
        assert f"  {name}: " in text, name
    assert "tiny: the tiny preset on multi30k-en-de, 30 min, 2,048-token updates, muon" in text


def _commands_naming_recipes():
    """Every ``--recipe NAME`` in the Makefile, the README, the benchmarks and the book."""
    scripts = sorted(p for p in (REPO / "benchmarks").rglob("*") if p.suffix in (".py", ".sh", ".md"))
    files = [REPO / "Makefile", REPO / "README.md", *scripts,
             *sorted((REPO / "book").glob("*.ipynb"))]
    for path in files:
        for name in re.findall(r"--recipe[ =\"',]+([\w-]+)", path.read_text(encoding="utf-8")):
            yield path.name, name


def test_commands_name_existing_recipes():
    found = list(_commands_naming_recipes())
    assert ("Makefile", "tiny") in found and ("README.md", "small") in found
    assert [(f, n) for f, n in found if n not in RECIPES] == []


def test_the_makefile_train_targets_are_the_recipe_commands():
    text = (REPO / "Makefile").read_text()
    targets = dict(re.findall(r"^(train-[\w-]+): .*\n\t(.*)$", text, re.MULTILINE))
    assert targets == {
        "train-tiny": "$(PY) -m transformer train --recipe tiny --out $(TINY_RUN)",
        "train-small": "$(PY) -m transformer train --recipe small --out $(SMALL_RUN)"}


def test_the_book_trains_the_book_and_quick_recipes(monkeypatch):
    monkeypatch.syspath_prepend(REPO / "book")
    from transformer_book.runs import book_run_config
    assert book_run_config() == RECIPES["book"]
    assert book_run_config(quick=True) == RECIPES["quick"]
    assert json.loads(json.dumps(dataclasses.asdict(RECIPES["book"])))   # plain values


def test_the_book_recipe_is_the_run_its_records_chose():
    """The mixture and the dropout the Results page says were chosen on the valid splits
    are the recipe's (book/results/book_mixture.json, book_dropout.json)."""
    results = REPO / "book" / "results"
    mixture = json.loads((results / "book_mixture.json").read_text())
    [chosen] = [r for r in json.loads((results / "book_dropout.json").read_text())["runs"]
                if r.get("chosen")]
    cfg = RECIPES["book"]
    assert cfg.corpus == mixture["chosen"] == \
        f"multi30k-en-de*{chosen['multi30k_repeats']}+tatoeba-en-de"
    assert cfg.model_overrides["dropout"] == chosen["dropout"] and cfg.seed == chosen["seed"]


@corpus_host.needs_corpora()                 # the quick recipe trains on Multi30k by name
def test_a_recipe_from_the_shell_trains_as_it_does_in_python(tmp_path):
    """Chapter 7's claim, checked here: `train --recipe NAME` is the run the book trains
    with `Trainer.from_config(recipe(NAME))` (the same logged losses, same seed)."""
    import os
    import subprocess
    import sys
    from transformer.training.loop import Trainer
    cfg = recipe("quick", out_dir=str(tmp_path / "python"), max_updates=2, log_every=1,
                 threads=1)
    Trainer.from_config(cfg).fit()
    argv = train_command(cfg, str(tmp_path / "shell"), recipe="quick")
    assert argv[:6] == ["python", "-m", "transformer", "train", "--recipe", "quick"]
    done = subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TRANSFORMER_MALLOC": "system"})
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [[json.loads(line)["loss"] for line in (tmp_path / run / "metrics.jsonl")
               .read_text().splitlines() if '"loss"' in line] for run in ("python", "shell")]
    assert len(losses[0]) == 2 and losses[0] == pytest.approx(losses[1], rel=1e-4)
