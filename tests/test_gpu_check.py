"""benchmarks/gpu_check.sh (the GPU path's tests and throughput), rehearsed on the CPU."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_gpu_check_dry_run_on_the_cpu(shared_data, tmp_path):
    out = tmp_path / "gpu_check"
    env = {**os.environ, "OUT": str(out), "PY": sys.executable,
           "TRANSFORMER_DATA": str(shared_data), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dry-run"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    log = (out / "log.txt").read_text()
    assert result.returncode == 0, log[-4000:]
    assert "gpu_check: ok" in log
    for name in ("tests", "throughput"):
        assert f"{name}: exit 0" in log, name
    assert (out / "throughput.json").is_file() and (out / "tests.xml").is_file()
