"""The command line: options generated from TrainConfig, run folders that survive mistakes,
and one-line errors (exit status 2, no traceback) that name the file or option at fault.

Runs ``transformer.tools.cli.main`` in this process on a synthetic corpus (no data needed)."""
import argparse
import dataclasses
import errno
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import processes
from helpers import one_line_error, run_cli, train_args, write_corpus
from transformer.tools import cli
from transformer.training.command import train_command, train_config
from transformer.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer.errors import ISSUES, InputError, MissingPackage
from transformer.inference import load_model
from transformer.training.run_folder import RunFolder
from transformer.training.config import (TrainConfig, TrainingError, flag, result_settings,
                                         run_settings)

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("toy") / "corpus")


@pytest.fixture(scope="module")
def toy_runs(toy_corpus, tmp_path_factory) -> dict:
    """Two finished 3-update runs: "a" (vocabulary 120, d_model 16) and "b" (100, 32)."""
    runs = {}
    for name, vocab, d in (("a", 120, 16), ("b", 100, 32)):
        out = tmp_path_factory.mktemp("runs") / name
        cli.main(train_args(toy_corpus, out, vocab=vocab, d_model=d))
        runs[name] = out
    return runs


# ------------------------------------------------------------------ the parser
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


def test_train_writes_a_summary_with_its_provenance(toy_runs):
    summary = json.loads((toy_runs["a"] / "summary.json").read_text())
    assert summary["step"] == 3 and summary["train"]["vocab_size"] == 120
    assert summary["recipe"] is None and summary["params"] > 0
    assert {"commit", "command", "cpu", "torch", "date"} <= set(summary["provenance"])
    assert summary["provenance"]["command"].startswith("python -m transformer train --corpus")
    assert summary["valid_loss"] == RunFolder(toy_runs["a"]).records()[-1]["valid_loss"]


def test_the_python_api_leaves_the_run_the_command_line_leaves(toy_corpus, toy_runs, tmp_path):
    # the README's Trainer.from_config(cfg).fit(): the same files, summary.json included,
    # whose command is the train command that reproduces the run
    from transformer.training.loop import Trainer
    args = cli.build_parser().parse_args(train_args(toy_corpus, tmp_path / "api"))
    cfg = train_config(args)
    result = Trainer.from_config(cfg).fit()
    api, command_line = tmp_path / "api", toy_runs["a"]
    assert sorted(p.name for p in api.iterdir()) == sorted(p.name for p in command_line.iterdir())
    summary = json.loads((api / "summary.json").read_text())
    theirs = json.loads((command_line / "summary.json").read_text())
    assert set(summary) == set(theirs) and summary["step"] == result["step"] == 3
    assert summary["train"] == {**theirs["train"], "out_dir": str(api)}
    assert summary["valid_loss"] == result["valid_loss"]
    assert shlex.split(summary["provenance"]["command"]) == train_command(cfg)


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


