"""The test suite's own rules: under CI missing corpora fail instead of skipping."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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
