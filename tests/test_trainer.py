"""Training for real, in miniature: crash-safe checkpoints, exact resume, clear failures."""
import gzip
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

from helpers import toy_run, toy_trainer, train_args, write_corpus
from transformer.checkpoint import (CheckpointError, average_checkpoints, load_checkpoint,
                                    step_checkpoints)
from transformer.fast import FastTransformer
from transformer.inference import load_model
from transformer.training.run_folder import RunFolder
from transformer.schedule import noam_lr
from transformer.training.config import TrainConfig, TrainingError
import transformer.training.precision as precision_module
from transformer.training.loop import Trainer
from transformer.training.precision import autocast, cpu_has_native_bf16, resolve_precision

REPO = Path(__file__).resolve().parents[1]

# Runs `python -m transformer ...` with one test-only change, chosen by environment
# variables, so that a test can SIGKILL it at a known point (production code has no hooks):
#   STOP_AFTER_LOG=k      block after metrics.jsonl got the record of update k
#   STALL_WRITE=name      block halfway through writing the file whose name contains `name`
WRAPPER = textwrap.dedent('''
    import os, sys, time
    import transformer.output as output
    import transformer.training.run_folder as run_folder
    from transformer.tools import cli

    def stall(message):
        print(message, flush=True)
        time.sleep(3600)

    if os.environ.get("STALL_WRITE"):
        write = output.Output.write
        def half_write(self, data):           # every output file is written by Output.write
            if os.environ["STALL_WRITE"] in str(self.path):
                write(self, memoryview(data)[: len(data) // 2])
                stall("half of the checkpoint written")
            return write(self, data)
        output.Output.write = half_write
    if os.environ.get("STOP_AFTER_LOG"):
        stop, log = int(os.environ["STOP_AFTER_LOG"]), run_folder.RunFolder.log
        def log_then_stop(self, record):
            log(self, record)
            if record["step"] == stop and "loss" in record:
                stall(f"stopped after update {stop}")
        run_folder.RunFolder.log = log_then_stop
    cli.main(sys.argv[1:])
''')


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


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wrapper") / "train_until_killed.py"
    path.write_text(WRAPPER)
    return path


@pytest.fixture
def one_thread():
    """In-process training on one thread, as the subprocesses' --threads 1 (a shared
    2-core machine thrashes with more); conftest puts the count back after the test."""
    torch.set_num_threads(1)


# The toy run (helpers.toy_run) on the Multi30k pairs of `corpus`: a vocabulary of 400
# pieces, updates of 600 tokens, one layer a side of two heads.
MULTI30K_RUN = dict(vocab=400, max_tokens=600, update_tokens=600, heads=2, layers=1)


def train_command(corpus, out, updates=30):
    return [sys.executable, "-m", "transformer",
            *train_args(corpus, out, updates=updates, save_every=10, keep_last=3, warmup=20,
                        threads=1, **MULTI30K_RUN)]


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def losses(out: Path) -> list[tuple[int, float]]:
    """(update, loss) of every training record, in file order: duplicates would show."""
    return [(r["step"], r["loss"]) for r in records(out) if "loss" in r]


def run(cmd, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **kw.pop("env", {})}
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          **kw)


