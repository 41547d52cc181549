"""The command line's parser: the options of ``train`` generated from TrainConfig's fields,
every option's help and default, one help text and one bound rule for the options commands
share, bad values refused in one line before anything is written, and each command's
parser beside its handler.

Runs ``transformer.tools.cli.main`` in this process (the toy corpus of tests/conftest.py
where a value is tried on ``train``)."""
import argparse
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import one_line_error, run_cli, train_args
from transformer.tools import cli
from transformer.training.command import train_command, train_config
from transformer.training.config import TrainConfig, flag, result_settings, run_settings

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_option_of_every_command_has_help_and_shows_its_default():
    parser = cli.build_parser()
    top = parser.format_help()
    assert "::" not in top and "\\" not in top            # no raw reST, no line continuations
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {"fetch", "train", "prepare", "translate", "evaluate",
                                       "average", "export", "ablate", "demo"}
    for name, sub in subparsers.choices.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if action.option_strings:
                shown = formatter._get_help_string(action) % {"default": action.default}
                assert action.required or "default" in shown, (name, action.option_strings)


def test_train_options_are_the_fields_of_train_config():
    parser = cli.build_parser()
    train = next(a for a in parser._actions
                 if isinstance(a, argparse._SubParsersAction)).choices["train"]
    by_dest = {a.dest: a for a in train._actions}
    for f in dataclasses.fields(TrainConfig):
        action = by_dest[f.name]
        assert flag(f) in action.option_strings
        assert f.metadata["help"].replace("%", "%%") in action.help
        assert action.default == argparse.SUPPRESS, f.name     # so a recipe's value stays
    assert "--out" in by_dest["out_dir"].option_strings
    assert "--model" in by_dest["model_overrides"].option_strings
    help_text = train.format_help()
    assert "(default: 4096)" in help_text and "(default: multi30k-en-de)" in help_text


def test_train_command_round_trips_a_config(tmp_path):
    cfg = TrainConfig(out_dir=str(tmp_path / "r"), corpus="tatoeba-en-de", direction="de-en",
                      lr_factor=0.5, time_limit_min=1.5, compile=True, progress=False,
                      model_overrides={"norm_position": "pre", "n_heads": 4}, threads=2)
    command = train_command(cfg)
    assert command[:6] == ["python", "-m", "transformer", "train", "--out", cfg.out_dir]
    assert "--no-progress" in command and "--compile" in command
    assert train_config(cli.build_parser().parse_args(command[3:])) == cfg
    assert train_command(cfg, "elsewhere")[5] == "elsewhere"


def test_which_fields_define_a_run_is_declared_on_the_fields():
    run, result = run_settings(TrainConfig()), result_settings(TrainConfig())
    assert {"corpus", "vocab_size", "seed", "model_overrides", "warmup"} <= set(run)
    assert not {"out_dir", "data_root", "progress", "max_updates", "threads", "device"} & set(run)
    assert set(run) < set(result) and {"max_updates", "threads"} <= set(result)
    assert not {"out_dir", "data_root", "progress"} & set(result)


@pytest.mark.parametrize("option, value, message", [
    ("--threads", "-1", "argument --threads: must be >= 0, got -1"),
    ("--max-updates", "-5", "argument --max-updates: must be >= 1, got -5"),
    ("--max-updates", "0", "argument --max-updates: must be >= 1, got 0"),   # not "no limit"
    ("--vocab-size", "5", "argument --vocab-size: must be >= 6, got 5"),
    ("--label-smoothing", "1", "argument --label-smoothing: must be < 1, got 1.0"),
    ("--label-smoothing", "nan", "argument --label-smoothing: must be a finite number, got nan"),
    ("--warmup", "ten", "argument --warmup: expected int, got 'ten'"),
])
def test_bad_train_values_fail_in_one_line_before_anything_is_written(
        capsys, toy_corpus, tmp_path, option, value, message):
    argv = train_args(toy_corpus, tmp_path / "r")
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    code, _, err = run_cli(capsys, argv)
    assert code == 2 and message in one_line_error(err)
    assert not (tmp_path / "r").exists()


def test_bad_values_in_python_name_the_field_and_its_flag():
    with pytest.raises(ValueError, match=r"TrainConfig.threads \(--threads\) must be >= 0"):
        TrainConfig(threads=-1)
    with pytest.raises(ValueError, match=r"TrainConfig.precision \(--precision\) must be one"):
        TrainConfig(precision="fp8")
    with pytest.raises(ValueError, match="n_heads"):
        TrainConfig(model_overrides={"n_heads": 7})      # d_model 256 is not divisible by 7


def test_shared_options_have_one_help_text_taken_from_train_config():
    parser = cli.build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    seen = set()
    for command in ("translate", "evaluate", "ablate", "demo"):
        for action in subs[command]._actions:
            if action.dest in ("corpus", "direction", "data_root", "device", "threads"):
                f = fields[action.dest]
                assert action.help == f.metadata["help"], (command, action.dest)
                assert flag(f) in action.option_strings
                assert action.choices == f.metadata.get("choices"), (command, action.dest)
                seen.add(action.dest)
    assert seen == {"corpus", "direction", "data_root", "device", "threads"}


def test_numeric_bounds_are_one_rule_for_train_config_and_the_command_line(capsys):
    from transformer.training.config import out_of_bounds
    assert out_of_bounds(0, low=1) == "must be >= 1, got 0"
    assert out_of_bounds(2, high=1) == "must be <= 1, got 2" and out_of_bounds(1, 1, 1) is None
    with pytest.raises(ValueError, match=r"TrainConfig.warmup \(--warmup\) must be >= 1, got 0"):
        TrainConfig(warmup=0)
    code, _, err = run_cli(capsys, ["train", "--warmup", "0"])
    assert code == 2 and "argument --warmup: must be >= 1, got 0" in err
    code, _, err = run_cli(capsys, ["evaluate", "x.pt", "--threads", "-2"])
    assert code == 2 and "argument --threads: must be >= 0, got -2" in err


def test_each_commands_parser_is_beside_its_handler():
    """cli.py reads one command at a time: ``add_NAME`` (its options) directly followed by
    the helpers of that command and ``cmd_NAME``, and every subcommand is in COMMANDS."""
    source = Path(cli.__file__).read_text()
    names = re.findall(r"^def add_(\w+)\(sub\):", source, flags=re.M)
    assert names == [add.__name__[4:] for add in cli.COMMANDS]
    order = re.findall(r"^def ((?:add|cmd)_\w+)\(", source, flags=re.M)
    assert order == [f"{kind}_{name}" for name in names for kind in ("add", "cmd")]
    parser = cli.build_parser()
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(choices.choices) == sorted(names)
    for name, sub in choices.choices.items():
        assert sub.get_default("handler") is getattr(cli, f"cmd_{name}")


def test_both_console_entry_points_are_one(tmp_path):
    # pyproject's `transformer` script and `python -m transformer` run transformer.tools.cli.run
    assert 'transformer = "transformer.tools.cli:run"' in (REPO / "pyproject.toml").read_text()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRANSFORMER_MALLOC": "system"}
    (tmp_path / "file").write_text("")
    args = ["average", tmp_path / "missing.pt", "--out", tmp_path / "file" / "avg.pt"]
    for program in (["-m", "transformer"],
                    ["-c", "import sys; from transformer.tools.cli import run; sys.exit(run())"]):
        result = subprocess.run([sys.executable, *program, *map(str, args)], env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.splitlines() == [f"error: checkpoint not found: {args[1]}"]
