"""transformer/training/threads.py: the trainer's CPU threads give way to other work."""
import pytest
import torch

from helpers import toy_config
from transformer.training import threads as module
from transformer.training.threads import ThreadGovernor


class Clock:
    """Stand-ins for the machine's and this process's CPU seconds and the wall clock."""

    def __init__(self, monkeypatch):
        self.wall = self.machine = self.own = 0.0
        monkeypatch.setattr(module.time, "monotonic", lambda: self.wall)
        monkeypatch.setattr(module, "_machine_busy_seconds", lambda: self.machine)
        monkeypatch.setattr(module, "_own_seconds", lambda: self.own)

    def run(self, seconds, own_cores, other_cores):
        self.wall += seconds
        self.own += seconds * own_cores
        self.machine += seconds * (own_cores + other_cores)


def test_a_busy_neighbour_takes_a_thread_and_gives_it_back(monkeypatch):
    clock = Clock(monkeypatch)
    governor = ThreadGovernor(most=2, every_s=3.0, cores=2)
    assert governor.tick() is None and torch.get_num_threads() == 2      # the first look
    clock.run(3, own_cores=2.0, other_cores=0.1)          # our own spinning is not "other"
    assert governor.tick() is None and governor.threads == 2
    clock.run(3, own_cores=1.0, other_cores=1.0)          # a busy process beside us
    assert governor.tick() == 1 and torch.get_num_threads() == 1
    clock.run(1, own_cores=1.0, other_cores=0.0)
    assert governor.tick() is None                        # not yet time to look again
    clock.run(3, own_cores=1.0, other_cores=0.0)          # it has gone
    assert governor.tick() == 2 and torch.get_num_threads() == 2


def test_never_below_one_nor_above_the_runs_threads(monkeypatch):
    clock = Clock(monkeypatch)
    governor = ThreadGovernor(most=3, every_s=1.0, cores=4)
    governor.tick()
    clock.run(2, own_cores=1.0, other_cores=4.0)          # an overloaded machine
    assert governor.tick() == 1
    clock.run(2, own_cores=1.0, other_cores=0.0)          # four free cores, at most three
    assert governor.tick() == 3


def test_the_trainer_adapts_on_a_cpu_unless_told_not_to():
    from transformer.model import Transformer
    from transformer.training.config import TrainConfig
    from transformer.training.loop import Trainer
    model = Transformer(toy_config())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    make = lambda **kw: Trainer(model, optimizer, [], cfg=TrainConfig(progress=False, **kw))  # noqa: E731
    assert make(threads=2).governor.most == 2
    assert make(threads=2, adapt_threads=False).governor is None
    assert make(threads=1).governor is None               # nothing to give way with


@pytest.mark.parametrize("other_cores,threads", [(0.3, 2), (0.49, 2), (0.6, 1), (0.9, 1),
                                                  (1.4, 1), (1.6, 1)])
def test_a_neighbour_using_part_of_a_core_counts_to_the_nearest_core(monkeypatch,
                                                                     other_cores, threads):
    # a browser tab at 0.7 of a core leaves one core free on two, not two: the cores free
    # are the machine's less the others' use rounded to the nearest core
    clock = Clock(monkeypatch)
    governor = ThreadGovernor(most=2, every_s=3.0, cores=2)
    governor.tick()
    clock.run(3, own_cores=2.0 - other_cores, other_cores=other_cores)
    governor.tick()
    assert governor.threads == threads


def test_fit_leaves_the_runs_thread_count_not_the_governors_last(monkeypatch):
    # a busy machine made the governor drop to one thread during the run: once fit()
    # returns, the process (a notebook's kernel, a test session) has the run's count back
    from helpers import toy_trainer
    from transformer.training.config import TrainConfig
    trainer = toy_trainer(TrainConfig(threads=2, max_updates=2, max_tokens=400,
                                      update_tokens=400, progress=False))
    governor = trainer.governor
    assert governor is not None and governor.most == 2

    def busy_spell():
        # as ThreadGovernor.tick lowers the count: its own record (governor.threads) and
        # torch's, so a fit() that restored the governor's last count would leave 1
        governor.threads = 1
        torch.set_num_threads(1)
        return 1

    monkeypatch.setattr(governor, "tick", busy_spell)
    trainer.fit()
    assert governor.threads == 1                          # the spell happened, and lasted
    assert torch.get_num_threads() == trainer.cfg.threads == 2   # the run's count, not 1


