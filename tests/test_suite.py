"""The test suite's own rules: every test that needs the built site is marked ``browser``
(tests/conftest.py marks it from the fixtures it asks for), so ``make test-unit``, which runs
``-m "not browser"``, runs every other test and builds no book; under CI missing corpora
fail instead of skipping, and the chapters that read them are named; and no test bounds a
time (reads a clock or asserts a duration below or above anything but 0), but where ALLOWED
says why."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SITE_FIXTURES

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

# A new test file, written by someone who never heard of the marker.
PLANTED = '''
import pytest


@pytest.fixture
def a_chapter(open_page):                  # the site through a fixture of its own
    return open_page("book/01_introduction.html")


def test_reads_the_built_site(site_dir):
    pass


def test_opens_a_chapter(a_chapter):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_needs_no_site(n, tmp_path):
    pass
'''


def collected(path: Path, selection: str) -> list[str]:
    """The ids ``pytest --collect-only -m selection`` collects from ``path`` with the suite's
    conftest.py and pytest settings (it builds nothing: collection runs no fixture)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-c", str(REPO / "pyproject.toml"), "-p", "conftest", "-m", selection, str(path)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
        capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]  # 5: none
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


def test_a_new_test_that_needs_the_site_is_marked_browser_without_being_told(tmp_path):
    planted = tmp_path / "test_planted.py"
    planted.write_text(PLANTED)
    assert collected(planted, "browser") == ["test_reads_the_built_site", "test_opens_a_chapter"]
    assert collected(planted, "not browser") == ["test_needs_no_site[1]", "test_needs_no_site[2]"]


def test_every_test_of_this_run_that_needs_the_site_is_marked_browser(request):
    """In this session's tests (under ``-m "not browser"``: none asks for the site)."""
    unmarked = [item.nodeid for item in request.session.items
                if SITE_FIXTURES & set(getattr(item, "fixturenames", ()))
                and not item.get_closest_marker("browser")]
    assert not unmarked, unmarked


