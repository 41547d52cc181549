"""benchmarks/gpu/table3.sh (Table 3 at the GPU budget), rehearsed on the CPU:
the smoke budget, the base at two seeds, a row of group A, two rows at once."""
import json

from helpers import gpu_dry_run


def test_gpu_table3_dry_run_on_the_cpu(shared_data, tmp_path):
    out = tmp_path / "gpu_table3"
    result, log = gpu_dry_run("table3.sh", out, shared_data, "--budget-min", "5", timeout=300)
    assert result.returncode == 0, log[-4000:]
    assert "gpu_table3: ok" in log and "3 results in" in log
    assert "--jobs 2" in log and "--time-budget-min 5" in log      # the options reach ablate
    data = json.loads((out / "table3_gpu.json").read_text())
    assert sorted((r["row"], r["seed"]) for r in data["rows"]) == [("A-h1", 1), ("base", 1),
                                                                   ("base", 2)]
    prov = data["provenance"]
    assert prov["budget"] == "smoke" and prov["shared"]["updates"] == 3 and prov["jobs"] == 2
    assert prov["shared"]["model"]["d_model"] == 32 and prov["vocabulary"].startswith("sha256:")
    assert all(r["updates"] == 3 and r["dev_ppl"] > 1 for r in data["rows"])
