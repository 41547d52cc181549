"""Processes that end with the test that started them.

A test that starts a process which starts another (``python -m transformer`` restarting
itself under jemalloc, a probe around a training run, a kernel, a shell pipeline) used to
leave the grandchild running when it failed or timed out: ``subprocess.run`` kills the
child it started and nothing else, and an orphan is adopted by init, out of the test's
reach. Two measures, used by ``tests/conftest.py``:

* :func:`adopt_orphans` makes this process a child subreaper (Linux ``prctl``): an orphan
  among its descendants is re-parented to it, not to init, so it stays findable;
* :func:`end_new_processes` ends, after each test, every child of this process that was
  not there before the test (its whole subtree, by SIGKILL), and reaps it.

:func:`ctrl_c_as_in_a_terminal`, a ``preexec_fn``, starts a child that a test will
interrupt with SIGINT's default action, however this run was started.

:func:`run` is ``subprocess.run(..., capture_output=True, text=True)`` that starts the
command in a session of its own and kills that whole process group when it times out or
the test is interrupted (a hang guard, not a speed requirement: give it a generous limit).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
# helpers that libraries start on purpose and reuse across tests: never ended
KEEP = ("torch/_inductor/compile_worker", "multiprocessing.resource_tracker",
        "multiprocessing.forkserver")


def adopt_orphans() -> bool:
    """Make this process adopt its orphaned descendants; False where that is not possible."""
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now visible in /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:                           # ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return parents


def children(pid: int | None = None) -> set[int]:
    """The direct children of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return {child for child, parent in _parents().items() if parent == pid}


def end_new_processes(before: set[int]) -> list[int]:
    """SIGKILL every child of this process not in ``before``, with all its descendants, and
    reap them; returns the pids killed."""
    parents = _parents()
    me = os.getpid()
    doomed = [p for p, parent in parents.items()
              if parent == me and p not in before and not _kept(p)]
    killed, queue = [], list(doomed)
    while queue:
        pid = queue.pop()
        killed.append(pid)
        queue.extend(child for child, parent in parents.items() if parent == pid)
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in doomed:                             # our own children: reap them
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:                  # reaped by its Popen meanwhile
            pass
    return killed


def _kept(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return any(name in cmdline for name in KEEP)


def ctrl_c_as_in_a_terminal() -> None:
    """A ``preexec_fn``: the child starts with SIGINT's default action, as a command typed
    in a terminal does, also where this process ignores SIGINT (a test run started as a
    background job or under nohup): an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(cmd, *, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)`` in
    a session of its own; on a timeout or any exception its whole process group is killed
    (grandchildren included) before the exception propagates."""
    if kwargs.pop("capture_output", True):
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.setdefault("text", True)
    with subprocess.Popen(cmd, start_new_session=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill_group(proc.pid)
            try:                                  # what it wrote until then
                exc.stdout, exc.stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:     # a process outside the group holds a pipe
                proc.kill()
            raise
        except BaseException:
            _kill_group(proc.pid)
            proc.wait()
            raise
        _kill_group(proc.pid)                      # whatever it left behind
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
