"""What the command line writes: whole or not at all, never over a device or a pipe, every
write checked, leftovers of a killed run removed; and what it loads: a checkpoint tied to
its vocabulary, its configuration and a prepared folder's ids checked (transformer/output.py);
and a Ctrl-C reports the count of lines in the output file, wherever it lands.

Runs ``transformer.tools.cli.main`` in this process where it can; a second process only
where the case needs one (two writers at once, a SIGKILL)."""
import errno
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import processes
from helpers import one_line_error, run_cli, train_args, wait_until, write_corpus
from transformer.checkpoint import load_checkpoint, save_checkpoint
from transformer.tools import cli

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "TRANSFORMER_MALLOC": "system"}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    """A toy corpus and one finished 3-update run on it (vocabulary 120, d_model 16)."""
    root = tmp_path_factory.mktemp("outputs")
    corpus = write_corpus(root / "corpus")
    cli.main(train_args(corpus, root / "run"))
    return {"corpus": corpus, "run": root / "run", "model": root / "run" / "average.pt"}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def translate_args(toy, source, target, *more):
    return ["translate", toy["model"], "--beam", 1, "--max-extra", 5, "--device", "cpu",
            "--input", source, "--output", target, *more]


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk(folder)``: from now on a write into a file under ``folder`` fails with
    ENOSPC, as on a full disk (a stand-in for /dev/full: no real device is touched)."""
    write = os.write

    def fill(folder: Path):
        def full(fd, data):
            try:
                where = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                where = ""
            if where.startswith(str(folder)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return write(fd, data)
        monkeypatch.setattr(os, "write", full)
    return fill


# ------------------------------------------------------ not replaced: pipes, streams
def test_a_pipe_as_json_is_written_into_not_replaced(capsys, toy, tmp_path):
    fifo = tmp_path / "scores"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)     # a reader waits, as a pipe's would
    try:
        code, _, err = run_cli(capsys, ["evaluate", toy["model"], "--corpus", toy["corpus"],
                                        "--limit", 3, "--beam", 1, "--json", fifo])
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    record = json.loads(received)
    assert record["sentences"] == 3 and "bleu" in record
    assert leftovers(tmp_path) == []


def test_a_link_to_standard_output_writes_there_after_the_score(capfd, toy, tmp_path):
    # what `--json /dev/stdout` does, with a link made by the test (never the real one)
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    try:
        cli.main(["evaluate", str(toy["model"]), "--corpus", str(toy["corpus"]), "--limit",
                  "3", "--beam", "1", "--json", str(link)])
    except SystemExit as exc:
        pytest.fail(f"exit {exc.code}: {capfd.readouterr().err}")
    out = capfd.readouterr().out
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    score, _, record = out.partition("\n{")
    assert "BLEU = " in score and json.loads("{" + record)["sentences"] == 3


def test_an_output_through_a_link_keeps_the_link_and_writes_its_target(capsys, toy, tmp_path):
    # what the writer's docstring promises: the link stays, the file it names is replaced
    source, target, link = tmp_path / "in.txt", tmp_path / "kept" / "out.txt", tmp_path / "link.txt"
    source.write_text("the dog runs.\nthe green house.\n")
    target.parent.mkdir()
    target.write_text("old text\n")
    link.symlink_to(Path("kept") / "out.txt")                # relative, as `ln -s` makes it
    code, _, err = run_cli(capsys, translate_args(toy, source, link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(Path("kept") / "out.txt")
    written = target.read_text()
    assert written != "old text\n" and written.count("\n") == 2
    assert leftovers(tmp_path) == leftovers(target.parent) == []


# ------------------------------------------------------ every write checked
@pytest.mark.parametrize("case", ["translate", "evaluate-json", "evaluate-fifo", "average"])
def test_a_full_disk_is_one_line_and_the_old_file_stays(capsys, toy, tmp_path, full_disk,
                                                        case):
    source = tmp_path / "in.txt"
    source.write_text("the dog runs.\nthe green house.\n")
    target = tmp_path / ("scores" if case == "evaluate-fifo" else "out")
    reader = None
    if case == "evaluate-fifo":
        os.mkfifo(target)
        reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    else:
        target.write_text("the old file\n")
    argv = {"translate": translate_args(toy, source, target),
            "evaluate-json": ["evaluate", toy["model"], "--corpus", toy["corpus"], "--limit", 2,
                              "--beam", 1, "--json", target],
            "evaluate-fifo": ["evaluate", toy["model"], "--corpus", toy["corpus"], "--limit", 2,
                              "--beam", 1, "--json", target],
            "average": ["average", toy["run"] / "checkpoints", "--out", target]}[case]
    full_disk(tmp_path)
    try:
        code, _, err = run_cli(capsys, argv)
    finally:
        if reader is not None:
            os.close(reader)
    assert code == 2 and f"no space left on device writing {target}" in one_line_error(err)
    if case == "evaluate-fifo":
        assert stat.S_ISFIFO(os.stat(target).st_mode)
    else:
        assert target.read_text() == "the old file\n"
    assert leftovers(tmp_path) == []                        # no temporary file left


# ------------------------------------------------------ two writers at once
def test_two_translations_into_one_output_leave_one_whole_file(capsys, toy, tmp_path):
    out = tmp_path / "out.txt"
    inputs, expected, procs = [], [], []
    for name, words in (("a", "the big dog runs on the green house under the tree ."),
                        ("b", "a cat sits .")):
        source = tmp_path / f"{name}.txt"
        text = "".join(" ".join(words.split()[:3 + i % 8]) + "\n" for i in range(300))
        source.write_text(text)
        code, _, err = run_cli(capsys, translate_args(toy, source, tmp_path / f"{name}.ref"))
        assert code == 0, err
        expected.append((tmp_path / f"{name}.ref").read_text())
        fifo = tmp_path / f"{name}.fifo"                    # the input arrives on a signal
        os.mkfifo(fifo)
        inputs.append((fifo, text))
    # a's output is the longer, and b starts writing while a is writing (or after it):
    # written in place, the file would hold b's lines over a's first ones and a's tail
    assert len(expected[0]) > len(expected[1]) and expected[0][:20] != expected[1][:20]
    for fifo, _ in inputs:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "transformer", *map(str, translate_args(toy, fifo, out)),
             "--threads", "1"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True))
    try:
        ends = []
        def writer_end(fifo, proc):                           # (its output opened already)
            try:
                return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) + 1   # 0 is a descriptor
            except OSError as exc:                             # ENXIO: no reader yet
                assert exc.errno == errno.ENXIO and proc.poll() is None, \
                    proc.stderr and proc.stderr.read()
                return None

        def a_wrote_a_line():
            assert procs[0].poll() in (None, 0)
            return any(p.stat().st_size for p in tmp_path.glob("*out.txt*"))

        for (fifo, _), proc in zip(inputs, procs):          # each is reading its input
            ends.append(wait_until(lambda: writer_end(fifo, proc), f"{fifo.name} read") - 1)
        for i, (end, (_, text)) in enumerate(zip(ends, inputs)):
            os.set_blocking(end, True)
            os.write(end, text.encode())
            os.close(end)
            if i == 0:
                wait_until(a_wrote_a_line, "a's first line written", every=0.01)
        results = [proc.communicate(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            processes._kill_group(proc.pid)
            proc.wait()
    assert [proc.returncode for proc in procs] == [0, 0], results
    assert out.read_text() in expected                      # one of them, whole: no torn lines
    assert leftovers(tmp_path) == []


# ------------------------------------------------------ leftovers of a killed run
KILLED_PREPARE = """
import os, signal, sys
import transformer.training.prepare as prepare
write = prepare._write_split
def killed_at_valid(stream, split, *args):
    if split == "valid":                      # the train split is encoded: SIGKILL now
        os.kill(os.getpid(), signal.SIGKILL)
    return write(stream, split, *args)
