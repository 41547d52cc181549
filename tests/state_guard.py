"""The process state a test may change, and a guard that fails the test that leaves it changed.

Tests run one after another in one process. A test that changes the process's state and
does not put it back changes what every later test meets: a SIGINT handler left at
``SIG_IGN`` makes a later Ctrl-C test fail with no link to the test that caused it, a
thread count left at 8 makes a later timing test thrash, a working directory left in a
deleted folder breaks every relative path. So each test that needs such state sets it
itself and restores it (``monkeypatch``, a fixture, ``try/finally``), and this guard,
a pytest plugin (``tests/conftest.py`` loads it; ``-p state_guard`` elsewhere), checks it:

* before each test (its function-scoped fixtures included) :func:`snapshot` records the
  state below; after the test and those fixtures, a difference fails that test (an error
  at its teardown) naming each thing that changed, and the guard puts back what can be
  put back, so the next test starts as this one did;
* the same around each test module as a whole, for its module- and class-scoped fixtures
  (the error lands on the module's last test).

What is checked (:func:`snapshot`): the handler of every catchable signal (SIGINT first),
as Python sees it and as the kernel does (ignored and caught sets), the main thread's
blocked signals and interval timers; the working directory and umask; ``os.environ``;
``sys.path``, the trace and profile functions, ``sys.excepthook``, the recursion limit;
``warnings.filters``; the locale; ``gc``; the default socket timeout; numpy's error
handling and print options; the root logger's level; torch's intra- and inter-op thread
counts, default dtype and device, grad, inference and anomaly modes, deterministic
algorithms, float32 matmul precision and the cuDNN flags.

Not counted as a test's doing: what a library does on its first use, the same whichever
test uses it first (``LIBRARY_*`` below: torch's compiler, sympy and plotly); and, around a
module, the warnings filters, which pytest sets anew for each test from its marks.
"""
from __future__ import annotations

import gc
import locale
import logging
import os
import signal
import socket
import sys
import warnings
from pathlib import Path

import pytest

# PYTEST_CURRENT_TEST names the running phase: pytest changes it, not the test.
IGNORED_ENVIRON = {"PYTEST_CURRENT_TEST"}
# What a library does the first time a test uses it, the same whichever test that is (and
# again in a later one if undone): not the test's doing, so taken as the new state.
# torch's compiler (torch.compile) records its cache folder (its default) and a pointer
# its compiled code reads in the environment, lifts the recursion limit to 2000 for deep
# graphs, and imports setuptools, which puts its vendored packages on sys.path; sympy,
# imported by torch on first need, shows each of its deprecation warnings once.
LIBRARY_ENVIRON = {"TORCHINDUCTOR_CACHE_DIR", "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"}
LIBRARY_RECURSION_LIMIT = 2000
LIBRARY_PATH = os.path.join("setuptools", "_vendor")
LIBRARY_WARNINGS = ("sympy.",)
LIBRARY_WARNING_MESSAGES = ("plotly",)     # plotly.tools, on import: its deprecation notes
UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}
HANDLERS = {signal.SIG_DFL: "SIG_DFL", signal.SIG_IGN: "SIG_IGN",
            signal.default_int_handler: "default_int_handler", None: "set outside Python"}


def _signals() -> list[int]:
    """Every catchable signal, SIGINT first."""
    rest = sorted(s for s in signal.valid_signals() if s not in UNCATCHABLE and s != signal.SIGINT)
    return [signal.SIGINT, *rest]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kernel_signal_sets() -> dict[str, frozenset[int]]:
    """The signals the kernel has as ignored and as caught for this process (Linux), of
    those Python names (glibc's own two below SIGRTMIN, which it sets up the first time
    a thread needs them, are left out)."""
    sets, valid = {}, signal.valid_signals()
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return sets
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("SigIgn", "SigCgt"):
            mask = int(value.strip(), 16)
            sets[key] = frozenset(n + 1 for n in range(64) if mask >> n & 1 and n + 1 in valid)
    return sets


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _torch_state() -> dict:
    torch = sys.modules.get("torch")
    if torch is None:                      # not imported yet: nothing of torch's to change
        return {}
    state = {
        "torch intra-op threads": torch.get_num_threads(),
        "torch inter-op threads": torch.get_num_interop_threads(),
        "torch default dtype": torch.get_default_dtype(),
        "torch grad mode": torch.is_grad_enabled(),
        "torch inference mode": torch.is_inference_mode_enabled(),
        "torch anomaly detection": torch.is_anomaly_enabled(),
        "torch deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "torch float32 matmul precision": torch.get_float32_matmul_precision(),
        "torch cudnn flags": (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark,
                              torch.backends.cudnn.deterministic,
                              torch.backends.cudnn.allow_tf32),
    }
    if hasattr(torch, "get_default_device"):
        state["torch default device"] = torch.get_default_device()
    return state


