"""The test suite's own rules: every test that needs the built site is marked ``browser``
(tests/conftest.py marks it from the fixtures it asks for), so ``make test-unit``, which runs
``-m "not browser"``, runs every other test and builds no book; and under CI missing corpora
fail instead of skipping."""
import os
import subprocess
import sys
from pathlib import Path

from helpers import SITE_FIXTURES

REPO = Path(__file__).resolve().parents[1]

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