def test_under_ci_missing_corpora_fail_instead_of_skipping(tmp_path):
    env = {**os.environ, "CI": "true", "TRANSFORMER_TEST_CORPORA": str(tmp_path / "nowhere"),
           "TRANSFORMER_MULTI30K_URL": "http://127.0.0.1:9/unreachable"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_trainer.py::test_uninterrupted_log_has_each_update_once",
         "tests/test_data.py::test_multi30k_sizes[valid-1014]"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 1 and "skipped" not in summary, result.stdout[-2000:]
    assert "1 failed" in summary and "1 error" in summary, summary
    assert "offline corpora not found" in result.stdout



def test_the_chapters_that_read_the_corpora_are_named():
    """tests/conftest.py skips the chapters that read the corpora, named by notebook in
    helpers.READS_CORPORA, where the corpora cannot be had: each name is a chapter, and each chapter
    whose code loads a corpus, trains or reuses the book's run, or runs the ablation is
    named."""
    from helpers import READS_CORPORA
    readers = ("load_corpus(", "cached_run(", '"ablate"')
    chapters = {path.stem: json.loads(path.read_text(encoding="utf-8"))["cells"]
                for path in (REPO / "book").glob("*.ipynb")}
    reading = {stem for stem, cells in chapters.items() if any(
        reader in "".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"
        for reader in readers)}
    assert READS_CORPORA <= set(chapters), READS_CORPORA - set(chapters)
    assert reading == READS_CORPORA, (reading - READS_CORPORA, READS_CORPORA - reading)

# ------------------------------------------------------------ no wall-clock bounds
# A test asserts what a timing was meant to protect, checked structurally (the search runs
# in a Worker: a spy; a long map is drawn in pieces of bounded work), never how long
# something took: on a machine shared with other work a bound fails for reasons that are
# not the code's (a frame gap of 367 ms beside a control of 33 ms). Timings are the
# benchmarks' (benchmarks/, which print and record them). Two rules over tests/:
#
# * CLOCK: no test reads a clock (Python's time.*() clocks, the page's performance.now(),
#   Date.now(), performance.timeOrigin, long-task observers), but where ALLOWED says why;
# * BOUND: no assert orders a duration-like value (a name or key like seconds, ms, *_s,
#   elapsed, gap, duration, wall, per_s, throughput, latency, deadline...) against
#   anything but 0 (``tokens_per_s > 0``: a figure was recorded, not how fast it is).
CLOCK = re.compile(r"\btime\.(?:time|perf_counter|monotonic|process_time|thread_time|"
                   r"clock_gettime)(?:_ns)?\(|\bperformance\.now\(|\bDate\.now\(|"
                   r"\bperformance\.timeOrigin\b|['\"]longtask['\"]|"
                   r"\bdatetime\.(?:datetime\.)?(?:now|utcnow)\(")
DURATION = re.compile(r"(?:^|_)(?:seconds?|secs?|ms|ns|elapsed|durations?|gaps?|wall|per_s|"
                      r"per_second|throughput|fps|latency|deadline|times?|took|long_?tasks?)"
                      r"(?:$|_)|(?:wall|ready|cli|train|decode|run|load|cpu|step|total)_s$",
                      re.IGNORECASE)
# (file under tests/, a piece of the line): why that line may read a clock or bound a time
ALLOWED = {
    ("helpers.py", "hung = time.monotonic() + HANG_S"):
        "wait_until's hang guard: a wait for an event gives up after HANG_S (600 s) so that "
        "a test whose event never comes fails instead of hanging the run; no speed is asserted",
    ("helpers.py", "assert time.monotonic() < hung"):
        "the same hang guard",
}
# files the rules skip as a whole: why
ALLOWED_FILES = {"test_suite.py": "the rules' own file: it names the clocks, and plants "
                                  "bounds to see the rules catch them"}


def _allowed(name: str, line: str) -> bool:
    return any(name == where and piece in line for where, piece in ALLOWED)


def _names(node):
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 40:
            yield n.value


def wall_clock_rules_broken(name: str, text: str) -> list[str]:
    """Each line of ``text`` (a file ``name`` under tests/) that breaks CLOCK or BOUND and
    is not ALLOWED, as ``name:line: text``."""
    broken, lines = [], text.splitlines()
    for number, line in enumerate(lines, 1):
        if CLOCK.search(line) and not _allowed(name, line):
            broken.append(f"{name}:{number}: reads a clock: {line.strip()}")
    if not name.endswith(".py"):
        return broken
    zero = lambda node: isinstance(node, ast.Constant) and node.value == 0  # noqa: E731
    # a set compared with a set (``{"train_seconds", ...} <= set(record)``) asks which
    # fields are there, not how long anything took
    a_set = lambda node: isinstance(node, (ast.Set, ast.SetComp)) or (         # noqa: E731
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "set")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Assert):
            continue
        for compare in (c for c in ast.walk(node.test) if isinstance(c, ast.Compare)):
            operands = [compare.left, *compare.comparators]
            for op, left, right in zip(compare.ops, operands, operands[1:]):
                if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and not (
                        zero(left) or zero(right) or a_set(left) or a_set(right)) and any(
                        DURATION.search(n) for side in (left, right) for n in _names(side)) \
                        and not _allowed(name, lines[compare.lineno - 1]):
                    broken.append(f"{name}:{compare.lineno}: bounds a duration: "
                                  f"{ast.get_source_segment(text, compare)}")
    return broken


def test_no_test_asserts_a_wall_clock_bound():
    broken, texts = [], {}
    for path in sorted(TESTS.rglob("*")):
        if path.suffix not in (".py", ".js", ".mjs") or "node_modules" in path.parts:
            continue
        name = path.relative_to(TESTS).as_posix()
        texts[name] = path.read_text(encoding="utf-8")
        if name not in ALLOWED_FILES:
            broken += wall_clock_rules_broken(name, texts[name])
    assert not broken, ("a test bounds a time (check what the timing protects instead, and "
                        "time it in a benchmark):\n" + "\n".join(broken))
    stale = [key for key in ALLOWED if key[1] not in texts.get(key[0], "")]
    assert not stale and set(ALLOWED_FILES) <= set(texts), (stale, ALLOWED_FILES)


@pytest.mark.parametrize("planted", [
    "def test_fast():\n    start = time.perf_counter()\n    work()\n"
    "    assert time.perf_counter() - start < 1.0\n",
    "def test_fast():\n    with Stopwatch() as watch:\n        work()\n    assert watch.seconds < 2\n",
    "def test_fast(record):\n    assert record['tokens_per_s'] >= 1000\n",
    "def test_smooth(page):\n    gaps = page.evaluate(FRAMES)\n    assert max(gaps) <= 100\n",
    "FRAMES = '() => performance.now()'\n",
    "def test_quick(r):\n    assert r['reached']['seconds'] <= 120\n",
])
def test_a_planted_wall_clock_bound_is_caught(planted):
    assert wall_clock_rules_broken("test_planted.py", planted)


def test_what_is_not_a_wall_clock_bound_passes():
    fine = ("def test_recorded(record, r):\n    assert record['wall_s'] > 0 and r['tokens_per_s'] > 0\n"
            "    assert r['reached']['step'] <= 300 and len(r['losses']) >= 5\n")
    assert wall_clock_rules_broken("test_fine.py", fine) == []
