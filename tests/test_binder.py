"""Binder installs the book from binder/requirements.txt, run from the repository root."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_binder_requirements_resolve_from_the_repository_root():
    # repo2docker runs `pip install -r binder/requirements.txt` in the repository root:
    # `-r` paths resolve against the file, `-e` paths against the working directory. A dry
    # run without an index checks both (everything else is installed here already).
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps",
         "--no-build-isolation", "--disable-pip-version-check", "-r", "binder/requirements.txt"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "transformer" in result.stdout + result.stderr
