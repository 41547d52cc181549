"""benchmarks/gpu/check.sh (the GPU path's tests and throughput), rehearsed on the CPU,
its options reaching its steps, and benchmarks/gpu/check_record.py on what it leaves."""
import json
import subprocess
import sys
from pathlib import Path

from helpers import gpu_dry_run

REPO = Path(__file__).resolve().parents[1]


def test_gpu_check_dry_run_on_the_cpu(shared_data, tmp_path):
    out = tmp_path / "gpu_check"
    result, log = gpu_dry_run("check.sh", out, shared_data, "--budget-min", "5",
                              "--limit-min", "9")
    assert result.returncode == 0, log[-4000:]
    assert "gpu_check: ok" in log
    for name in ("tests", "throughput"):
        assert f"{name}: exit 0" in log, name
    assert (out / "throughput.json").is_file() and (out / "tests.xml").is_file()
    assert "(steps: 1 2; limit a step: 9 min)" in log            # --limit-min reaches `step`
    throughput = json.loads((out / "throughput.json").read_text())
    assert throughput["settings"]["budget_min"] == 5               # --budget-min reaches step 2
    assert "-m benchmarks.gpu.throughput --dry-run --budget-min 5" in \
        throughput["provenance"]["command"]

    record = tmp_path / "gpu_step.json"
    subprocess.run([sys.executable, "-m", "benchmarks.gpu.check_record", str(out), "--out",
                    str(record)], cwd=REPO, check=True, capture_output=True, timeout=60)
    data = json.loads(record.read_text())
    assert data["provenance"]["command"] == "bash benchmarks/gpu/check.sh"
    assert data["tests"]["passed"] > 0 and data["tests"]["failed"] == 0
    assert data["results"] and data["settings"]["budget_min"] == 5
