"""benchmarks/gpu/train.sh (the base model, torchrun, the chapters on a GPU),
rehearsed on the CPU, and benchmarks/gpu/train_record.py on what the rehearsal leaves."""
import json
import subprocess
import sys
from pathlib import Path

from helpers import gpu_dry_run

REPO = Path(__file__).resolve().parents[1]


def test_gpu_train_dry_run_on_the_cpu_and_its_record(shared_data, tmp_path):
    if not (shared_data / "tatoeba-en-de").is_dir():
        import pytest
        pytest.skip(f"no tatoeba-en-de in {shared_data}")
    out = tmp_path / "gpu_train"
    result, log = gpu_dry_run("train.sh", out, shared_data, "--train-min", "30",
                              "--limit-min", "20")
    assert result.returncode == 0, log[-4000:]
    assert "gpu_train: ok" in log
    for name in ("corpus", "train", "score multi30k-en-de", "score tatoeba-en-de",
                 "record train", "torchrun", "notebooks parse", "notebooks"):
        assert f"{name}: exit 0" in log, name
    # what comes back from the device: flat, at most 8 files
    back = sorted(p.name for p in out.iterdir() if p.is_file())
    assert back == ["log.txt", "metrics.jsonl", "notebooks.json", "rehearsal.ipynb",
                    "torchrun.json", "train.json"]

    train = json.loads((out / "train.json").read_text())
    assert train["updates"] == 6 and train["settings"]["preset"] == "base"
    assert train["settings"]["corpus"].endswith("multi30k+tatoeba-en-de")
    assert set(train["scores"]) == {"multi30k-en-de", "tatoeba-en-de"}
    assert all(s["beam"] == 4 and s["sentences"] == 5 and "chrf" in s
               for s in train["scores"].values())
    assert train["tokens_per_s"]["median"] > 0 and train["provenance"]["commit"]
    assert "--preset base" in train["provenance"]["command"]
    assert "--time-limit-min 30" in train["provenance"]["command"]     # --train-min reaches it
    assert "(steps: 1 2 3; limit a step: 20 min)" in log
    torchrun = json.loads((out / "torchrun.json").read_text())
    assert torchrun["ok"] and torchrun["backend"] == "gloo", torchrun
    assert 0 < torchrun["resumed_from"] < torchrun["killed_at_update"] < torchrun["finished_at"]
    notebooks = json.loads((out / "notebooks.json").read_text())
    assert notebooks["ok"] and notebooks["notebooks"][0]["cells_run"] == 2

    record = tmp_path / "gpu_train.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu.train_record", str(out), "--out",
                           str(record)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["train", "torchrun",
                                                                         "notebooks"]
    data = json.loads(record.read_text())
    assert data["train"]["scores"] == train["scores"] and data["torchrun"]["ok"]
    # a later run of some steps alone updates the record and keeps the other parts
    (out / "train.json").unlink()
    subprocess.run([sys.executable, "-m", "benchmarks.gpu.train_record", str(out), "--out",
                    str(record)], cwd=REPO, check=True, capture_output=True, timeout=60)
    assert json.loads(record.read_text())["train"] == data["train"]
