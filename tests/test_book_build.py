"""benchmarks/book/build.py times `make book` from an empty run cache and records it."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FAKE_MAKE = """#!/bin/sh
# stands in for make: "trains" one run in $TRANSFORMER_CACHE as chapter 7 would
mkdir -p "$TRANSFORMER_CACHE/abc" && touch "$TRANSFORMER_CACHE/abc/average.pt"
echo '{"train": {"corpus": "m*2+t", "preset": "tiny"}}' > "$TRANSFORMER_CACHE/abc/run.json"
printf '%s\\n' '{"step": 10, "loss": 3.0, "elapsed_s": 2.4}' \\
  '{"step": 3400, "valid_loss": 2.9, "train_seconds": 812.5, "precision": "bf16", "final": true}' \\
  > "$TRANSFORMER_CACHE/abc/metrics.jsonl"
echo "$@" > "$TRANSFORMER_CACHE/../args"
"""


def fake_make(tmp_path):
    make = tmp_path / "fake-make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    return make


def test_the_record_holds_the_build_and_the_training_from_an_empty_cache(tmp_path):
    make = fake_make(tmp_path)
    out = tmp_path / "record.json"
    env = {**os.environ, "TMPDIR": str(tmp_path), "TRANSFORMER_CACHE": str(tmp_path / "mine")}
    subprocess.run([sys.executable, "-m", "benchmarks.book.build", "--record", str(out),
                    "--make", str(make)], check=True, env=env, capture_output=True, timeout=120,
                   cwd=ROOT)
    record = json.loads(out.read_text())
    assert record["train_s"] == 812.5 and record["updates"] == 3400
    assert record["precision"] == "bf16" and record["preset"] == "tiny"
    assert record["wall_s"] >= 0 and "cpu" in record["provenance"]
    assert (tmp_path / "args").read_text().split() == ["-C", str(ROOT), "book"]
    assert not (tmp_path / "mine").exists()            # the user's own cache is left alone


def test_keep_moves_the_trained_run_into_the_users_cache(tmp_path):
    make = fake_make(tmp_path)
    env = {**os.environ, "TMPDIR": str(tmp_path), "TRANSFORMER_CACHE": str(tmp_path / "mine")}
    command = [sys.executable, "-m", "benchmarks.book.build", "--make", str(make), "--keep"]
    subprocess.run(command, check=True, env=env, capture_output=True, timeout=120, cwd=ROOT)
    assert (tmp_path / "mine/abc/average.pt").exists()
    assert json.loads((tmp_path / "mine/abc/metrics.jsonl").read_text().splitlines()[-1])["final"]
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                           cwd=ROOT)
    assert again.returncode and "--keep: " in again.stderr and "exists" in again.stderr
