"""Training for real, in miniature: crash-safe checkpoints, exact resume, clear failures."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from transformer.checkpoint import (CheckpointError, average_checkpoints, load_checkpoint,
                                    save_checkpoint, step_checkpoints)
from transformer.trainer import TrainConfig, Trainer, TrainingError, load_model

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory) -> Path:
    """The first 1,500 Multi30k training pairs and 100 validation pairs."""
    folder = tmp_path_factory.mktemp("corpus")
    for split, n in (("train", 1500), ("valid", 100), ("test", 100)):
        for side in ("src", "tgt"):
            with gzip.open(shared_data / "multi30k-en-de" / f"{split}.{side}.gz", "rt") as f:
                lines = [next(f) for _ in range(n)]
            (folder / f"{split}.{side}").write_text("".join(lines), encoding="utf-8")
    return folder


def train_command(corpus, out, updates=30):
    return [sys.executable, "-m", "transformer", "train", "--corpus", str(corpus),
            "--out", str(out), "--vocab-size", "400", "--max-tokens", "600",
            "--update-tokens", "600", "--max-updates", str(updates), "--save-every", "10",
            "--keep-last", "3", "--warmup", "20", "--precision", "fp32", "--threads", "1",
            "--log-every", "1", "--eval-bleu-sentences", "0", "--no-progress",
            "--model", "d_model=32", "--model", "d_ff=64", "--model", "n_heads=2",
            "--model", "n_encoder_layers=1", "--model", "n_decoder_layers=1"]


def losses(out: Path) -> dict[int, float]:
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


def run(cmd, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kw.pop("env", {})}
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          **kw)


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "uninterrupted"
    result = run(train_command(corpus, out))
    assert result.returncode == 0, result.stderr
    return out


def wait_for(predicate, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"training ended early: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_sigkill_mid_run_then_same_command_resumes_exactly(corpus, uninterrupted, tmp_path):
    out = tmp_path / "killed"
    cmd = train_command(corpus, out)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wait_for(lambda: (out / "metrics.jsonl").exists() and max(losses(out), default=0) >= 15, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert [p.name for p in step_checkpoints(out / "checkpoints")][-1] in (
        "step_0000010.pt", "step_0000020.pt")
    result = run(cmd)
    assert result.returncode == 0, result.stderr
    assert "resumed from" in result.stdout
    assert losses(out) == losses(uninterrupted)            # every update, bit for bit
    assert len(losses(out)) == 30


def test_sigkill_while_writing_a_checkpoint(corpus, uninterrupted, tmp_path):
    out = tmp_path / "killed_in_save"
    cmd = train_command(corpus, out)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                            "TRANSFORMER_TEST_SAVE_DELAY": "30"})
    for line in proc.stdout:                        # the save of update 20 is half written
        if "writing checkpoint step_0000020.pt" in line:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ckpts = out / "checkpoints"
    assert [p.name for p in step_checkpoints(ckpts)] == ["step_0000010.pt"]
    assert list(ckpts.glob(".step_0000020.pt.*.tmp")), "the half-written file should be there"
    result = run(cmd)
    assert result.returncode == 0, result.stderr
    assert "resumed from" in result.stdout and "step_0000010.pt" in result.stdout
    assert losses(out) == losses(uninterrupted)
    assert not list(ckpts.glob("*.tmp"))            # the stray file was cleaned up
    assert [p.name for p in step_checkpoints(ckpts)] == [
        "step_0000010.pt", "step_0000020.pt", "step_0000030.pt"]


def test_checkpoints_load_weights_only_and_average(uninterrupted):
    paths = step_checkpoints(uninterrupted / "checkpoints")
    assert len(paths) == 3                                   # --keep-last 3
    states = [torch.load(p, weights_only=True) for p in paths]
    averaged = average_checkpoints(paths)
    for key, value in averaged["model"].items():
        if value.is_floating_point():
            expected = sum(s["model"][key].double() for s in states) / 3
            assert torch.allclose(value.double(), expected, atol=1e-6), key
    disk = load_checkpoint(uninterrupted / "average.pt")
    assert disk["averaged_from"] == [str(p) for p in paths]
    model, tokenizer = load_model(uninterrupted / "average.pt")
    assert tokenizer.vocab_size == 400 and not model.training


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_checkpoint_gives_a_clear_error(uninterrupted, tmp_path, damage):
    path = tmp_path / "bad.pt"
    data = (uninterrupted / "average.pt").read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00not a checkpoint" * 50,
                      "empty": b""}[damage])
    with pytest.raises(CheckpointError, match=f"{path}.*corrupt or truncated"):
        load_checkpoint(path)
    result = run([sys.executable, "-m", "transformer", "translate", str(path)], input="Hello\n")
    assert result.returncode != 0
    assert result.returncode == 2
    assert f"error: checkpoint {path} is corrupt or truncated" in result.stderr
    assert "Traceback" not in result.stderr


def test_checkpoint_with_code_is_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "payload": Path("x")}, path)      # a pickled object, not data
    with pytest.raises(CheckpointError, match="corrupt or truncated|cannot be loaded"):
        load_checkpoint(path)


def test_resume_into_a_folder_with_other_settings_is_refused(corpus, uninterrupted):
    cmd = train_command(corpus, uninterrupted)
    cmd[cmd.index("--vocab-size") + 1] = "500"
    result = run(cmd)
    assert result.returncode != 0 and "different settings" in result.stderr


def test_nan_loss_stops_with_clear_message_and_keeps_last_checkpoint(corpus, tmp_path):
    cfg = TrainConfig(out_dir=str(tmp_path / "nan"), corpus=str(corpus), vocab_size=400,
                      max_tokens=600, update_tokens=600, max_updates=40, save_every=5,
                      warmup=20, precision="fp32", eval_bleu_sentences=0, progress=False,
                      model_overrides=dict(d_model=32, d_ff=64, n_heads=2, n_encoder_layers=1,
                                           n_decoder_layers=1))
    trainer = Trainer(cfg)
    original = trainer.train_update

    def poisoned(micro, n_tokens):           # a broken batch at update 8
        if trainer.step == 7:
            with torch.no_grad():
                trainer.model.encoder_layers[0].feed_forward.linear1.weight[0, 0] = float("nan")
        return original(micro, n_tokens)

    trainer.train_update = poisoned
    with pytest.raises(TrainingError, match=r"loss is nan at update 8.*step_0000005.pt"):
        trainer.fit()
    state = load_checkpoint(tmp_path / "nan" / "checkpoints" / "step_0000005.pt")
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_every_command_has_help():
    for command in ("train", "translate", "evaluate", "average"):
        result = run([sys.executable, "-m", "transformer", command, "--help"])
        assert result.returncode == 0 and "usage:" in result.stdout, command
