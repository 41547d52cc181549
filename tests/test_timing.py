"""transformer.measuring.timing, the one timing harness of the chapters and the benchmarks:
the Stopwatch times its block (and a GPU's work in it, not an earlier block's), the
median skips its warm-up calls, the best times every call.

On a stand-in clock (``clock``): a block's work moves it by set amounts, so what is
checked is which clock is read when, never how fast this machine is (the suite asserts no
durations: tests/test_suite.py)."""
import types

import pytest
import torch

from transformer.measuring import timing
from transformer.measuring.timing import Stopwatch, best_seconds, call_seconds, median_seconds


class Clock:
    """The wall clock and this process's CPU clock as ``timing`` reads them; ``work``
    (seconds busy on this process's CPU) moves both, ``wait`` (seconds idle) the wall one."""

    def __init__(self, monkeypatch):
        self.wall = self.cpu = 0.0
        monkeypatch.setattr(timing, "time", types.SimpleNamespace(
            perf_counter=lambda: self.wall, process_time=lambda: self.cpu))

    def wait(self, seconds):
        self.wall += seconds

    def work(self, seconds):
        self.wall += seconds
        self.cpu += seconds


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)


def sleeper(clock, *seconds):
    """A function whose n-th call waits ``seconds[n]`` on ``clock``; ``calls`` counts them."""
    def fn():
        clock.wait(seconds[min(fn.calls, len(seconds) - 1)])
        fn.calls += 1
    fn.calls = 0
    return fn


def test_the_stopwatch_times_its_block_in_wall_and_cpu_seconds(clock):
    clock.work(7.0)                              # before the block: not counted
    with Stopwatch() as idle:
        clock.wait(0.05)
    assert idle.seconds == pytest.approx(0.05) and idle.cpu_seconds == 0
    with Stopwatch() as busy:                    # 0.05 s of this process's CPU time
        clock.work(0.05)
    assert busy.seconds == pytest.approx(0.05) and busy.cpu_seconds == pytest.approx(0.05)
    clock.work(3.0)                              # after it: the reading stays
    assert busy.seconds == pytest.approx(0.05)


def test_on_a_gpu_the_stopwatch_counts_its_blocks_work_not_the_queue_before_it(clock,
                                                                                monkeypatch):
    """torch.cuda.synchronize stands in for a GPU: 0.3 s of earlier work queued as the
    block starts (left out), 0.05 s of the block's own as it ends (counted)."""
    waits = [0.3, 0.05]
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: clock.wait(waits.pop(0)))
    with Stopwatch("cuda") as watch:
        pass
    assert waits == [] and watch.seconds == pytest.approx(0.05)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: 1 / 0)      # a CPU never waits
    with Stopwatch("cpu"):
        pass


def test_each_call_is_timed_in_order(clock):
    times = call_seconds(sleeper(clock, 0.3, 0.0, 0.2), 3)
    assert times == pytest.approx([0.3, 0.0, 0.2])


def test_the_median_leaves_out_its_warm_up_calls(clock):
    fn = sleeper(clock, 0.3, 0.3, 0.0)           # two slow first calls, then fast ones
    assert median_seconds(fn, repeats=3, warmup=2) == 0 and fn.calls == 5
    fn = sleeper(clock, 0.3, 0.3, 0.0)
    assert median_seconds(fn, repeats=3, warmup=0) == pytest.approx(0.3) and fn.calls == 3


def test_the_best_times_every_call_with_no_warm_up(clock):
    fn = sleeper(clock, 0.0, 0.3)                # a fast first call, slow ones after
    assert best_seconds(fn, repeats=3) == 0 and fn.calls == 3
