"""Every process a test starts ends with the test (tests/processes.py, tests/conftest.py)."""
import subprocess
from pathlib import Path

import pytest

import processes
from helpers import wait_until


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def ended(pid: int) -> bool:
    """Whether ``pid`` ends (a SIGKILL lands asynchronously): waits for it (helpers.wait_until,
    which fails only if it never does)."""
    return wait_until(lambda: not alive(pid), f"process {pid} ending", every=0.01)


def sleepers(marker: str) -> list[int]:
    """Live processes whose command line is ``sleep MARKER``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == \
                    f"sleep\0{marker}\0".encode() and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.skipif(not processes.adopt_orphans(), reason="no child subreaper (not Linux)")
def test_an_orphaned_grandchild_is_adopted_and_ended_after_the_test():
    before = processes.children()
    # the shell starts a sleep in the background and exits: the sleep is an orphan
    shell = subprocess.run(["sh", "-c", "sleep 3001 >/dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True, timeout=600)
    orphan = int(shell.stdout)
    assert orphan in processes.children() and alive(orphan)      # adopted, not init's
    assert orphan in processes.end_new_processes(before)
    assert ended(orphan)


def test_run_ends_what_its_command_left_behind():
    done = processes.run(["sh", "-c", "sleep 3002 >/dev/null 2>&1 & echo $!"], timeout=600)
    assert done.returncode == 0 and ended(int(done.stdout))


def test_run_ends_the_whole_group_on_a_timeout():
    # the limit is what ends it here; on a machine too busy to start the sleep within it,
    # try again with a longer one (what is checked does not depend on the speed)
    for limit in (2, 8, 32, 128):
        with pytest.raises(subprocess.TimeoutExpired) as exc:
            processes.run(["sh", "-c", "sleep 3003 & echo started; wait"], timeout=limit)
        if "started" in (exc.value.stdout or ""):
            break
    else:
        pytest.fail("the shell never started its sleep")
    assert all(ended(pid) for pid in sleepers("3003"))
