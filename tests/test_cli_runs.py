"""``train`` on the command line: the run folder it leaves (a summary with provenance, the
same as the Python API leaves), mistakes that leave no run so the corrected command works,
resume (the same run spelled differently, a foreign checkpoint, a damaged spm.model), one
writer per run, and Ctrl-C; what ``train`` and ``demo`` print: sentences, a progress bar
when asked (by default when stderr is a terminal), JSON only behind ``--json``.

Runs ``transformer.tools.cli.main`` in this process on the toy corpus and runs of
tests/conftest.py (no data needed; ``demo`` reads Multi30k, from the test's local host)."""
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import corpus_host
from helpers import one_line_error, run_cli, train_args, write_corpus
from transformer.tools import cli
from transformer.training.command import train_command, train_config
from transformer.training.run_folder import RunFolder

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_train_says_its_result_in_words_and_json_only_behind_a_flag(capsys, toy_corpus, tmp_path):
    code, out, err = run_cli(capsys, train_args(toy_corpus, tmp_path / "words"))
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith("done: 3 updates in ") and "s of training (fp32); validation loss " \
        in last and f"The run is in {tmp_path / 'words'}" in last, out
    assert "{" not in out, out                                  # no JSON for a person
    code, out, err = run_cli(capsys, [*train_args(toy_corpus, tmp_path / "json"), "--json"])
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])           # as before, for scripts
    assert result["step"] == 3 and {"train_seconds", "precision", "valid_loss"} <= set(result)


@corpus_host.needs_corpora()                        # demo trains the quick recipe on Multi30k
def test_demo_speaks_in_sentences_with_a_progress_bar(capsys):
    code, out, err = run_cli(capsys, ["demo", "--steps", "10", "--threads", "1", "--progress"])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("Training a tiny Transformer on Multi30k (English to German) "
                               "for 10 updates, on 1 CPU thread"), lines
    assert lines[1].startswith("One batch: ") and " logits, a score for each of the 1,000 " \
        "pieces of the vocabulary" in lines[1], lines
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split(":")[0] for s in steps] == ["step 5/10", "step 10/10"], lines
    assert all(", learning rate 0.0" in s and s.endswith(" tokens/s") for s in steps), steps
    losses = [float(s.split("loss ")[1].split(",")[0]) for s in steps]
    assert losses[1] < losses[0]                                # the falling loss
    assert lines[-1].startswith("done: 10 updates in ") and "validation loss " in lines[-1]
    assert "{" not in out and '"step"' not in out, out          # no JSON
    assert "10/10" in err and "upd" in err, err[-500:]          # the bar, on stderr


@corpus_host.needs_corpora()
def test_demo_prints_json_lines_behind_a_flag_for_scripts(capsys):
    code, out, err = run_cli(capsys, ["demo", "--steps", "5", "--threads", "1", "--json"])
    assert code == 0, err
    first, *rest = out.strip().splitlines()
    assert first.startswith("batch: src (") and "logits (" in first, first
    records = [json.loads(line) for line in rest]               # every other line is JSON
    assert records[0]["step"] == 5 and {"loss", "lr", "tokens_per_s"} <= set(records[0])
    assert records[-2]["final"] and records[-1]["step"] == 5 and "valid_loss" in records[-1]
    assert "upd" not in err                                     # no bar off a terminal
