"""`python -m transformer` restarts itself under jemalloc (flat host memory in training)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from transformer.training import host_memory


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


@pytest.mark.skipif(host_memory.jemalloc_library() is None, reason="libjemalloc2 not installed")
def test_the_command_line_restarts_and_runs():
    # the restarted process must be a working `python -m transformer` (same arguments)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TRANSFORMER_MALLOC")}
    run = subprocess.run([sys.executable, "-m", "transformer", "average", "--help"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "usage: python -m transformer average" in run.stdout


@pytest.mark.skipif(host_memory.jemalloc_library() is None, reason="libjemalloc2 not installed")
def test_training_memory_stays_flat(tmp_path, shared_data):
    # 150 updates of the tiny preset's model through the command line, as users run it.
    # With jemalloc's purging switched off this peaked at 6.1 GB (24 GB by update 460);
    # with JEMALLOC_CONF it stays near 1.3 GB (docs/notes/2026-12-benchmarks.md, "Host memory").
    # An intermediate process measures the peak of its one child (ru_maxrss, KiB).
    train = [sys.executable, "-m", "transformer", "train", "--preset", "tiny",
             "--corpus", "multi30k-en-de", "--data-root", str(shared_data),
             "--out", str(tmp_path / "run"), "--max-updates", "150", "--precision", "auto",
             "--threads", "2", "--max-tokens", "4096", "--update-tokens", "4096",
             "--warmup", "1000", "--lr-factor", "1.8", "--save-every", "1000",
             "--eval-bleu-sentences", "0", "--no-progress"]
    probe = textwrap.dedent(f"""
        import resource, subprocess, sys
        done = subprocess.run({train!r}, capture_output=True, text=True)
        print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.stderr.write(done.stderr[-2000:])
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MALLOC_CONF",
                                                             "TRANSFORMER_MALLOC")}
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, timeout=600)
    code, peak_kib = map(int, run.stdout.split())
    assert code == 0, run.stderr
    assert peak_kib / 1024 ** 2 < 2.5, f"peak resident {peak_kib / 1024 ** 2:.2f} GiB"
