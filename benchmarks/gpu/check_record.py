"""The record of benchmarks/gpu/check.sh, made from the files it leaves in its OUT folder.

    python -m benchmarks.gpu.check_record OUT --out book/results/gpu_step.json

Reads OUT/tests.xml (pytest's junit report of the device-aware tests) and
OUT/throughput.json (``benchmarks.gpu.throughput``, with its provenance) and writes one
record: the provenance, the tests' counts (and the names of any failed), and the
throughput table.
"""
from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from transformer.measuring.provenance import write_record


def test_outcome(xml_path: Path) -> dict:
    """Counts of a junit report, split by the device a test ran on ([cpu-...], [cuda-...])."""
    outcome = {"passed": 0, "failed": 0, "skipped": 0, "cuda_passed": 0, "failures": []}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome["failed"] += 1
            outcome["failures"].append(name)
        elif case.find("skipped") is not None:
            outcome["skipped"] += 1
        else:
            outcome["passed"] += 1
            outcome["cuda_passed"] += "[cuda" in name
    return outcome


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", type=Path, help="check.sh's OUT folder")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    throughput = json.loads((args.folder / "throughput.json").read_text())
    inner = throughput.pop("provenance")
    record = {"provenance": {**inner, "command": "bash benchmarks/gpu/check.sh",
                             "throughput_command": inner["command"]},
              "tests": test_outcome(args.folder / "tests.xml"), **throughput}
    write_record(args.out, record)
    print(json.dumps(record["tests"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
