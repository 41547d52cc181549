"""``translate``, ``evaluate`` and ``average`` on the command line: UTF-8 in and out (the
line that is not named), a blank line for a blank line, the output opened before any
decoding, Ctrl-C keeping the finished lines, the search settings refused as the Python API
refuses them, scores written with provenance, checkpoints of other runs refused.

Runs ``transformer.tools.cli.main`` in this process on the toy runs of tests/conftest.py."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import processes
from helpers import HANG_S, one_line_error, run_cli, wait_until
from transformer.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer.inference import load_model

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


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


def translate_file(capsys, model, folder, text: str) -> str:
    """``translate`` (greedy, 5 extra tokens) of ``text`` from a file into a file: the output."""
    source, target = folder / "in.txt", folder / "out.txt"
    source.write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, ["translate", model, "--beam", 1, "--max-extra", 5,
                                    "--input", source, "--output", target])
    assert code == 0, err
    return target.read_text(encoding="utf-8")


def test_translate_reads_and_writes_utf8(capsys, toy_runs, tmp_path):
    out = translate_file(capsys, toy_runs["a"] / "average.pt", tmp_path,
                         "the dog runs.\nthe green house.\n")
    assert len(out.splitlines()) == 2


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


def test_a_blank_input_line_gives_a_blank_output_line(capsys, toy_runs, tmp_path):
    lines = translate_file(capsys, toy_runs["a"] / "average.pt", tmp_path,
                           "the dog runs.\n\n   \nthe green house.\n").split("\n")
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
        wait_until(lambda: any(p.stat().st_size for p in tmp_path.glob(".out.txt.*.tmp"))
                   or proc.poll() is not None, "a translated line written", every=0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG_S)                               # a hang guard only
    finally:
        proc.kill()
        proc.wait()
    err = errors.read_text()
    lines = target.read_text().splitlines()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert 0 < len(lines) < 20000 and len(set(lines)) == 1 and lines[0]
    assert f"interrupted: the first {len(lines)} of 20000 translations are in {target}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt", "stderr.txt"]


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


def test_translate_runs_from_a_worker_thread(capsys, toy_runs, tmp_path):
    """Ctrl-C's holder is installed only in the main thread (signal handlers can be set
    nowhere else): translate called from a worker thread (a notebook's background job, a
    server) translates, and does not crash with "signal only works in main thread"."""
    import threading
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\nthe cat sits.\n")
    result = {}

    def work():
        try:
            result["code"] = run_cli(capsys, ["translate", toy_runs["a"] / "average.pt",
                                              "--beam", 1, "--max-extra", 3, "--input",
                                              source, "--output", target])
        except BaseException as exc:              # what would otherwise vanish in the thread
            result["error"] = exc

    before = signal.getsignal(signal.SIGINT)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive() and "error" not in result, result
    code, _, err = result["code"]
    assert code == 0 and "signal only works in main thread" not in err, err
    assert len(target.read_text().splitlines()) == 2
    assert signal.getsignal(signal.SIGINT) is before
