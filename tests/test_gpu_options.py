"""The GPU scripts' options (benchmarks/gpu/common.sh): each is listed in the script's
--help with its default, no time limit is on unless asked for, and a mistyped option or
value is one line and exit 2, before anything runs. (The dry runs, tests/test_gpu_*.py,
check that the options reach the steps.)"""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OPTIONS = {"check.sh": ["--steps", "--budget-min", "--limit-min"],
           "train.sh": ["--steps", "--updates", "--train-min", "--limit-min"],
           "table3.sh": ["--budget-min", "--jobs", "--limit-min"]}


def run(script, *args, out=None):
    env = {"PATH": "/usr/bin:/bin", **({"OUT": str(out)} if out else {})}
    return subprocess.run(["bash", f"benchmarks/gpu/{script}", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("script", OPTIONS)
def test_help_lists_every_option_with_its_default(script):
    done = run(script, "--help")
    assert done.returncode == 0 and not done.stderr
    block = done.stdout.split("\nOptions:\n")[1].split("\nEnvironment:")[0]
    listed = dict(re.findall(r"^  (--[a-z-]+) [^\n]*(?:\n {4,}[^\n]*)*?\(default:? ([^)]*)\)",
                             block, re.M))
    assert sorted(listed) == sorted(OPTIONS[script]), listed
    for option, default in listed.items():
        if option.endswith("-min"):                 # no time limit unless one is asked for
            assert default.startswith("0: "), (option, default)
    assert f"bash benchmarks/gpu/{script} --dry-run" in done.stdout


@pytest.mark.parametrize("script, args, message", [
    ("check.sh", ["--bogus"], "unknown option '--bogus' (options: --dry-run --steps "
                              "--budget-min --limit-min; see --help)"),
    ("check.sh", ["--limit-min", "soon"], "--limit-min takes minutes (a number, 0: no limit), "
                                          "not 'soon'"),
    ("check.sh", ["--steps", "1 3"], "--steps: no step '3' (steps: 1 2)"),
    ("train.sh", ["--updates", "0"], "--updates takes a whole number above 0, not '0'"),
    ("train.sh", ["--dry-run", "--train-min"], "--train-min needs a value"),
    ("table3.sh", ["--steps", "1"], "unknown option '--steps' (options: --dry-run "
                                    "--budget-min --jobs --limit-min; see --help)"),
    ("table3.sh", ["--jobs", "two"], "--jobs takes a whole number above 0, not 'two'"),
])
def test_a_mistake_is_one_line_and_exit_2(script, args, message, tmp_path):
    done = run(script, *args, out=tmp_path / "out")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"benchmarks/gpu/{script}: {message}\n"
    assert not (tmp_path / "out").exists()                       # nothing ran