def snapshot() -> dict:
    """The process state a test can leave changed (see the module's docstring)."""
    state: dict = {}
    for number in _signals():
        state[f"{_signal_name(number)} handler"] = signal.getsignal(number)
    for key, signals in _kernel_signal_sets().items():
        state[f"kernel {key}"] = signals
    state["blocked signals"] = frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
        state[f"{name} armed"] = signal.getitimer(getattr(signal, name)) != (0.0, 0.0)
    try:
        state["working directory"] = os.getcwd()
    except FileNotFoundError:              # the folder was removed under us
        state["working directory"] = None
    state["umask"] = _umask()
    state["environment"] = {k: v for k, v in os.environ.items() if k not in IGNORED_ENVIRON}
    state["sys.path"] = list(sys.path)
    state["trace function"] = sys.gettrace()
    state["profile function"] = sys.getprofile()
    state["sys.excepthook"] = sys.excepthook
    state["recursion limit"] = sys.getrecursionlimit()
    state["warnings.filters"] = list(warnings.filters)
    state["locale"] = locale.setlocale(locale.LC_ALL, None)
    state["gc enabled"] = gc.isenabled()
    state["default socket timeout"] = socket.getdefaulttimeout()
    state["root logger level"] = logging.getLogger().level
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        state["numpy error handling"] = numpy.geterr()
        state["numpy print options"] = numpy.get_printoptions()
    state.update(_torch_state())
    return state


def _show(key: str, value) -> str:
    if key.endswith(" handler"):
        return HANDLERS.get(value, repr(value))
    if isinstance(value, frozenset):
        return "{" + ", ".join(_signal_name(n) for n in sorted(value)) + "}"
    return repr(value)


def _library_filter(entry) -> bool:
    action, message, category = entry[:3]
    if action == "default" and message is not None:
        return message.pattern.startswith(LIBRARY_WARNING_MESSAGES)
    return action == "once" and category.__module__.startswith(LIBRARY_WARNINGS)


def differences(before: dict, after: dict) -> dict[str, list[str]]:
    """What changed from ``before`` to ``after`` (less what a library does on first use,
    see above): the key of each changed thing, with one line for each change."""
    changed: dict[str, list[str]] = {}
    for key in before:
        if key not in after:
            continue
        was, now = before[key], after[key]
        if was == now:
            continue
        if key == "environment":
            lines = [f"environment variable {name}: "
                     f"{'unset' if name not in was else repr(was[name])} -> "
                     f"{'unset' if name not in now else repr(now[name])}"
                     for name in sorted(was.keys() | now.keys())
                     if was.get(name) != now.get(name) and name not in LIBRARY_ENVIRON]
        elif key in ("sys.path", "warnings.filters"):
            library = (lambda x: x.endswith(LIBRARY_PATH)) if key == "sys.path" \
                else _library_filter
            added = [x for x in now if x not in was]
            removed = [x for x in was if x not in now]
            if not removed and all(map(library, added)) and \
                    [x for x in now if x not in added] == was:
                continue
            lines = [f"{key}: {len(was)} -> {len(now)} entries"
                     + (f", added {added!r}" if added else "")
                     + (f", removed {removed!r}" if removed else "")
                     + ("" if added or removed else ", reordered")]
        elif key == "recursion limit" and now == max(was, LIBRARY_RECURSION_LIMIT):
            continue
        else:
            lines = [f"{key}: {_show(key, was)} -> {_show(key, now)}"]
        if lines:
            changed[key] = lines
    return changed                         # in snapshot()'s order: SIGINT first


