"""Every numeric option of every command states its bounds in ``--help``, and they are the
values the code accepts: a value at a bound runs the command to the end, one past it is
refused by the parser in one line before anything is written (``train --label-smoothing 1``
passed the parser, wrote ``run.json``, then failed in the loss with a traceback).

The bounds are read from the help text a user reads, not from the code, and each is
tried with a real run of the command on a toy corpus."""
from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import pytest

import corpus_host
from helpers import one_line_error, run_cli, train_args, write_pairs
from transformer.tools import cli
from transformer.training.config import TrainConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    return next(a for a in parser._actions
                if isinstance(a, argparse._SubParsersAction)).choices


def help_entries(command: str) -> dict[str, str]:
    """Each option of ``command --help`` -> its help, on one line."""
    entries, option = {}, None
    for line in subparsers()[command].format_help().splitlines():
        start = re.match(r"^  (--[\w-]+)", line)
        if start:
            option = start.group(1)
            entries[option] = line
        elif option and line.startswith("    "):
            entries[option] += " " + line.strip()
        else:
            option = None
    return {k: " ".join(v.split()) for k, v in entries.items()}


def stated_bounds(text: str) -> list[tuple[str, float]]:
    """``(range: >= 0, < 1)`` in an option's help -> ``[(">=", 0), ("<", 1)]``."""
    found = re.search(r"\(range: ([^)]*)\)", text)
    if not found:
        return []
    return [(sign, float(number)) for sign, number in
            (part.strip().split(" ") for part in found.group(1).split(","))]


def numeric_options(command: str) -> list[str]:
    return [action.option_strings[-1] for action in subparsers()[command]._actions
            if getattr(action.type, "__name__", "") in ("int", "float")]


def trials(command: str) -> list[tuple[str, str, str]]:
    """``(option, value, "accepted" or "refused")`` for each bound ``--help`` states: the
    bound itself (refused when it is one the value stays under) and its neighbour."""
    kinds = {a.option_strings[-1]: getattr(a.type, "__name__", None)
             for a in subparsers()[command]._actions if a.option_strings}
    cases = []
    for option, text in help_entries(command).items():
        for sign, bound in stated_bounds(text):
            step = 1 if kinds[option] == "int" else 0.001
            kind = int if kinds[option] == "int" else float
            at, beyond = kind(bound), kind(bound - step if sign == ">=" else bound + step)
            if sign == "<":                               # the bound is outside
                at, beyond = kind(bound - step), kind(bound)
            cases += [(option, repr(at), "accepted"), (option, repr(beyond), "refused")]
    return cases


COMMANDS = ("train", "prepare", "translate", "evaluate", "average", "export", "ablate", "demo")


def test_every_numeric_option_states_its_bounds_in_its_help():
    assert set(subparsers()) == {*COMMANDS, "fetch"}
    for command in subparsers():
        entries = help_entries(command)
        for option in numeric_options(command):
            assert stated_bounds(entries[option]), f"{command} {option}: {entries[option]}"
    train = help_entries("train")
    assert stated_bounds(train["--label-smoothing"]) == [(">=", 0), ("<", 1)]
    assert stated_bounds(train["--vocab-size"]) == [(">=", 6)]


# ------------------------------------------------------------------ toy material
@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    """A corpus of one letter (its text allows 6 or 7 pieces, and at 7 a lone "a" is one
    token: --vocab-size 6 and --max-len 2 can both run), a richer one (300 pieces, the
    ablation's smoke budget), a finished run on the richer one, and an input file."""
    root = tmp_path_factory.mktemp("bounds")
    letters = [("a", "a"), ("a a", "a a"), ("a a a", "a a a")] * 4
    for split in ("train", "valid", "test"):
        write_pairs(root / "a", split, letters)
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))
             for _ in range(600)]
    for split, n in (("train", 300), ("valid", 6), ("test", 6)):
        pairs = [(" ".join(rng.sample(words, 5)), " ".join(rng.sample(words, 5)))
                 for _ in range(n)]
        write_pairs(root / "rich", split, pairs)
    run = root / "run"
    argv = with_value(tiny_train_args(root / "rich", run), "--vocab-size", "60")
    assert cli.main(argv) is None
    (root / "in.txt").write_text(f"{words[0]} {words[1]}\n{words[2]}\n")
    return {"root": root, "a": root / "a", "rich": root / "rich", "run": run,
            "model": run / "average.pt", "input": root / "in.txt"}


