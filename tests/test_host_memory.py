"""`python -m transformer` restarts itself under jemalloc (flat host memory in training)."""
import os
import subprocess
import sys

import pytest

from transformer import host_memory


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


def test_restarts_under_jemalloc_with_purging_off(execs):
    host_memory.exec_with_jemalloc(["train", "--out", "r"])
    (exe, argv, env), = execs
    assert argv == [sys.executable, "-m", "transformer", "train", "--out", "r"]
    assert env["LD_PRELOAD"] == "/lib/libjemalloc.so.2"
    assert env["MALLOC_CONF"] == "dirty_decay_ms:-1,muzzy_decay_ms:-1"


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