prepare._write_split = killed_at_valid
from transformer.tools import cli
cli.main(sys.argv[1:])
"""


def test_a_killed_prepare_leaves_nothing_after_the_next_run(capsys, toy, tmp_path):
    out = tmp_path / "prepared"
    argv = ["prepare", "--corpus", str(toy["corpus"]), "--out", str(out), "--vocab-size",
            "120", "--workers", "1"]
    killed = processes.run([sys.executable, "-c", KILLED_PREPARE, *argv], env=ENV,
                           timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not out.exists() and leftovers(tmp_path), "the killed run should leave its scratch"
    code, stdout, err = run_cli(capsys, argv)
    assert code == 0, err
    assert "train: 300 pairs" in stdout and (out / "prepared.json").is_file()
    assert leftovers(tmp_path) == []


def test_a_temporary_file_is_swept_only_once_its_writer_is_gone(tmp_path):
    from transformer.output import open_output, remove_leftovers
    target = tmp_path / "out.txt"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from transformer.output import open_output\n"
         "out = open_output(sys.argv[1]); out.write('half'); print('open', flush=True); "
         "time.sleep(600)", str(target)], env=ENV, stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        assert holder.stdout.readline() == "open\n"
        [tmp] = [p for p in tmp_path.iterdir()]
        assert remove_leftovers(tmp_path) == [] and tmp.exists()     # its writer runs
        with open_output(target) as out:                              # a second writer
            out.write("whole\n")
        assert tmp.exists() and target.read_text() == "whole\n"
    finally:
        processes._kill_group(holder.pid)
        holder.wait()
    with open_output(target) as out:                                  # the next run
        out.write("again\n")
    assert leftovers(tmp_path) == [] and target.read_text() == "again\n"


def test_an_export_onto_a_full_disk_leaves_no_folder(capsys, toy, tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import transformer.tools.export as export

    def full(paths, weights):
        weights.write_bytes(b"\0" * 100)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(weights))

    monkeypatch.setattr(export, "_share_weights", full)
    code, _, err = run_cli(capsys, ["export", toy["model"], "--out", tmp_path / "web"])
    assert code == 2 and "no space left on device" in one_line_error(err)
    assert list(tmp_path.iterdir()) == []                   # no partial folder, no scratch


# ------------------------------------------------------ a checkpoint and its vocabulary
def foreign_tokenizer(path: Path, size: int):
    from transformer.tokenizer import Tokenizer
    words = "Zebra Quokka Xylophon jubelt schwimmt über Brücken und Felder".split()
    text = [" ".join(words[(i + j) % len(words)] for j in range(1 + i % 7)) for i in range(400)]
    return Tokenizer.train(text, path, vocab_size=size)


def test_a_foreign_tokenizer_of_the_same_size_is_refused(capsys, toy, tmp_path):
    state = load_checkpoint(toy["model"])
    del state["tokenizer"]                                  # a stripped checkpoint
    path = save_checkpoint(state, tmp_path / "model.pt")
    spm = tmp_path / "spm.model"
    assert foreign_tokenizer(spm, state["model_config"]["vocab_size"]).vocab_size == 120
    (tmp_path / "in.txt").write_text("the dog runs.\n")
    argv = ["translate", path, "--input", tmp_path / "in.txt", "--output", tmp_path / "out.txt"]
    code, _, err = run_cli(capsys, argv)
    line = one_line_error(err)
    assert code == 2 and f"{spm} is not the vocabulary {path} was trained with" in line
    assert not (tmp_path / "out.txt").exists()
    spm.write_bytes((toy["run"] / "spm.model").read_bytes())   # its own: accepted
    code, _, err = run_cli(capsys, argv)
    assert code == 0, err


def test_a_checkpoint_without_a_fingerprint_loads_as_before(toy, tmp_path):
    from transformer.inference import load_model
    state = load_checkpoint(toy["model"])
    assert state["vocabulary"].startswith("sha256:")       # recorded by training
    del state["vocabulary"]                                 # as written by older versions
    model, tokenizer = load_model(save_checkpoint(state, tmp_path / "old.pt"))
    assert tokenizer.vocab_size == model.cfg.vocab_size == 120


def test_an_old_checkpoint_that_cannot_vouch_for_the_spm_model_beside_it_is_refused(
        capsys, toy, tmp_path):
    # neither its tokenizer nor a fingerprint: a foreign spm.model of the same size
    # translated to "T T T ..."; the reader's --tokenizer says which vocabulary it is
    state = load_checkpoint(toy["model"])
    del state["tokenizer"], state["vocabulary"]
    path = save_checkpoint(state, tmp_path / "old.pt")
    spm = tmp_path / "spm.model"
    foreign_tokenizer(spm, 120)
    (tmp_path / "in.txt").write_text("the dog runs.\n")
    argv = ["translate", path, "--input", tmp_path / "in.txt", "--output", tmp_path / "out.txt"]
    code, _, err = run_cli(capsys, argv)
    line = one_line_error(err)
    assert code == 2 and line == (
        f"error: {path} carries neither its tokenizer nor its vocabulary's fingerprint, so "
        f"nothing shows that {spm} is the vocabulary it was trained with: if it is, say so "
        f"with --tokenizer {spm}")
    assert not (tmp_path / "out.txt").exists()
    code, _, err = run_cli(capsys, [*argv, "--tokenizer", toy["run"] / "spm.model"])
    assert code == 0, err                                  # vouched for by the reader
    assert (tmp_path / "out.txt").read_text().count("\n") == 1


def test_averaging_keeps_the_fingerprint(capsys, toy, tmp_path):
    code, _, err = run_cli(capsys, ["average", toy["run"] / "checkpoints", "--out",
                                    tmp_path / "avg.pt"])
    assert code == 0, err
    assert load_checkpoint(tmp_path / "avg.pt")["vocabulary"] == \
        load_checkpoint(toy["model"])["vocabulary"]


# ------------------------------------------------------ what is loaded is checked
@pytest.mark.parametrize("field, changes", [
    ("d_model", {"d_model": "16", "d_k": None, "d_v": None}),    # was a TypeError (//)
    ("d_model", {"d_model": "16"}), ("n_heads", {"n_heads": 2.0}),
    ("dropout", {"dropout": "0.1"}), ("share_embeddings", {"share_embeddings": "yes"})])
def test_a_config_value_of_the_wrong_type_is_one_line(capsys, toy, tmp_path, field, changes):
    state = load_checkpoint(toy["model"])
    state["model_config"].update(changes)
    path = save_checkpoint(state, tmp_path / "model.pt")
    (tmp_path / "in.txt").write_text("the dog runs.\n")
    code, _, err = run_cli(capsys, ["translate", path, "--input", tmp_path / "in.txt"])
    line = one_line_error(err)
    assert code == 2 and str(path) in line and f"ModelConfig.{field} must be" in line


@pytest.mark.parametrize("damage", ["ids", "offsets"])
def test_a_prepared_folder_with_ids_past_the_vocabulary_is_one_line(capsys, toy, tmp_path,
                                                                      damage):
    folder = tmp_path / "prepared"
    code, _, err = run_cli(capsys, ["prepare", "--corpus", toy["corpus"], "--out", folder,
                                    "--vocab-size", 120, "--workers", 1])
    assert code == 0, err
    if damage == "ids":
        ids = np.memmap(folder / "train.de.ids", dtype=np.uint16, mode="r+")
        ids[7] = 120                                        # one past the last piece
        name = "train.de.ids"
    else:
        offsets = np.memmap(folder / "train.en.offsets", dtype=np.int64, mode="r+")
        offsets[5] = offsets[7]                             # sentence 5 ends before it starts
        name = "train.en.offsets"
    ids = offsets = None
    argv = train_args(folder, tmp_path / "run")
    code, _, err = run_cli(capsys, argv)
    line = one_line_error(err)
    assert code == 2 and str(folder / name) in line
    assert ("outside the vocabulary" if damage == "ids" else "ends before it starts") in line
    assert not (tmp_path / "run" / "run.json").exists()


# ------------------------------------------------------ Ctrl-C's count equals the file
def interrupt_at(k: int, files: tuple[str, ...], start):
    """A trace function that sends this process SIGINT at the k-th line executed in
    ``files`` once the function ``start`` has been entered (a point forced, not timed)."""
    seen = {"on": False, "n": 0}

    def local(frame, event, arg):
        if event == "line" and seen["on"]:
            seen["n"] += 1
            if seen["n"] == k:
                signal.raise_signal(signal.SIGINT)
        return local

    def tracer(frame, event, arg):
        if frame.f_code is start:
            seen["on"] = True
        return local if frame.f_code.co_filename in files else None
    return tracer, seen


def test_ctrl_c_reports_the_lines_in_the_file_wherever_it_lands(capsys, toy, tmp_path, ctrl_c):
    import transformer.translation as translation
    import transformer.output as output
    from transformer.tools import interrupts
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\nthe green house.\na man sits.\n")
    code, _, err = run_cli(capsys, translate_args(toy, source, target))
    assert code == 0, err
    whole = target.read_text().splitlines()
    files = (cli.__file__, output.__file__, interrupts.__file__)
    counted, k = [], 0
    while True:
        k += 1
        target.write_text("old\n")
        # from the first decoding on: every point between decoding, writing and counting
        tracer, seen = interrupt_at(k, files, translation.translations.__code__)
        sys.settrace(tracer)
        try:
            code, _, err = run_cli(capsys, translate_args(toy, source, target))
        finally:
            sys.settrace(None)
        lines = target.read_text().splitlines()
        if code == 0:                                   # all written when it came, or
            assert lines == whole, (k, lines)           # k is past the end
            if seen["n"] < k:
                break
            continue
        assert code == 130 and "Traceback" not in err, (k, err)
        message = err.strip().splitlines()[-1]
        n = int(message.split("the first ")[1].split(" of ")[0])
        assert message == f"interrupted: the first {n} of 3 translations are in {target}"
        assert lines == whole[:n], (k, n, lines)         # the count is the file's lines
        counted.append(n)
        assert leftovers(tmp_path) == [], k
    assert set(counted) == {0, 1, 2, 3} and len(counted) > 40, (k, counted)


def test_ctrl_c_before_the_input_is_read_leaves_the_old_file(capsys, toy, tmp_path,
                                                               monkeypatch):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("the dog runs.\n")
    target.write_text("old\n")

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "read_sentences", interrupted)
    code, _, err = run_cli(capsys, translate_args(toy, source, target))
    assert code == 130 and err.strip() == "interrupted"
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []


# ------------------------------------------------------ the guard itself (tools/interrupts.py)
def test_ctrl_c_guard_installs_only_over_the_default_handler_and_restores_it(ctrl_c):
    from transformer.tools.interrupts import CtrlCBetweenLines
    guard = CtrlCBetweenLines()
    guard.install()
    assert signal.getsignal(signal.SIGINT) == guard._on_sigint
    assert guard.previous is signal.default_int_handler
    guard.restore()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert guard.previous is None
    guard.restore()                                     # a second restore changes nothing
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    signal.signal(signal.SIGINT, signal.SIG_IGN)        # a background job: Ctrl-C ignored
    ignored = CtrlCBetweenLines()
    ignored.install()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and ignored.previous is None
    ignored.restore()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_ctrl_c_guard_is_not_installed_from_another_thread(ctrl_c):
    import threading
    from transformer.tools.interrupts import CtrlCBetweenLines
    guard, failed = CtrlCBetweenLines(), []

    def install():
        try:
            guard.install()
        except BaseException as exc:                    # signal.signal outside the main thread
            failed.append(exc)
    worker = threading.Thread(target=install)
    worker.start()
    worker.join()
    assert failed == [] and guard.previous is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_is_held_inside_the_block_raised_at_its_end_and_at_once_outside(ctrl_c):
    from transformer.tools.interrupts import CtrlCBetweenLines
    guard = CtrlCBetweenLines()
    guard.install()
    try:
        assert not guard.holding and not guard.pending
        with pytest.raises(KeyboardInterrupt):          # outside a held block: at once
            signal.raise_signal(signal.SIGINT)
        after = []
        with pytest.raises(KeyboardInterrupt):
            with guard.held():
                assert guard.holding
                signal.raise_signal(signal.SIGINT)
                after.append("the block went on")       # not cut
        assert after == ["the block went on"]
        assert not guard.holding and not guard.pending
        with guard.held():                              # no Ctrl-C: nothing raised, and
            pass                                        # the last one is not raised again
        with pytest.raises(ValueError):                 # an error in the block ends holding
            with guard.held():
                raise ValueError
        assert not guard.holding
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        guard.restore()
