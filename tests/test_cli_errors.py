"""What the user can fix is one line (exit status 2, no traceback, the file, folder or
option at fault named): folders that cannot be written, a full disk, a missing optional
package, a bad input found deep in the package. Anything else is the package's bug: its
traceback and a request for a report at the book's repository (exit status 1).

Runs ``transformer.tools.cli.main`` in this process on the toy corpus and runs of
tests/conftest.py."""
import errno
import os
import re
import sys
from pathlib import Path

import pytest

from helpers import one_line_error, run_cli, train_args
from transformer.tools import cli
from transformer.checkpoint import CheckpointError
from transformer.errors import ISSUES, InputError, MissingPackage
from transformer.training.config import TrainingError

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_ctrl_c_just_after_an_export_finished_says_the_export_is_whole(capsys, tmp_path,
                                                                        monkeypatch, ctrl_c):
    """A Ctrl-C that lands once the export is in place, before the command has reported it
    (here: while the report is formatted), is held back until the report is printed, then
    ends the command as Ctrl-C ends the others: one line saying what --out holds, status
    130; no traceback, and the export stays whole."""
    import signal

    out = tmp_path / "web"

    class Files(dict):
        def items(self):                   # the report reads the files: Ctrl-C lands here
            os.kill(os.getpid(), signal.SIGINT)
            return super().items()

    def export_checkpoint(checkpoint, folder, **kwargs):
        Path(folder).mkdir()
        (Path(folder) / "manifest.json").write_text("{}")
        return {"files": Files({"manifest.json": {"bytes": 2}})}

    monkeypatch.setattr(cli, "export_checkpoint", export_checkpoint)
    code, stdout, err = run_cli(capsys, ["export", tmp_path / "model.pt", "--out", out])
    assert code == 130 and "Traceback" not in err, err
    assert f"exported {tmp_path / 'model.pt'} into {out}" in stdout
    assert err.strip().splitlines() == [
        f"interrupted after the export was finished: {out} is whole (its manifest.json "
        f"lists and checks every file)"]
    assert (out / "manifest.json").read_text() == "{}"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # given back


def test_ctrl_c_during_an_export_leaves_the_folder_as_it_was(capsys, tmp_path, monkeypatch,
                                                            ctrl_c):
    import signal

    def export_checkpoint(checkpoint, folder, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("Ctrl-C stops the export at once")

    monkeypatch.setattr(cli, "export_checkpoint", export_checkpoint)
    out = tmp_path / "web"
    code, _, err = run_cli(capsys, ["export", tmp_path / "model.pt", "--out", out])
    assert code == 130 and err.strip().splitlines() == [
        f"interrupted: the export was not finished; {out} is as it was"]


def test_a_finished_command_is_not_killed_by_a_ctrl_c_while_python_shuts_down(tmp_path,
                                                                              toy_runs):
    """Once a command has finished, a Ctrl-C changes nothing: SIGINT is ignored, so one
    landing while the interpreter and torch's libraries unload (where Python has given
    SIGINT its default action back) cannot kill the process with status -2 and no
    message."""
    import subprocess
    script = ("import os, signal, sys\n"
              "from transformer.tools import cli\n"
              "cli.run(['average', sys.argv[1], '--out', sys.argv[2]])\n"
              "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
              "os.kill(os.getpid(), signal.SIGINT)   # as if it landed during shutdown\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRANSFORMER_MALLOC": "system"}
    done = subprocess.run([sys.executable, "-c", script, str(toy_runs["a"] / "average.pt"),
                           str(tmp_path / "avg.pt")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "averaged 1 checkpoint into" in done.stdout
