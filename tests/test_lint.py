"""The house is linted: ruff's pyflakes rules (pyproject.toml) over the package, the
book (its notebooks too), the benchmarks and the tests. A function defined twice, an
unused import or an undefined name fails here."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


def ruff() -> str:
    found = str(RUFF) if RUFF.exists() else shutil.which("ruff")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is not installed (make setup installs requirements.txt)")
        pytest.skip("ruff is not installed (make setup)")
    return found


def lint(*paths) -> subprocess.CompletedProcess:
    return subprocess.run([ruff(), "check", "--no-cache", *map(str, paths)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_the_tree_is_clean():
    done = lint("transformer", "book", "benchmarks", "tests")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_function_defined_twice_fails_it(tmp_path):
    module = tmp_path / "batching.py"
    source = (REPO / "transformer" / "batching.py").read_text()
    start = source.index("def token_batches(")
    end = source.index("\ndef ", start + 1)
    module.write_text(source + "\n\n" + source[start:end])      # the merge's leftover copy
    done = lint(module)
    assert done.returncode == 1 and "F811" in done.stdout and "token_batches" in done.stdout