def start_and_kill(wrapper, cmd, marker: str, **env):
    """Run ``cmd`` (a ``python -m transformer`` command) through the wrapper; SIGKILL it
    once it prints ``marker``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO), **env}
    proc = subprocess.Popen([sys.executable, str(wrapper), *cmd[3:]], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if marker in line:
                break
        else:
            raise AssertionError(f"training ended before {marker!r}: {proc.stderr.read()}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "uninterrupted"
    result = run(train_command(corpus, out))
    assert result.returncode == 0, result.stderr
    return out


def test_uninterrupted_log_has_each_update_once(uninterrupted):
    assert [step for step, _ in losses(uninterrupted)] == list(range(1, 31))
    assert [r["step"] for r in records(uninterrupted) if r.get("final")] == [30]


def test_sigkill_mid_run_then_same_command_resumes_exactly(corpus, uninterrupted, wrapper,
                                                           tmp_path):
    out = tmp_path / "killed"
    cmd = train_command(corpus, out)
    start_and_kill(wrapper, cmd, "stopped after update 15", STOP_AFTER_LOG="15")
    assert [p.name for p in step_checkpoints(out / "checkpoints")] == ["step_0000010.pt"]
    assert [step for step, _ in losses(out)] == list(range(1, 16))   # 11-15 are after it
    result = run(cmd)
    assert result.returncode == 0, result.stderr
    assert "resumed from" in result.stdout and "step_0000010.pt" in result.stdout
    assert losses(out) == losses(uninterrupted)            # every update once, bit for bit
    assert [r["step"] for r in records(out) if r.get("final")] == [30]


def test_sigkill_before_the_first_checkpoint_starts_afresh(corpus, uninterrupted, wrapper,
                                                           tmp_path):
    out = tmp_path / "killed_early"
    cmd = train_command(corpus, out)
    start_and_kill(wrapper, cmd, "stopped after update 7", STOP_AFTER_LOG="7")
    assert not step_checkpoints(out / "checkpoints") and len(losses(out)) == 7
    result = run(cmd)
    assert result.returncode == 0, result.stderr
    assert "resumed from" not in result.stdout
    assert losses(out) == losses(uninterrupted)     # the dead run's 7 lines are gone


def test_sigkill_while_writing_a_checkpoint(corpus, uninterrupted, wrapper, tmp_path):
    out = tmp_path / "killed_in_save"
    cmd = train_command(corpus, out)
    start_and_kill(wrapper, cmd, "half of the checkpoint written", STALL_WRITE="step_0000020")
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
    assert "optimizer" not in averaged and averaged["step"] == states[-1]["step"]
    disk = load_checkpoint(uninterrupted / "average.pt")
    assert disk["averaged_from"] == [str(p) for p in paths]
    model, tokenizer = load_model(uninterrupted / "average.pt")
    assert tokenizer.vocab_size == 400 and not model.training
    assert isinstance(model, FastTransformer)


def test_averaging_holds_one_checkpoint_in_memory_at_a_time(uninterrupted, monkeypatch):
    import weakref
    import transformer.checkpoint as checkpoint

    class Loaded(dict):             # a dict that a weak reference can watch
        pass
    alive, peak, real = [0], [0], checkpoint.load_checkpoint

    def load(path, map_location="cpu"):
        state = Loaded(real(path, map_location))
        alive[0] += 1
        weakref.finalize(state, lambda: alive.__setitem__(0, alive[0] - 1))
        peak[0] = max(peak[0], alive[0])
        return state
    monkeypatch.setattr(checkpoint, "load_checkpoint", load)
    paths = step_checkpoints(uninterrupted / "checkpoints")
    average_checkpoints(paths)
    assert len(paths) == 3 and peak[0] == 1


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_checkpoint_gives_a_clear_error(uninterrupted, tmp_path, damage):
    path = tmp_path / "bad.pt"
    data = (uninterrupted / "average.pt").read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00not a checkpoint" * 50,
                      "empty": b""}[damage])
    with pytest.raises(CheckpointError, match=f"{path}.*corrupt or truncated"):
        load_checkpoint(path)
    result = run([sys.executable, "-m", "transformer", "translate", str(path)], input="Hello\n")
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
    assert result.returncode == 2 and "different settings" in result.stderr
    assert "vocab_size 400 there, 500 now" in result.stderr and "Traceback" not in result.stderr


def test_nan_loss_stops_with_clear_message_and_keeps_last_checkpoint(corpus, tmp_path,
                                                                     one_thread):
    cfg = toy_run(corpus, tmp_path / "nan", updates=40, save_every=5, warmup=20,
                  **MULTI30K_RUN)
    trainer = Trainer.from_config(cfg)
    original = trainer.train_update

    def poisoned(micro, n_tokens):           # a broken batch at update 8
        if trainer.step == 7:
            with torch.no_grad():
                for parameter in trainer.model.parameters():
                    parameter.view(-1)[0] = float("nan")
        return original(micro, n_tokens)

    trainer.train_update = poisoned
    with pytest.raises(TrainingError, match=r"loss is nan at update 8.*step_0000005.pt"):
        trainer.fit()
    state = load_checkpoint(tmp_path / "nan" / "checkpoints" / "step_0000005.pt")
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


# ------------------------------------------------- the update loop, handed its parts
def test_the_trainer_sets_the_learning_rate_of_equation_3_on_every_update(one_thread):
    cfg = TrainConfig(max_tokens=64, update_tokens=64, max_updates=12, warmup=5, lr_factor=2.0,
                      precision="fp32", log_every=1, eval_bleu_sentences=0, progress=False)
    trainer = toy_trainer(cfg)
    used, step, d_model = [], trainer.optimizer.step, trainer.model_cfg.d_model

    def recording_step(*args, **kw):            # the rate Adam actually applies
        used.append([group["lr"] for group in trainer.optimizer.param_groups])
        return step(*args, **kw)

    trainer.optimizer.step = recording_step
    trainer.fit()
    expected = [noam_lr(k, d_model, 5, 2.0) for k in range(1, 13)]   # updates 1, 2, ..., 12
    assert used == [[lr] for lr in expected]
    assert [r["lr"] for r in trainer.records if "loss" in r] == expected
    assert expected[:5] == sorted(expected[:5]) and expected[5:] == sorted(expected[5:])[::-1]


def test_the_trainer_cools_down_to_the_cooldown_end_and_stops_there(one_thread):
    cfg = TrainConfig(max_tokens=64, update_tokens=64, max_updates=50, warmup=5, cooldown=4,
                      cooldown_end=10, precision="fp32", log_every=1, eval_bleu_sentences=0,
                      progress=False)
    trainer = toy_trainer(cfg)
    used, step, d_model = [], trainer.optimizer.step, trainer.model_cfg.d_model

    def recording_step(*args, **kw):
        used.append(trainer.optimizer.param_groups[0]["lr"])
        return step(*args, **kw)

    trainer.optimizer.step = recording_step
    assert trainer.fit()["step"] == 10                      # cooldown_end, before max_updates
    start = noam_lr(6, d_model, 5)                          # the cool-down starts after update 6
    assert used == pytest.approx([noam_lr(k, d_model, 5) for k in range(1, 7)]
                                 + [start, start * 3 / 4, start / 2, start / 4], rel=1e-12)


@pytest.mark.parametrize("cooldown,end", [(5, 0), (0, 5), (6, 5)])
def test_cooldown_and_its_end_go_together(cooldown, end):
    with pytest.raises(ValueError, match=r"--cooldown\) and cooldown_end \(--cooldown-end"):
        TrainConfig(cooldown=cooldown, cooldown_end=end)


def test_a_hand_built_trainer_writes_nothing_without_a_run_folder(tmp_path, monkeypatch,
                                                                  one_thread):
    monkeypatch.chdir(tmp_path)
    cfg = TrainConfig(max_tokens=64, update_tokens=128, max_updates=3, precision="fp32",
                      eval_bleu_sentences=0, progress=False, log_every=1)
    trainer = toy_trainer(cfg)
    assert trainer.accum == 2
    result = trainer.fit()
    assert result["step"] == 3 and [r["step"] for r in trainer.records] == [1, 2, 3, 3]
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------- metrics on resume
def write_metrics(folder: RunFolder, lines: list[str]) -> None:
    folder.path.mkdir(parents=True, exist_ok=True)
    folder.metrics_file.write_text("".join(lines))


def test_resume_keeps_exactly_the_records_up_to_the_checkpoint(tmp_path):
    folder = RunFolder(tmp_path)
    line = lambda step, **kw: json.dumps({"step": step, **kw}) + "\n"   # noqa: E731
    write_metrics(folder, [line(s, loss=1.0) for s in range(1, 8)]
                  + [line(5, valid_loss=2.0), line(7, valid_loss=2.0, final=True)]
                  + ['{"step": 8, "lo'])                      # torn by a kill
    assert [r["step"] for r in folder.records()] == [1, 2, 3, 4, 5, 6, 7, 5, 7]
    folder.keep_metrics(5)
    assert folder.records() == [{"step": s, "loss": 1.0} for s in range(1, 6)] + [
        {"step": 5, "valid_loss": 2.0}]
    folder.keep_metrics(None)                                     # a fresh start
    assert folder.records() == []


def test_an_unreadable_metrics_line_names_the_file_and_line(tmp_path):
    folder = RunFolder(tmp_path)
    write_metrics(folder, ['{"step": 1, "loss": 1.0}\n', "garbage\n", '{"step": 2}\n'])
    with pytest.raises(TrainingError, match=rf"{folder.metrics_file}: line 2 "):
        folder.keep_metrics(1)


# ------------------------------------------------------------ precision "auto"
# CPUs by their flags, as torch and /proc/cpuinfo spell them, with what "auto" picks there
CPUS = {"avx2-only (an EPYC of 2019)": ({"avx", "avx2", "fma"}, "fp32"),
        "avx512 without bf16": ({"avx2", "avx512_f", "avx512_bw", "avx512_vnni"}, "fp32"),
        "avx512-bf16": ({"avx2", "avx512_f", "avx512_bf16"}, "bf16"),
        "amx": ({"avx2", "amx_tile", "amx_int8", "amx_bf16"}, "bf16")}


@pytest.mark.parametrize("cpu", CPUS)
def test_native_bf16_and_auto_follow_the_cpus_flags(monkeypatch, tmp_path, cpu):
    flags, expected = CPUS[cpu]
    monkeypatch.setattr(precision_module, "_warned_slow_bf16", True)
    # torch's view: a dict of every capability it knows, with values that are not flags
    known = {"avx", "avx2", "fma", "avx512_f", "avx512_bw", "avx512_vnni", "avx512_bf16",
             "amx_tile", "amx_int8", "amx_bf16"}
    capabilities = {name: name in flags for name in known}
    capabilities.update(l2_cache_size=1048576, num_logical_cores=8, cpu_name="Some CPU")
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities, raising=False)
    assert precision_module.cpu_flags() == flags
    assert cpu_has_native_bf16() == (expected == "bf16")
    assert resolve_precision("auto", torch.device("cpu")) == expected
    # a torch without get_capabilities reads the flags line of /proc/cpuinfo
    monkeypatch.delattr(torch.cpu, "get_capabilities")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: {cpu}\nflags\t\t: fpu "
                       f"{' '.join(sorted(flags))}\n\n")
    monkeypatch.setattr(precision_module, "CPUINFO", cpuinfo)
    assert precision_module.cpu_flags() == flags | {"fpu"}
    assert resolve_precision("auto", torch.device("cpu")) == expected
    monkeypatch.setattr(precision_module, "CPUINFO", tmp_path / "absent")   # unreadable:
    assert resolve_precision("auto", torch.device("cpu")) == "bf16"        # as before


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_on_a_cpu_is_bf16_only_with_bf16_instructions(monkeypatch, native):
    # Without them PyTorch's bf16 matmul takes a generic path: an update of the 30-minute
    # recipe ran 18x slower than fp32 on an AVX2-only EPYC (trainer.cpu_has_native_bf16)
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: native)
    monkeypatch.setattr(precision_module, "_warned_slow_bf16", False)
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) == ("bf16" if native else "fp32")
    assert resolve_precision("fp32", cpu) == "fp32"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve_precision("bf16", cpu) == "bf16"           # asked for: kept
        assert resolve_precision("bf16", cpu) == "bf16"
    messages = [str(w.message) for w in seen]
    if native:
        assert messages == []
    else:                                                         # one warning a process
        assert len(messages) == 1 and messages[0].startswith(
            "--precision bf16 on a CPU without AVX512-BF16 or AMX") and \
            "--precision auto picks fp32" in messages[0]
    assert resolve_precision("fp16", cpu) == "fp16"             # asked for: loss scaling


@pytest.mark.parametrize("capability,expected", [((7, 0), "fp16"), ((7, 5), "fp16"),
                                                 ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_auto_precision_on_a_gpu_is_bf16_only_where_it_is_native(monkeypatch, capability,
                                                                 expected):
    # A stand-in device: a T4 (7.5) or a V100 (7.0) has no bf16 tensor cores, although
    # torch.cuda.is_bf16_supported() says True there (it counts emulation)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert resolve_precision("auto", torch.device("cuda", 0)) == expected


def _tiny_run(corpus, out, **kw) -> TrainConfig:
    """The toy run on Multi30k pairs, on the CPU, in the precision --precision auto picks
    (the tests of ``auto`` below count on it)."""
    return toy_run(corpus, out, **{**MULTI30K_RUN, "device": "cpu", "precision": "auto", **kw})


# ------------------------------------------------------------ fp16 with loss scaling
# The path a Colab T4 takes (auto picks fp16 there), run here on the CPU: torch's CPU
# float16 autocast and torch.amp.GradScaler("cpu") behave as their CUDA forms do.
@pytest.fixture
def high_initial_scale(monkeypatch):
    """Every GradScaler the trainer makes starts at 2**30: the first updates overflow
    fp16, so the scale backs off in a run of a few updates (CUDA's default, 2**16, would
    take a longer run to show it)."""
    made = torch.amp.GradScaler
    monkeypatch.setattr(torch.amp, "GradScaler",
                        lambda device: made(device, init_scale=2.0 ** 30))


def test_fp16_trains_with_loss_scaling_and_skips_an_overflowing_update(corpus, tmp_path,
                                                                       one_thread,
                                                                       high_initial_scale):
    trainer = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", precision="fp16",
                                            max_updates=30, log_every=1, warmup=10))
    assert trainer.precision == "fp16" and trainer.scaler is not None
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    batches = iter(trainer.train_iter)
    trainer.train_update(*trainer.next_micro_batches(batches))    # at 2**30: overflows
    assert trainer.step == 0 and trainer.scaler.get_scale() == 2.0 ** 29
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    result = trainer.fit()
    logged = trainer.records
    skipped = [r for r in logged if r.get("skipped_overflow")]
    losses = [r["loss"] for r in logged if "loss" in r]
    assert result["step"] == 30 and [r["step"] for r in logged if "loss" in r] == \
        list(range(1, 31))                                # a skipped update is not counted
    assert skipped and all(r["loss_scale"] < 2.0 ** 29 for r in skipped)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.5      # the loss falls
    saved = torch.load(trainer.run.checkpoints()[-1], weights_only=True)
    assert saved["precision"] == "fp16"
    assert saved["scaler"]["scale"] == trainer.scaler.get_scale()


def test_fp16_resumes_bit_for_bit_with_its_loss_scale(corpus, tmp_path, one_thread,
                                                      high_initial_scale):
    whole = Trainer.from_config(_tiny_run(corpus, tmp_path / "whole", precision="fp16",
                                          max_updates=8, log_every=1))
    whole.fit()
    first = Trainer.from_config(_tiny_run(corpus, tmp_path / "split", precision="fp16",
                                          max_updates=4, log_every=1))
    first.fit()
    resumed = Trainer.from_config(_tiny_run(corpus, tmp_path / "split", precision="fp16",
                                            max_updates=8, log_every=1))
    assert resumed.step == 4 and resumed.scaler.get_scale() == first.scaler.get_scale()
    resumed.fit()
    assert [r["loss"] for r in resumed.records if "loss" in r] == \
        [r["loss"] for r in whole.records if "loss" in r and r["step"] > 4]
    for key, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[key]), key


def test_the_trainer_runs_auto_in_what_the_cpu_does_fast_and_says_so(corpus, tmp_path,
                                                                     one_thread, monkeypatch):
    # on a CPU without bf16 instructions (faked: this machine's own answer would make the
    # test compare the trainer with itself)
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: False)
    trainer = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=2))
    native = "fp32"
    assert trainer.precision == native
    assert trainer.fit()["precision"] == native
    saved = torch.load(trainer.run.checkpoints()[-1], weights_only=True)
    assert saved["precision"] == native


def test_resuming_in_another_precision_warns(corpus, tmp_path, one_thread, monkeypatch):
    # a run started on a CPU with bf16 instructions, resumed on one without (auto: fp32)
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: True)
    Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=2)).fit()
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: False)
    with pytest.warns(RuntimeWarning, match=r"step_0000002.pt was trained in bf16; it "
                                            r"resumes in fp32 \(--precision auto"):
        trainer = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=4))
    assert trainer.step == 2 and trainer.precision == "fp32"
    trainer.close()                                    # it holds the run until it is run
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # the same precision: no warning
        again = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=4))
    assert again.step == 2
    again.close()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cpu_autocast_picks_the_math_attention_kernel(precision):
    # the fused CPU kernel is 2-3.7x slower at sentence lengths (book/results/attention_kernel.json)
    assert torch.backends.cuda.flash_sdp_enabled()
    with autocast(torch.device("cpu"), precision):
        assert torch.backends.cuda.math_sdp_enabled()
        assert not torch.backends.cuda.flash_sdp_enabled()
        assert torch.is_autocast_enabled("cpu") == (precision == "bf16")
    assert torch.backends.cuda.flash_sdp_enabled()       # and it puts the choice back


# ------------------------------------------------------------ a loss that runs away
def test_a_diverging_run_stops_in_one_line_and_keeps_its_last_good_checkpoint(tmp_path):
    # A peak rate 50x eq. (3)'s on a tiny model: the loss falls for two updates, then climbs
    # to hundreds with every number finite (a run at --lr-factor 1000 went 5.9 -> 26,183;
    # at 1000 this model diverges from update 1, before any checkpoint).
    from helpers import train_args, write_corpus
    out = tmp_path / "run"
    args = train_args(write_corpus(tmp_path / "corpus"), out, updates=60)
    result = run([sys.executable, "-m", "transformer", *args, "--lr-factor", "50",
                  "--threads", "1"], env={"PYTHONPATH": str(REPO)})
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and "loss diverged at update" in errors[0], result.stderr
    kept = step_checkpoints(out / "checkpoints")
    assert kept and f"the last good checkpoint is {kept[-1]}" in errors[0]
    stopped = int(errors[0].split("at update ")[1].split(":")[0])
    assert int(kept[-1].stem.split("_")[1]) < stopped - 10       # none written while it ran away
    assert not (out / "average.pt").exists()                     # no average of diverged weights
    assert all(r["step"] < stopped for r in records(out))
    assert "fp32/bf16" not in errors[0]                          # advice for fp16 runs only


def test_the_divergence_rule_leaves_a_sound_loss_curve_alone():
    # The shape of the recipes' curves: from above ln V down to about 2, with noise, a
    # bump at the end of warm-up, and a plateau; then the same curve running away.
    from transformer.training.loop import DivergenceWatch
    gen = torch.Generator().manual_seed(0)
    steps = torch.arange(1, 3001, dtype=torch.float64)
    sound = (2 + 8 * torch.exp(-steps / 400) + 0.3 * torch.randn(3000, generator=gen,
                                                                  dtype=torch.float64))
    sound[390:420] += 1.0                                        # a warm-up bump
    watch = DivergenceWatch(8000)
    assert not any(watch.update(float(x)) for x in sound) and watch.healthy
    fired = [k for k, x in enumerate([2.5] * 50 + [40.0] * 50) if watch.update(x)]
    assert fired and 50 + DivergenceWatch.PATIENCE <= fired[0] <= 50 + DivergenceWatch.PATIENCE + 3


def test_the_batches_the_trainer_feeds_the_model_start_with_bos_and_end_with_eos(tmp_path,
                                                                                 one_thread):
    # Look at what the model really gets during real updates (from_config's own batches):
    # sources end in EOS, decoder inputs start with BOS, targets are the inputs shifted
    # left and end in EOS; padding only after that.
    cfg = toy_run(write_corpus(tmp_path / "c"), tmp_path / "run", updates=2,
                  update_tokens=800)
    trainer = Trainer.from_config(cfg)
    tok, seen = trainer.tokenizer, []
    trainer.loss_module.register_forward_pre_hook(
        lambda module, args: seen.append([a.detach().clone() for a in args]))
    trainer.fit()
    assert len(seen) >= 4                # 2 updates x 2 micro-batches, then the validation's

    def rows(batch):
        for row in batch.tolist():
            n = len(row) - row[::-1].index(next(t for t in row[::-1] if t != tok.pad_id))
            assert all(t == tok.pad_id for t in row[n:])        # padding only at the end
            yield row[:n]

    for src, tgt_in, tgt_out in seen:
        for s in rows(src):
            assert s[-1] == tok.eos_id and tok.bos_id not in s and tok.eos_id not in s[:-1]
        for t_in, t_out in zip(rows(tgt_in), rows(tgt_out)):
            assert t_in[0] == tok.bos_id and t_out[-1] == tok.eos_id
            assert t_in[1:] == t_out[:-1]                        # shifted by one position
            assert tok.eos_id not in t_in and tok.bos_id not in t_out


def test_validation_reports_the_perplexity_of_the_unsmoothed_nll(corpus, tmp_path, one_thread):
    """valid_nll is the mean negative log-likelihood of the validation targets (as
    cross-entropy computes it from the model's logits), valid_ppl its exponential."""
    trainer = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=4,
                                            precision="fp32"))
    result = trainer.fit()
    trainer.model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for indices in trainer.valid_iter.batches(0):
            batch = trainer.valid_iter.collate(indices)
            logits = trainer.model(batch.src, batch.tgt_in).double()
            total += torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), batch.tgt_out.flatten(), reduction="sum",
                ignore_index=trainer.model_cfg.pad_id).item()
            tokens += batch.n_tgt_tokens
    assert result["valid_tokens"] == tokens > 0
    assert result["valid_nll"] == pytest.approx(total / tokens, rel=1e-4)
    assert result["valid_ppl"] == pytest.approx(math.exp(total / tokens), rel=1e-4)
    assert result["valid_loss"] > result["valid_nll"]          # smoothing costs the truth
    final = RunFolder(tmp_path / "run").records()[-1]
    assert final["final"] and final["valid_ppl"] == result["valid_ppl"]
    assert final["train_seconds"] == result["train_seconds"] > 0     # the run's length, kept
    assert final["precision"] == result["precision"]


