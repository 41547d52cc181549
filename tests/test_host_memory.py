"""`python -m transformer` restarts itself under jemalloc (flat host memory in training)."""
import json
import os
import sys
from pathlib import Path

import pytest

import processes
from transformer.tools import host_memory

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def execs(monkeypatch):
    calls = []
    monkeypatch.setattr(host_memory.os, "execve", lambda *a: calls.append(a))
    monkeypatch.setattr(host_memory, "jemalloc_library", lambda: "/lib/libjemalloc.so.2")
    monkeypatch.setattr(host_memory.sys, "platform", "linux")
    monkeypatch.delenv("TRANSFORMER_MALLOC", raising=False)
    monkeypatch.delenv("MALLOC_CONF", raising=False)
    monkeypatch.setenv("LD_PRELOAD", "")
    return calls


def test_restarts_under_jemalloc_purging_in_the_background(execs):
    host_memory.exec_with_jemalloc(["train", "--out", "r"])
    (exe, argv, env), = execs
    assert argv == [sys.executable, "-m", "transformer", "train", "--out", "r"]
    assert env["LD_PRELOAD"] == "/lib/libjemalloc.so.2"
    assert env["MALLOC_CONF"] == host_memory.JEMALLOC_CONF == "background_thread:true"


def test_the_book_build_uses_the_same_settings():
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    book_env = next(line for line in makefile.splitlines() if line.startswith("BOOK_ENV"))
    assert f"MALLOC_CONF={host_memory.JEMALLOC_CONF}" in book_env


def test_no_restart_when_loaded_asked_not_to_or_missing(execs, monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/lib/libjemalloc.so.2")
    host_memory.exec_with_jemalloc([])
    monkeypatch.setenv("LD_PRELOAD", "")
    monkeypatch.setenv("TRANSFORMER_MALLOC", "system")
    host_memory.exec_with_jemalloc([])
    monkeypatch.delenv("TRANSFORMER_MALLOC")
    monkeypatch.setattr(host_memory, "jemalloc_library", lambda: None)
    host_memory.exec_with_jemalloc([])
    assert execs == []


# Written into the training process through PYTHONPATH (the environment survives the
# restart): when that process ends, what it ran with, from /proc/self.
REPORTER = """
import atexit, json, os
from pathlib import Path

def _report():
    me = Path("/proc/self")
    threads = sorted({(t / "comm").read_text().strip() for t in (me / "task").iterdir()})
    status = dict(line.split(":", 1) for line in (me / "status").read_text().splitlines())
    Path(os.environ["ALLOCATOR_REPORT"]).write_text(json.dumps({
        "jemalloc_mapped": "libjemalloc" in (me / "maps").read_text(),
        "malloc_conf": os.environ.get("MALLOC_CONF"), "threads": threads,
        "peak_kib": int(status["VmHWM"].split()[0])}))

atexit.register(_report)
"""


@pytest.mark.skipif(host_memory.jemalloc_library() is None, reason="libjemalloc2 not installed")
def test_training_through_the_command_line_runs_under_purging_jemalloc(tmp_path):
    # A toy training run of a fixed number of updates through `python -m transformer`, as
    # users start it; the process that trained reports, as it ends, whether jemalloc is
    # mapped, with JEMALLOC_CONF, and its background purging thread running: the setting
    # that keeps a real run's memory flat. The memory figures themselves are the
    # benchmark's (benchmarks/cpu/host_memory.py; docs/notes/2026-12-benchmarks.md, "Host memory").
    from helpers import train_args, write_corpus
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(REPORTER)
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MALLOC_CONF",
                                                             "TRANSFORMER_MALLOC")}
    env.update(ALLOCATOR_REPORT=str(report), PYTHONPATH=os.pathsep.join(
        [str(tmp_path / "site"), str(REPO), env.get("PYTHONPATH", "")]))
    args = train_args(write_corpus(tmp_path / "corpus"), tmp_path / "run", updates=20)
    done = processes.run([sys.executable, "-m", "transformer", *args, "--threads", "1"],
                         env=env, timeout=1800)                # a hang guard only
    assert done.returncode == 0, done.stderr[-3000:]
    assert "final" in (tmp_path / "run" / "metrics.jsonl").read_text()
    ran = json.loads(report.read_text())
    assert ran["jemalloc_mapped"], "the training process did not load jemalloc"
    assert ran["malloc_conf"] == host_memory.JEMALLOC_CONF
    assert "jemalloc_bg_thd" in ran["threads"], f"no purging thread: {ran['threads']}"
    # a toy model: far below the real runs' figures; only a leak on the scale of the
    # model's batches at every update would reach this
    assert ran["peak_kib"] < 1.5 * 1024 ** 2, f"peak resident {ran['peak_kib'] / 1024:.0f} MiB"