# ------------------------------------------------------------ what the governor reads
class ProcStat:
    """A stand-in for ``open("/proc/stat")`` in the module: its first line is ``line``."""

    def __init__(self, line):
        self.line = line

    def __call__(self, path, *args, **kwargs):
        assert path == "/proc/stat"
        import io
        return io.StringIO(self.line + "\ncpu0 9 9 9 9 9 9 9 9 9 9\n")


@pytest.mark.parametrize("line,ticks", [
    # user nice system idle iowait irq softirq steal guest guest_nice: the busy columns
    # are user, system, irq, softirq and steal (100 + 200 + 7 + 3 + 10), not nice (50),
    # idle or iowait, nor guest time (already inside user)
    ("cpu  100 50 200 1000 30 7 3 10 400 500", 320),
    ("cpu  100 50 200 1000 30 7 3 10", 320),
    ("cpu  100 50 200 1000", 300),                  # an old kernel: the rest count as 0
])
def test_the_machine_busy_seconds_are_its_busy_columns_less_nice(monkeypatch, line, ticks):
    import os
    monkeypatch.setattr(module, "open", ProcStat(line), raising=False)
    assert module._machine_busy_seconds() == pytest.approx(ticks / os.sysconf("SC_CLK_TCK"))


@pytest.mark.parametrize("line", ["cpu  100 fifty 200 1000", "intr 5 x"])
def test_an_unreadable_proc_stat_gives_none(monkeypatch, line):
    monkeypatch.setattr(module, "open", ProcStat(line), raising=False)
    assert module._machine_busy_seconds() is None


def test_no_proc_stat_gives_none_and_the_governor_keeps_its_threads(monkeypatch):
    def missing(path, *args, **kwargs):
        raise FileNotFoundError(path)
    monkeypatch.setattr(module, "open", missing, raising=False)
    assert module._machine_busy_seconds() is None
    governor = ThreadGovernor(most=2, every_s=0.0, cores=2)
    assert governor.tick() is None and governor.tick() is None and governor.threads == 2


def test_the_own_seconds_are_user_and_system_time(monkeypatch):
    import os
    fake = os.times_result((1.5, 0.25, 7.0, 8.0, 9.0))   # user, system, children's, elapsed
    monkeypatch.setattr(module.os, "times", lambda: fake)
    assert module._own_seconds() == 1.75


def test_by_default_it_uses_every_core_and_looks_every_three_seconds(monkeypatch):
    clock = Clock(monkeypatch)
    monkeypatch.setattr(module.os, "cpu_count", lambda: 6)
    governor = ThreadGovernor(most=4)
    assert governor.cores == 6 and governor.threads == 4 and torch.get_num_threads() == 4
    governor.tick()
    clock.run(2.9, own_cores=1.0, other_cores=5.0)
    assert governor.tick() is None                        # 2.9 s: not yet
    clock.run(0.1, own_cores=1.0, other_cores=5.0)        # 3 s: it looks, 6 - 5 = 1 core free
    assert governor.tick() == 1
    monkeypatch.setattr(module.os, "cpu_count", lambda: None)
    assert ThreadGovernor(most=2).cores == 1              # unknown: one core
    assert ThreadGovernor(most=2, cores=3).cores == 3


def test_the_first_look_only_takes_a_reading(monkeypatch):
    clock = Clock(monkeypatch)
    clock.run(100, own_cores=0.0, other_cores=2.0)        # busy before the run began
    governor = ThreadGovernor(most=2, every_s=3.0, cores=2)
    assert governor.tick() is None and governor.threads == 2
    clock.run(3, own_cores=2.0, other_cores=0.0)          # from then on, idle
    assert governor.tick() is None and governor.threads == 2


def test_free_cores_are_the_machines_less_the_others_rounded():
    governor = ThreadGovernor(most=4, cores=4)
    assert governor.free_cores(3.2, 2.0) == 2             # 1.6 cores busy: 2
    assert governor.free_cores(5.4, 2.0) == 1             # 2.7 cores busy
    assert governor.free_cores(0.4, 0.5) == 3             # 0.8 of a core busy: one
    assert governor.free_cores(-3.0, 1.0) == 4            # a negative reading counts as none
