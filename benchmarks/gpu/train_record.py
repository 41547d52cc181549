"""The committed record of benchmarks/gpu/train.sh, made from the files it leaves in OUT.

    python -m benchmarks.gpu.train_record OUT --out book/results/gpu_train.json

Reads OUT/train.json (the base run and its test scores), OUT/torchrun.json (the
kill-and-resume check) and OUT/notebooks.json (chapters 7 and 10 through nbclient),
whichever are there, each with its provenance, and writes one record holding them. A
record already at --out keeps the parts this call does not bring, so a step run again
alone (``train.sh --steps 3``, into another OUT) replaces only its own part; name several
OUT folders to gather their parts at once. Prints one line per part.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transformer.measuring.provenance import write_record

PARTS = {"train": "train.json", "torchrun": "torchrun.json", "notebooks": "notebooks.json"}
SOURCE = "bash benchmarks/gpu/train.sh (issue 33), on one GPU"


def summary(name: str, part: dict) -> str:
    """One line about a part of the record."""
    where = part["provenance"].get("gpu") or part["provenance"].get("cpu")
    if name == "train":
        scores = ", ".join(f"{corpus} BLEU {s['bleu']:.2f} chrF {s['chrf']:.2f}"
                           for corpus, s in part["scores"].items())
        return (f"train: {part['updates']} updates in {part['train_seconds']} s, "
                f"{part['tokens_per_s']['median']} target tokens/s; {scores} ({where})")
    if name == "torchrun":
        return (f"torchrun: {'ok' if part['ok'] else 'FAILED'} on {part['backend']}, killed "
                f"at update {part['killed_at_update']}, resumed from {part['resumed_from']} "
                f"({where})")
    return "notebooks: " + ", ".join(f"{n['notebook']} {'ok' if n['ok'] else 'FAILED'} in "
                                     f"{n['seconds']} s" for n in part["notebooks"]) + f" ({where})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", type=Path, help="train.sh's OUT folder(s)")
    p.add_argument("--out", type=Path, required=True, help="the record to write or update")
    args = p.parse_args(argv)
    record = json.loads(args.out.read_text()) if args.out.exists() else {"source": SOURCE}
    found = {}
    for folder in args.folders:
        for name, filename in PARTS.items():
            if (folder / filename).is_file():
                found[name] = json.loads((folder / filename).read_text())
    if not found:
        print(f"no {', '.join(PARTS.values())} in {', '.join(map(str, args.folders))}",
              file=sys.stderr)
        return 1
    record.update(found)
    write_record(args.out, record)
    for name in PARTS:
        if name in found:
            print(summary(name, found[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