def restore(before: dict, changed) -> None:
    """Put back the ``changed`` things (keys of :func:`snapshot`) as they were in
    ``before``, where they can be put back (torch's inter-op threads cannot)."""
    for number in _signals():
        key = f"{_signal_name(number)} handler"
        if key in changed and before[key] is not None:
            try:
                signal.signal(number, before[key])
            except (OSError, ValueError, TypeError):
                pass
    if "blocked signals" in changed:
        signal.pthread_sigmask(signal.SIG_SETMASK, before["blocked signals"])
    for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
        if f"{name} armed" in changed and not before[f"{name} armed"]:
            signal.setitimer(getattr(signal, name), 0)
    if "working directory" in changed and before["working directory"] is not None:
        try:
            os.chdir(before["working directory"])
        except OSError:
            pass
    if "umask" in changed:
        os.umask(before["umask"])
    if "environment" in changed:
        was = before["environment"]
        for name in set(os.environ) - set(was) - IGNORED_ENVIRON - LIBRARY_ENVIRON:
            del os.environ[name]
        os.environ.update({k: v for k, v in was.items() if os.environ.get(k) != v})
    if "sys.path" in changed:
        sys.path[:] = before["sys.path"]
    if "trace function" in changed:
        sys.settrace(before["trace function"])
    if "profile function" in changed:
        sys.setprofile(before["profile function"])
    if "sys.excepthook" in changed:
        sys.excepthook = before["sys.excepthook"]
    if "recursion limit" in changed:
        sys.setrecursionlimit(before["recursion limit"])
    if "warnings.filters" in changed:
        warnings.filters[:] = before["warnings.filters"]
        warnings._filters_mutated()
    if "locale" in changed:
        try:
            locale.setlocale(locale.LC_ALL, before["locale"])
        except locale.Error:
            pass
    if "gc enabled" in changed:
        (gc.enable if before["gc enabled"] else gc.disable)()
    if "default socket timeout" in changed:
        socket.setdefaulttimeout(before["default socket timeout"])
    if "root logger level" in changed:
        logging.getLogger().setLevel(before["root logger level"])
    numpy = sys.modules.get("numpy")
    if "numpy error handling" in changed:
        numpy.seterr(**before["numpy error handling"])
    if "numpy print options" in changed:
        numpy.set_printoptions(**before["numpy print options"])
    torch = sys.modules.get("torch")
    setters = {
        "torch intra-op threads": lambda v: torch.set_num_threads(v),
        "torch default dtype": lambda v: torch.set_default_dtype(v),
        "torch grad mode": lambda v: torch.set_grad_enabled(v),
        "torch anomaly detection": lambda v: torch.autograd.set_detect_anomaly(v),
        "torch deterministic algorithms": lambda v: torch.use_deterministic_algorithms(v),
        "torch float32 matmul precision": lambda v: torch.set_float32_matmul_precision(v),
        "torch default device": lambda v: torch.set_default_device(v),
    }
    for key, put_back in setters.items():
        if key in changed:
            put_back(before[key])
    if "torch cudnn flags" in changed:
        (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark,
         torch.backends.cudnn.deterministic, torch.backends.cudnn.allow_tf32) = \
            before["torch cudnn flags"]


def check(before: dict, what: str, leave_out: tuple[str, ...] = ()) -> None:
    """Fail (``pytest.fail``) naming each change since ``before``, after putting it back;
    ``leave_out``: keys not compared."""
    changed = differences({k: v for k, v in before.items() if k not in leave_out}, snapshot())
    if changed:
        restore(before, changed)
        lines = [line for key in changed for line in changed[key]]
        pytest.fail(f"{what} left the process state changed (set it in the test and restore "
                    f"it: monkeypatch, a fixture, try/finally):\n  " + "\n  ".join(lines),
                    pytrace=False)


@pytest.fixture(autouse=True)
def _process_state_is_left_as_found(request):
    """Before each test: the state; after it and its function-scoped fixtures: the same.
    A plugin's autouse fixture comes before every conftest's and test module's, so its
    snapshot is taken before theirs are set up and checked after they are torn down."""
    before = snapshot()
    yield
    check(before, f"{request.node.nodeid}")


# ------------------------------------------------ the same around each module
_module_state: dict = {}


def _module(item):
    return item.getparent(pytest.Module) or item.parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    module = _module(item)
    if _module_state.get("module") is not module:
        _module_state.update(module=module, before=snapshot())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield
    module = _module(item)
    if (nextitem is None or _module(nextitem) is not module) and \
            _module_state.get("module") is module:
        before = _module_state.pop("before")
        _module_state.clear()
        # pytest sets the warnings filters anew for each test, from its marks
        check(before, f"{module.nodeid} (its module- or class-scoped fixtures)",
              leave_out=("warnings.filters",))
    return result