# ------------------------------------------------------------ BLEU during training
def test_the_logged_valid_bleu_scores_the_valid_translations_against_their_references(
        corpus, tmp_path, one_thread, monkeypatch):
    """``valid_bleu`` is sacreBLEU of the first ``eval_bleu_sentences`` valid sources'
    translations against their references. A stand-in translator that returns each
    reference makes it 100 (scored against the sources it was 0.04 where it is 3.25), and
    one that returns the source makes it what sacreBLEU gives the sources themselves."""
    import sacrebleu
    import transformer.translation as translation
    n, asked = 7, []
    trainer = Trainer.from_config(_tiny_run(corpus, tmp_path / "run", max_updates=1,
                                            eval_bleu_sentences=n, precision="fp32"))
    valid = trainer.valid
    reference = dict(zip(valid.src, valid.tgt))

    def perfect(model, tokenizer, sources, **kw):
        asked.append(list(sources))
        return [reference[s] for s in sources]

    monkeypatch.setattr(translation, "translate", perfect)
    trainer.fit()
    assert asked, "the trainer no longer translates through transformer.translation.translate"
    assert asked[-1] == valid.src[:n]
    final = [r for r in trainer.run.records() if r.get("final")][-1]
    assert final["valid_bleu"] == pytest.approx(100.0)
    monkeypatch.setattr(translation, "translate", lambda model, tok, sources, **kw: list(sources))
    copied = sacrebleu.corpus_bleu(valid.src[:n], [valid.tgt[:n]]).score
    assert copied < 50 and trainer.evaluate()["valid_bleu"] == pytest.approx(copied)
