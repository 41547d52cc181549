"""The publishing workflow and the Makefile: what a fresh machine's first build depends on."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_workflow_caches_the_books_runs_and_gives_the_build_its_time():
    text = (REPO / ".github" / "workflows" / "book.yml").read_text()
    assert re.search(r"path: ~/.cache/transformer/runs\b", text)      # runs.cache_root()
    assert "actions/cache@" in text and "restore-keys:" in text
    assert int(re.search(r"timeout-minutes: (\d+)", text).group(1)) >= 60


def test_jemalloc_is_looked_up_when_the_build_runs_not_when_make_starts(tmp_path):
    """A recipe that creates a file before BOOK_ENV is expanded must see it: the Makefile
    resolves JEMALLOC lazily (after `make setup` installed it on a fresh machine)."""
    probe = tmp_path / "probe.mk"
    fake = tmp_path / "libjemalloc.so.2"
    text = (REPO / "Makefile").read_text().replace(
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", str(fake))
    probe.write_text(text + f"\nprobe-install:\n\ttouch {fake}\n"
                     "probe: probe-install\n\t@echo $(BOOK_ENV)\n")
    out = subprocess.run(["make", "-s", "-f", str(probe), "probe"], cwd=REPO,
                         capture_output=True, text=True, timeout=60).stdout
    assert f"LD_PRELOAD={fake}" in out, out