def tiny_train_args(corpus: Path, out: Path) -> list:
    """The toy run at its smallest: one update of 64 tokens, 7 pieces, width 8, one
    layer a side, on one thread that stays one."""
    return train_args(corpus, out, updates=1, vocab=7, max_tokens=64, update_tokens=64,
                      save_every=1, keep_last=1, warmup=1, threads=1, adapt_threads=False,
                      d_model=8, heads=2, layers=1)


def base_command(command: str, tiny: dict, out: Path) -> list:
    """A short run of ``command`` writing ``out`` (each trial gets its own)."""
    return {
        "train": lambda: tiny_train_args(tiny["a"], out),
        "prepare": lambda: ["prepare", "--corpus", tiny["a"], "--out", out, "--vocab-size", 7,
                            "--workers", 1],
        "translate": lambda: ["translate", tiny["model"], "--input", tiny["input"],
                              "--output", out, "--device", "cpu", "--beam", 1],
        "evaluate": lambda: ["evaluate", tiny["model"], "--corpus", tiny["rich"], "--device",
                             "cpu", "--beam", 1, "--json", out],
        "average": lambda: ["average", tiny["run"] / "checkpoints", "--out", out],
        "export": lambda: ["export", tiny["model"], "--out", out],
        "ablate": lambda: ["ablate", "--rows", "base", "--budget", "smoke", "--corpus",
                           tiny["rich"], "--out", out, "--threads", 1, "--bleu-sentences", 2,
                           "--beam", 1],
        "demo": lambda: ["demo", "--threads", 1],
    }[command]()


def with_value(argv: list, option: str, value: str) -> list:
    argv = [str(a) for a in argv]
    if option in argv:
        argv[argv.index(option) + 1] = value
        return argv
    return [*argv, option, value]


# Commands whose run is long (a process per row; the quick recipe on Multi30k): the
# values at the bounds are tried together, in one run.
TOGETHER = {"ablate", "demo"}


# demo trains the quick recipe on Multi30k by name: it needs the corpora
@pytest.mark.parametrize("command", [pytest.param(c, marks=corpus_host.needs_corpora())
                                     if c == "demo" else c for c in COMMANDS])
def test_each_bound_in_help_is_what_the_command_accepts(capsys, tiny, tmp_path, command):
    cases = trials(command)
    assert cases or command in ("average",), command
    failures = []
    for n, (option, value, verdict) in enumerate(cases):
        if verdict == "accepted" and command in TOGETHER:
            continue
        out = tmp_path / f"trial{n}"
        code, _, err = run_cli(capsys, with_value(base_command(command, tiny, out), option,
                                                  value))
        if verdict == "refused":
            line = one_line_error(err)
            said = line.partition(f" error: argument {option}: ")[2]
            if code != 2 or "must be" not in said or out.exists():
                failures.append(f"{option} {value}: exit {code}, {line!r}, "
                                f"{'wrote' if out.exists() else 'wrote nothing'}")
        elif code != 0:
            failures.append(f"{option} {value} (at its bound): exit {code}: {err[-800:]}")
    if command in TOGETHER:
        argv = base_command(command, tiny, tmp_path / "together")
        for option, value, verdict in cases:
            if verdict == "accepted":
                argv = with_value(argv, option, value)
        code, _, err = run_cli(capsys, argv)
        if code != 0:
            failures.append(f"{' '.join(argv)}: exit {code}: {err[-800:]}")
    assert not failures, "\n".join(failures)


def test_a_train_setting_out_of_bounds_is_refused_before_a_run_folder_exists(tmp_path):
    # in Python too: TrainConfig checks the same bounds, so the run never starts
    for field, value in (("label_smoothing", 1.0), ("vocab_size", 5), ("seed", 2**32),
                         ("lr_factor", float("nan")), ("seed", -1)):
        with pytest.raises(ValueError, match=rf"TrainConfig\.{field} \(--"):
            TrainConfig(out_dir=str(tmp_path / "r"), **{field: value})
    assert not (tmp_path / "r").exists()
