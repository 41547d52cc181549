"""The session's guard (tests/state_guard.py): a test that leaves the process state changed
fails, naming what it changed, and the next test starts as it would have."""
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent

PLANTED = '''
import os
import signal
import warnings

import pytest
import torch

THREADS = torch.get_num_threads()


def test_sets_sigint_ignored_and_leaves_it():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_after_it_ctrl_c_raises_again():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sets_sigint_and_restores_it():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGINT, previous)


def test_moves_to_another_folder(tmp_path):
    os.chdir(tmp_path)


def test_sets_a_variable():
    os.environ["PLANTED_LEAK"] = "1"


def test_sets_a_variable_with_monkeypatch(monkeypatch):
    monkeypatch.setenv("PLANTED_LEAK", "1")


def test_turns_warnings_off():
    warnings.simplefilter("ignore")


def test_changes_torch_threads():
    torch.set_num_threads(THREADS + 1)


def test_after_them_all_is_as_it_was():
    assert "PLANTED_LEAK" not in os.environ and torch.get_num_threads() == THREADS
    assert ("ignore", None, Warning, None, 0) not in warnings.filters


@pytest.fixture(scope="module")
def default_dtype_for_the_module():
    torch.set_default_dtype(torch.float64)


def test_in_a_module_whose_fixture_leaks(default_dtype_for_the_module):
    pass
'''


def test_a_planted_leak_fails_the_test_that_left_it(pytester, monkeypatch, ctrl_c):
    # `ctrl_c`: the sub-session starts with Ctrl-C as in a terminal, whatever this one did
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makepyfile(test_planted=PLANTED)
    result = pytester.runpytest_subprocess("-p", "state_guard", "-p", "no:cacheprovider",
                                           timeout=600)
    out = result.stdout.str()
    result.assert_outcomes(passed=10, errors=6)
    errors = {line.split("::")[1].split()[0] for line in out.splitlines()
              if line.startswith("ERROR test_planted.py::")}
    assert errors == {"test_sets_sigint_ignored_and_leaves_it", "test_moves_to_another_folder",
                      "test_sets_a_variable", "test_changes_torch_threads",
                      "test_turns_warnings_off",
                      "test_in_a_module_whose_fixture_leaks"}, out
    for named in ("SIGINT handler: default_int_handler -> SIG_IGN",
                  "working directory: ", "environment variable PLANTED_LEAK: unset -> '1'",
                  "torch intra-op threads: ", "warnings.filters: ",
                  "test_planted.py (its module- or class-scoped fixtures) left the process "
                  "state changed", "torch default dtype: torch.float32 -> torch.float64"):
        assert named in out, (named, out)


def test_the_guard_is_on_in_this_session(request):
    assert request.config.pluginmanager.has_plugin("state_guard")


PLANTED_TRAINING = '''
import pytest
import torch

THREADS = torch.get_num_threads()


@pytest.fixture(scope="session")
def trained_for_the_session():
    torch.set_num_threads(THREADS + 1)        # as Trainer.from_config with threads= does


@pytest.fixture(scope="module")
def trained_for_the_module():
    torch.set_num_threads(THREADS + 2)


@pytest.fixture(scope="class")
def trained_for_the_class():
    torch.set_num_threads(THREADS + 3)
    yield


class TestInAClass:
    def test_its_fixture_keeps_the_runs_count(self, trained_for_the_class):
        assert torch.get_num_threads() == THREADS + 3


def test_a_session_fixture_puts_it_back_at_once(trained_for_the_session):
    assert torch.get_num_threads() == THREADS


def test_a_module_fixture_keeps_the_runs_count_for_its_module(trained_for_the_module):
    assert torch.get_num_threads() == THREADS + 2


def test_a_test_that_trains():
    torch.set_num_threads(THREADS + 4)
'''

PLANTED_AFTER = '''
import torch

from test_planted_training import THREADS


def test_after_them_all_is_as_it_was():
    assert torch.get_num_threads() == THREADS
'''


def test_no_fixture_nor_test_leaves_torchs_threads_changed(pytester, monkeypatch, ctrl_c):
    # the suite's own conftest puts the count back after every test and fixture, whatever
    # the count was at the start (OMP_NUM_THREADS=1, 3 or unset), so none need remember it
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(pytester.path)]))
    pytester.makepyfile(test_planted_training=PLANTED_TRAINING, test_planted_after=PLANTED_AFTER)
    result = pytester.runpytest_subprocess("-p", "state_guard", "-p", "conftest",
                                           "-p", "no:cacheprovider",
                                           "test_planted_training.py",
                                           "test_planted_after.py", timeout=600)
    result.assert_outcomes(passed=5)
