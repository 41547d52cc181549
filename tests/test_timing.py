"""transformer_book.timing, the one timing harness of the chapters and the benchmarks:
the Stopwatch times its block (and a GPU's work in it, not an earlier block's), the
median skips its warm-up calls, the best times every call."""
import time

import torch

from transformer_book.timing import Stopwatch, best_seconds, call_seconds, median_seconds


def sleeper(*seconds):
    """A function whose n-th call sleeps ``seconds[n]``; ``calls`` counts them."""
    def fn():
        time.sleep(seconds[min(fn.calls, len(seconds) - 1)])
        fn.calls += 1
    fn.calls = 0
    return fn


def test_the_stopwatch_times_its_block_in_wall_and_cpu_seconds():
    with Stopwatch() as idle:
        time.sleep(0.05)
    assert 0.05 <= idle.seconds < 0.5 and idle.cpu_seconds < 0.03
    with Stopwatch() as busy:                    # 0.05 s of this process's CPU time
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
    assert 0.05 <= busy.cpu_seconds <= busy.seconds + 0.01


def test_on_a_gpu_the_stopwatch_counts_its_blocks_work_not_the_queue_before_it(monkeypatch):
    """torch.cuda.synchronize stands in for a GPU: 0.3 s of earlier work queued as the
    block starts (left out), 0.05 s of the block's own as it ends (counted)."""
    waits = [0.3, 0.05]
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: time.sleep(waits.pop(0)))
    with Stopwatch("cuda") as watch:
        pass
    assert waits == [] and 0.05 <= watch.seconds < 0.3
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: 1 / 0)      # a CPU never waits
    with Stopwatch("cpu"):
        pass


def test_each_call_is_timed_in_order():
    times = call_seconds(sleeper(0.3, 0.0, 0.2), 3)
    assert len(times) == 3 and times[0] >= 0.3 and times[1] < 0.15 and times[2] >= 0.2


def test_the_median_leaves_out_its_warm_up_calls():
    fn = sleeper(0.3, 0.3, 0.0)                  # two slow first calls, then fast ones
    assert median_seconds(fn, repeats=3, warmup=2) < 0.15 and fn.calls == 5
    fn = sleeper(0.3, 0.3, 0.0)
    assert median_seconds(fn, repeats=3, warmup=0) >= 0.3 and fn.calls == 3


def test_the_best_times_every_call_with_no_warm_up():
    fn = sleeper(0.0, 0.3)                       # a fast first call, slow ones after
    assert best_seconds(fn, repeats=3) < 0.15 and fn.calls == 3