# --------------------------------------------------------- run folders and mistakes
def test_a_failed_first_start_leaves_no_run_so_the_corrected_command_works(
        capsys, toy_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(toy_corpus, corpus)
    out = tmp_path / "r"
    for side in ("src", "tgt"):                     # empty validation files
        (corpus / f"valid.{side}").write_text("")
    code, _, err = run_cli(capsys, train_args(corpus, out))
    assert code == 2
    assert "the valid split is empty" in one_line_error(err) and str(corpus) in err
    assert not (out / "run.json").exists() and not (out / "spm.model").exists()

    shutil.copy(toy_corpus / "valid.src", corpus / "valid.src")
    shutil.copy(toy_corpus / "valid.tgt", corpus / "valid.tgt")
    argv = train_args(corpus, out)
    argv[argv.index("--vocab-size") + 1] = "100000"     # too large for this text
    code, _, err = run_cli(capsys, argv)
    assert code == 2 and "--vocab-size 100000 is too large" in one_line_error(err)
    assert not (out / "run.json").exists() and not (out / "spm.model").exists()

    argv[argv.index("--vocab-size") + 1] = "10"         # too small for its characters
    code, _, err = run_cli(capsys, argv)
    chars = len(set("".join((corpus / f"train.{s}").read_text() for s in ("src", "tgt")))
                - {" ", "\n"})
    assert code == 2 and one_line_error(err) == (
        f"error: --vocab-size 10 is too small for the training split of {corpus}: its "
        f"characters and the 4 special pieces need at least {chars + 5} pieces")
    assert not (out / "run.json").exists() and not (out / "spm.model").exists()

    code, stdout, err = run_cli(capsys, train_args(corpus, out))   # the corrected command
    assert code == 0, err
    assert (out / "run.json").exists() and (out / "average.pt").exists()


@pytest.mark.filterwarnings("ignore:.*dropped 2 of 2 pairs")
def test_empty_training_files_are_named(capsys, toy_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(toy_corpus, corpus)
    for side in ("src", "tgt"):
        (corpus / f"train.{side}").write_text("\n\n")
    code, _, err = run_cli(capsys, train_args(corpus, tmp_path / "r"))
    assert code == 2 and "INTERNAL" not in err
    assert f"the train split is empty: {corpus}/train.src and train.tgt" in one_line_error(err)


def test_resume_accepts_the_same_run_spelled_differently_and_moved(
        capsys, toy_corpus, tmp_path, monkeypatch):
    shutil.copytree(toy_corpus, tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, train_args("./data", "r", updates=2))[0] == 0
    code, out, err = run_cli(capsys, train_args(f"{tmp_path}/data/", "./r/", updates=3))
    assert code == 0, err
    assert "resumed from r/checkpoints/step_0000002.pt" in out
    shutil.move("r", "moved")
    code, out, err = run_cli(capsys, train_args("data/", tmp_path / "moved", updates=4))
    assert code == 0, err
    assert "resumed from" in out and "step_0000003.pt" in out
    records = [json.loads(line) for line in Path("moved/metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "loss" in r]
    assert steps == [1, 2, 3, 4]                              # a list: no duplicates
    stored = json.loads(Path("moved/run.json").read_text())["train"]
    assert "out_dir" not in stored and stored["corpus"] == str((tmp_path / "data").resolve())


def test_resume_with_a_foreign_checkpoint_names_it(capsys, toy_corpus, toy_runs, tmp_path):
    out = tmp_path / "a"
    shutil.copytree(toy_runs["a"], out)
    foreign = out / "checkpoints" / "step_0000099.pt"
    shutil.copy(toy_runs["b"] / "checkpoints" / "step_0000003.pt", foreign)
    code, _, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
    assert code == 2
    assert f"{foreign} is not a checkpoint of the run" in one_line_error(err)


# ------------------------------------------------------------------ decoding side
def test_translate_names_the_line_that_is_not_utf8(capsys, toy_runs, tmp_path, monkeypatch):
    model = toy_runs["a"] / "average.pt"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the dog.\n\xff\xfe x\n")))
    code, _, err = run_cli(capsys, ["translate", model])
    assert code == 2 and "<stdin>: line 2 is not valid UTF-8" in one_line_error(err)
    bad = tmp_path / "in.txt"
    bad.write_bytes(b"the dog.\nthe cat.\n\xc3\x28\n")
    code, _, err = run_cli(capsys, ["translate", model, "--input", bad])
    assert code == 2 and f"{bad}: line 3 is not valid UTF-8" in one_line_error(err)
    code, _, err = run_cli(capsys, ["translate", model, "--input", tmp_path / "missing.txt"])
    assert code == 2 and "input file not found" in one_line_error(err)


def test_translate_reads_and_writes_utf8(capsys, toy_runs, tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\nthe green house.\n", encoding="utf-8")
    code, _, err = run_cli(capsys, ["translate", toy_runs["a"] / "average.pt", "--beam", 1,
                                    "--max-extra", 5, "--input", source, "--output", target])
    assert code == 0, err
    assert len(target.read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_translate_on_cuda_without_cuda_says_so(capsys, toy_runs):
    code, _, err = run_cli(capsys, ["translate", toy_runs["a"] / "average.pt",
                                    "--device", "cuda"])
    line = one_line_error(err)
    assert code == 2 and "CUDA is not available" in line and "corrupt" not in line


def test_translate_a_folder_points_at_the_checkpoint_inside(capsys, toy_runs):
    code, _, err = run_cli(capsys, ["translate", toy_runs["a"]])
    line = one_line_error(err)
    assert code == 2 and "is a folder" in line and str(toy_runs["a"] / "average.pt") in line


def test_a_checkpoint_beside_another_runs_tokenizer_is_refused(capsys, toy_runs, tmp_path):
    state = load_checkpoint(toy_runs["a"] / "average.pt")
    del state["tokenizer"]                                   # an old or stripped checkpoint
    path = save_checkpoint(state, tmp_path / "model.pt")
    shutil.copy(toy_runs["b"] / "spm.model", tmp_path / "spm.model")     # 100 pieces, not 120
    with pytest.raises(CheckpointError, match="tokenizer and model do not match"):
        load_model(path)
    code, _, err = run_cli(capsys, ["translate", path])
    assert code == 2 and "tokenizer and model do not match" in one_line_error(err)


def test_evaluate_refuses_a_negative_limit(capsys, toy_runs):
    code, _, err = run_cli(capsys, ["evaluate", toy_runs["a"] / "average.pt", "--limit", -45])
    assert code == 2 and "argument --limit: must be >= 0, got -45" in one_line_error(err)


def test_evaluate_writes_its_scores_with_provenance_as_json(capsys, toy_runs, toy_corpus,
                                                             tmp_path):
    out = tmp_path / "score.json"
    code, stdout, _ = run_cli(capsys, ["evaluate", toy_runs["a"] / "average.pt", "--corpus",
                                       toy_corpus, "--split", "test", "--beam", 2, "--limit", 4,
                                       "--device", "cpu", "--json", out])
    assert code == 0
    record = json.loads(out.read_text())
    assert record["sentences"] == 4 and record["beam"] == 2 and record["split"] == "test"
    assert f"BLEU = {record['bleu']:.1f}" in stdout and 0 <= record["chrf"] <= 100
    assert "--json" in record["provenance"]["command"] and record["provenance"]["commit"]


def test_average_of_checkpoints_with_different_vocabularies_is_refused(capsys, toy_runs,
                                                                        tmp_path):
    a = toy_runs["a"] / "checkpoints" / "step_0000003.pt"
    b = toy_runs["b"] / "checkpoints" / "step_0000003.pt"
    code, _, err = run_cli(capsys, ["average", a, b, "--out", tmp_path / "avg.pt"])
    line = one_line_error(err)
    assert code == 2 and str(a) in line and str(b) in line and "not checkpoints of the same" in line
    assert not (tmp_path / "avg.pt").exists()


@pytest.mark.parametrize("given", ["folder", "files"])
def test_average_last_n_averages_the_newest_n(capsys, tmp_path, given):
    # checkpoints whose one weight is their step: the mean of the last two of steps
    # 100..400 is 350 (the first two would give 150)
    from transformer.checkpoint import step_file
    folder = tmp_path / "checkpoints"
    for step in (100, 200, 300, 400):
        save_checkpoint({"model": {"w": torch.full((2, 3), float(step))}, "step": step,
                         "model_config": {"vocab_size": 8}}, folder / step_file(step))
    paths = sorted(folder.iterdir())
    code, out, err = run_cli(capsys, ["average", *([folder] if given == "folder" else paths),
                                      "--last", 2, "--out", tmp_path / "avg.pt"])
    assert code == 0, err
    averaged = load_checkpoint(tmp_path / "avg.pt")
    assert torch.equal(averaged["model"]["w"], torch.full((2, 3), 350.0))
    assert averaged["averaged_from"] == [str(p) for p in paths[2:]] and averaged["step"] == 400
    assert out == f"averaged 2 checkpoints into {tmp_path / 'avg.pt'}\n"


# ------------------------------------------------------------ package boundaries
def test_loading_a_model_does_not_import_the_trainer():
    code = ("import sys; from transformer import load_model, translate, Tokenizer; "
            "assert 'transformer.training.loop' not in sys.modules; "
            "assert 'transformer.training.distributed' not in sys.modules; "
            "import transformer; transformer.Trainer, transformer.TrainConfig; "
            "assert 'transformer.training.loop' in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_library_never_imports_the_book_helpers():
    for path in (REPO / "transformer").rglob("*.py"):
        assert "transformer_book" not in path.read_text(encoding="utf-8"), path


def test_book_quick_is_read_when_asked(monkeypatch):
    from transformer_book import viz
    monkeypatch.setenv("BOOK_QUICK", "1")
    assert viz.quick() and viz.pick(300, 60) == 60
    monkeypatch.setenv("BOOK_QUICK", "0")
    assert not viz.quick() and viz.pick(300, 60) == 300


def test_under_ci_missing_corpora_fail_instead_of_skipping(tmp_path):
    env = {**os.environ, "CI": "true", "TRANSFORMER_TEST_CORPORA": str(tmp_path / "nowhere"),
           "TRANSFORMER_MULTI30K_URL": "http://127.0.0.1:9/unreachable"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_trainer.py::test_uninterrupted_log_has_each_update_once",
         "tests/test_data.py::test_multi30k_sizes[valid-1014]"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 1 and "skipped" not in summary, result.stdout[-2000:]
    assert "1 failed" in summary and "1 error" in summary, summary
    assert "offline corpora not found" in result.stdout


def test_a_warning_on_the_command_line_is_one_line(tmp_path):
    # `python -m transformer` prints warnings as it prints errors: "warning: ..." on one
    # line. Here the one for bf16 on a CPU without bf16 instructions, forced on any CPU.
    args = train_args(write_corpus(tmp_path / "corpus"), tmp_path / "run", updates=2)
    args[args.index("--precision") + 1] = "bf16"
    code = ("import runpy, sys; import transformer.training.precision as t; "
            "t.cpu_has_native_bf16 = lambda: False; "
            f"sys.argv = ['transformer', *{args!r}, '--threads', '1']; "
            "runpy.run_module('transformer', run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "TRANSFORMER_MALLOC": "system"}, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [
        "warning: --precision bf16 on a CPU without AVX512-BF16 or AMX: bf16 matrix products "
        "run on a slow generic path here, many times slower than fp32; "
        "--precision auto picks fp32 on this CPU"]


# ------------------------------------------------------------ one run, one writer
def test_a_second_train_on_a_run_in_use_is_refused_until_its_writer_ends(
        capsys, toy_corpus, toy_runs, tmp_path):
    out = tmp_path / "a"
    shutil.copytree(toy_runs["a"], out)
    holder = subprocess.Popen(                  # another process holding the run, as a train
        [sys.executable, "-c", "import sys, time; from transformer.training.run_folder import RunFolder; "
         f"lock = RunFolder({str(out)!r}).lock(); print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = (out / "metrics.jsonl").read_text()
        code, _, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
        line = one_line_error(err)
        assert code == 2 and f"{out} is in use" in line and f"pid {holder.pid}" in line
        assert (out / "metrics.jsonl").read_text() == before           # nothing touched
        code, _, err = run_cli(capsys, ["average", out / "checkpoints",
                                        "--out", out / "avg.pt"])      # readers still work
        assert code == 0 and (out / "avg.pt").exists(), err
    finally:
        holder.kill()                           # a crash: the system drops its lock
        holder.wait()
    code, out_text, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
    assert code == 0 and "resumed from" in out_text, err
    code, _, err = run_cli(capsys, train_args(toy_corpus, out, updates=6))   # released on exit
    assert code == 0, err


def test_an_existing_file_as_out_is_refused_in_one_line(capsys, toy_corpus, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    code, _, err = run_cli(capsys, train_args(toy_corpus, tmp_path / "notes.txt"))
    assert code == 2 and "is a file, not a run folder" in one_line_error(err)
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


# ------------------------------------------- output streams, errors before work
def test_a_blank_input_line_gives_a_blank_output_line(capsys, toy_runs, tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\n\n   \nthe green house.\n", encoding="utf-8")
    code, _, err = run_cli(capsys, ["translate", toy_runs["a"] / "average.pt", "--beam", 1,
                                    "--max-extra", 5, "--input", source, "--output", target])
    assert code == 0, err
    lines = target.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 5 and lines[4] == ""                   # four lines, aligned
    assert lines[1] == lines[2] == "" and lines[0] and lines[3]


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_an_unwritable_output_fails_before_any_decoding(capsys, toy_corpus, toy_runs, tmp_path,
                                                        monkeypatch, command):
    import transformer.translation as translation

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded before opening the output")

    monkeypatch.setattr(translation, "_translate", no_decoding)
    (tmp_path / "file").write_text("")
    where = tmp_path / "file" / "out.txt"                       # under a file: never writable
    (tmp_path / "in.txt").write_text("the dog runs.\n")
    argv = (["translate", toy_runs["a"] / "average.pt", "--input", tmp_path / "in.txt",
             "--output", where] if command == "translate" else
            ["evaluate", toy_runs["a"] / "average.pt", "--corpus", toy_corpus,
             "--hypotheses", where])
    code, _, err = run_cli(capsys, argv)
    assert code == 2 and f"{where}: Not a directory" in one_line_error(err)


# ------------------------------------------- one line for every ordinary failure
@pytest.mark.parametrize("case", ["train", "average", "translate", "export"])
def test_a_folder_that_cannot_be_written_is_one_line(capsys, toy_corpus, toy_runs, tmp_path,
                                                     case):
    # A path under a regular file fails as a read-only folder does, for root too.
    (tmp_path / "file").write_text("")
    where = tmp_path / "file" / "x"
    model = toy_runs["a"] / "average.pt"
    argv = {"train": train_args(toy_corpus, where),
            "average": ["average", toy_runs["a"] / "checkpoints", "--out", where],
            "translate": ["translate", model, "--output", where],
            "export": ["export", model, "--out", where]}[case]
    if case == "export":
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    code, _, err = run_cli(capsys, argv)
    line = one_line_error(err)                  # "Not a directory", or "File exists" when
    assert code == 2 and str(tmp_path / "file") in line    # a folder is made on the way


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(capsys, toy_corpus, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code, _, err = run_cli(capsys, train_args(toy_corpus, folder / "run"))
    finally:
        folder.chmod(0o700)
    assert code == 2 and "Permission denied" in one_line_error(err)


def test_a_full_disk_during_a_checkpoint_is_one_line_and_loses_nothing(
        capsys, toy_corpus, tmp_path, monkeypatch):
    # the disk fills while the second checkpoint is written: its writes fail with ENOSPC
    # (torch.save wraps the error as "unexpected pos 64 vs 0"; the write's own error is said)
    out, write = tmp_path / "run", os.write

    def full_at_the_second_save(fd, data):
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            where = ""
        if ".step_0000004.pt." in where:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)

    monkeypatch.setattr(os, "write", full_at_the_second_save)
    code, _, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
    line = one_line_error(err)
    assert code == 2 and "no space left on device writing" in line
    assert f"nothing lost, the last checkpoint is {out / 'checkpoints' / 'step_0000002.pt'}" in line
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["step_0000002.pt"]  # no .tmp


def test_a_missing_optional_package_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)          # `import datasets` fails
    argv = train_args("wmt14", tmp_path / "run")
    code, _, err = run_cli(capsys, argv)
    assert code == 2 and "--corpus wmt14 needs" in one_line_error(err)
    assert "`pip install datasets`" in err


def test_ctrl_c_during_train_says_where_to_resume(capsys, toy_corpus, tmp_path, monkeypatch):
    from transformer.training.loop import Trainer
    out, update = tmp_path / "run", Trainer.train_update

    def interrupted_at_3(self, *args):
        if self.step == 3:
            raise KeyboardInterrupt
        return update(self, *args)

    monkeypatch.setattr(Trainer, "train_update", interrupted_at_3)
    code, _, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
    assert code == 130 and "Traceback" not in err
    assert err.strip() == (f"interrupted at update 3; the last checkpoint is "
                           f"{out / 'checkpoints' / 'step_0000002.pt'}; run the same command "
                           f"to resume")
    monkeypatch.setattr(Trainer, "train_update", update)
    code, stdout, err = run_cli(capsys, train_args(toy_corpus, out, updates=5))
    assert code == 0 and "resumed from" in stdout, err


def test_ctrl_c_during_translate_keeps_the_finished_lines(toy_runs, tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the big dog runs on the green house under the tree.\n" * 20000)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRANSFORMER_MALLOC": "system"}
    # stderr into a file: the toy model's "unsure" notes (a line each) never fill a pipe
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "transformer", "translate",
                                 toy_runs["a"] / "average.pt", "--input", source, "--output",
                                 target, "--threads", "1"], env=env, stderr=stderr,
                                # Ctrl-C as in a terminal, also when the tests run as a
                                # background job (which starts with SIGINT ignored)
                                preexec_fn=processes.ctrl_c_as_in_a_terminal)
    try:
        # the lines go into a temporary file beside out.txt until the end (or Ctrl-C)
        deadline = time.monotonic() + 120                      # hang guards only
        while not any(p.stat().st_size for p in tmp_path.glob(".out.txt.*.tmp")) and \
                proc.poll() is None:
            assert time.monotonic() < deadline, "no line was written within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    err = errors.read_text()
    lines = target.read_text().splitlines()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert 0 < len(lines) < 20000 and len(set(lines)) == 1 and lines[0]
    assert f"interrupted: the first {len(lines)} of 20000 translations are in {target}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt", "stderr.txt"]


def test_a_damaged_spm_model_is_rebuilt_from_the_newest_checkpoint(capsys, toy_corpus,
                                                                   toy_runs, tmp_path):
    out = tmp_path / "a"
    shutil.copytree(toy_runs["a"], out)
    good = (out / "spm.model").read_bytes()
    (out / "spm.model").write_bytes(good[:100])
    with pytest.warns(UserWarning, match="spm.model was damaged; rebuilt it from the "
                                         "tokenizer inside .*step_0000003.pt"):
        code, stdout, err = run_cli(capsys, train_args(toy_corpus, out, updates=4))
    assert code == 0 and "resumed from" in stdout, err
    assert (out / "spm.model").read_bytes() == good


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


def test_translate_says_when_the_model_is_unsure(capsys, toy_runs, tmp_path):
    """Input mostly of unknown characters: the line is translated (alignment kept) and
    stderr says, naming the line, that the model is unsure."""
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\n🙂🙂 日本語 🍕\n", encoding="utf-8")
    code, _, err = run_cli(capsys, ["translate", toy_runs["a"] / "average.pt", "--beam", 1,
                                    "--max-extra", 5, "--input", source, "--output", target])
    assert code == 0, err
    assert len(target.read_text(encoding="utf-8").splitlines()) == 2
    assert "line 2: the model is unsure: most of the input is unknown" in err


# ------------------------------------------------ one rule, one wording, everywhere
@pytest.mark.parametrize("setting, text", [("alpha", "inf"), ("alpha", "nan"), ("alpha", "-1"),
                                           ("beam_size", "0"), ("max_extra", "-1")])
def test_search_settings_are_refused_as_the_python_api_refuses_them(capsys, toy_runs, setting,
                                                                    text):
    from transformer.decoding import check_search
    from transformer.translation import translate
    kind = float if setting == "alpha" else int
    with pytest.raises(ValueError) as api:
        check_search(**{setting: kind(text)})
    model, tokenizer = load_model(toy_runs["a"] / "average.pt")
    with pytest.raises(ValueError, match=re.escape(str(api.value))):
        translate(model, tokenizer, ["the dog"], **{setting: kind(text)})
    option = {"alpha": "--alpha", "beam_size": "--beam", "max_extra": "--max-extra"}[setting]
    for command in ("translate", "evaluate"):
        code, _, err = run_cli(capsys, [command, toy_runs["a"] / "average.pt", option, text])
        assert code == 2 and f"argument {option}: {api.value}" in err, err


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


# ------------------------------------------------------- what is the user's, what is a bug
@pytest.mark.parametrize("error", [
    InputError("x.src.gz: line 3 is not valid UTF-8 (invalid start byte at byte 0)"),
    MissingPackage("--corpus wmt14 needs the Hugging Face datasets package"),
    TrainingError("runs/a/run.json is not a run file of this package"),
    CheckpointError("runs/a/average.pt is damaged"),
    FileNotFoundError(errno.ENOENT, "No such file or directory", "runs/a/nope.pt")])
def test_what_the_user_can_fix_is_one_line(error, capsys, monkeypatch):
    """A project error (or the operating system's) out of any command: its message on one
    line, exit status 2, no traceback."""
    def fails(*args, **kwargs):
        raise error
    monkeypatch.setattr(cli, "fetch", fails)
    code, _, err = run_cli(capsys, ["fetch", "tatoeba-en-de"])
    assert code == 2 and err.count("\n") == 1, err
    assert one_line_error(err).startswith("error: ") and ("nope.pt" in err or str(error) in err)


@pytest.mark.parametrize("bug", [ValueError("an index the package got wrong"),
                                 KeyError("src"), ImportError("cannot import name 'x'"),
                                 RuntimeError("shapes do not match")])
def test_a_bug_in_the_package_shows_its_traceback_and_asks_for_a_report(bug, capsys,
                                                                          monkeypatch):
    """Any other exception is the package's bug, not the user's mistake: its traceback
    (where it happened), then one line asking for a report at the project's issues, exit
    status 1; a plain ValueError or ImportError is not taken for bad input."""
    def fails(*args, **kwargs):
        raise bug
    monkeypatch.setattr(cli, "fetch", fails)
    code, _, err = run_cli(capsys, ["fetch", "tatoeba-en-de"])
    assert code == 1
    assert err.startswith("Traceback") and f"{type(bug).__name__}: " in err and "in fails" in err
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("this is a bug in the transformer package") and ISSUES in last


def test_a_real_bad_input_deep_in_the_package_is_still_one_line(capsys, toy_runs, toy_corpus):
    """A user's mistake found deep inside (a split name checked by the corpus reader) is
    the project's error type, so it stays one line."""
    code, _, err = run_cli(capsys, ["evaluate", toy_runs["a"] / "average.pt", "--corpus",
                                    toy_corpus, "--split", "tset"])
    assert code == 2 and "split must be one of" in one_line_error(err)


def test_bug_reports_go_to_the_books_repository():
    url = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", (REPO / "_config.yml").read_text(),
                    flags=re.M).group(1)
    assert ISSUES == url.rstrip("/") + "/issues"


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
