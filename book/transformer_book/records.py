"""The result records in ``book/results/``: what one holds, how to load it, where its
figures come from.

A record is a JSON object with a ``provenance`` object. One a command wrote holds the
commit, the command, the CPU, torch and the date (``transformer.provenance``); one
transcribed from the experiment notes says where from in ``transcribed`` and holds the same
fields as the notes give them; a figure published elsewhere holds ``published`` and
``date``. A record of several runs holds them under ``runs`` (labelled), ``sets`` or
``entries``, each with its own provenance.
"""
from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPO = RESULTS.parents[1]
MEASURED = ("commit", "command", "cpu", "torch", "date")


def provenance_problems(record: dict) -> list[str]:
    """What the record's provenance lacks; empty when it is complete."""
    if isinstance(record.get("runs"), dict):
        # several labelled runs of one command (e.g. before and after), each its own
        if not record["runs"]:
            return ["runs: none"]
        if "provenance" in record:
            return ["provenance beside runs (each run holds its own)"]
        return [f"run {label}: {p}" for label, run in record["runs"].items()
                for p in provenance_problems(run)]
    if isinstance(record.get("sets"), list):
        # several sets of runs of one command, each with its own provenance
        if not record["sets"]:
            return ["sets: none"]
        return [f"set {i + 1}: {p}" for i, one in enumerate(record["sets"])
                for p in provenance_problems(one)]
    prov = record.get("provenance")
    if not isinstance(prov, dict) or not prov:
        return ["no provenance"]
    if "entries" in record:          # several runs, each with its own provenance
        if "transcribed" not in prov:
            return ["provenance.transcribed (where its entries come from)"]
        return [f"entry {i}: {p}" for i, e in enumerate(record["entries"])
                for p in provenance_problems(e)]
    if "published" in prov:          # a published figure, not measured here
        return [] if prov.get("date") else ["provenance.date"]
    fields = dict(prov)
    fields.setdefault("command", prov.get("commands"))
    fields.setdefault("date", prov.get("finished"))
    rows = record.get("rows") or []
    if "commit" not in fields and rows and all(r.get("commit") for r in rows):
        fields["commit"] = "per row"
    return [f"provenance.{k}" for k in MEASURED if not fields.get(k)]


def load(name: str) -> dict:
    """The record ``book/results/NAME.json``; raises if it is missing or lacks provenance."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such result record")
    record = json.loads(path.read_text())
    problems = provenance_problems(record)
    if problems:
        raise ValueError(f"{path}: incomplete provenance: {', '.join(problems)}")
    return record


def provenance_text(record: dict) -> str:
    """One line: where the record's figures come from."""
    if "sets" in record:
        return " ".join(f"Set {i + 1}: {provenance_text(one)}"
                        for i, one in enumerate(record["sets"]))
    if "provenance" not in record and "runs" in record:
        return " ".join(f"{label.capitalize()}: {provenance_text(run)}"
                        for label, run in record["runs"].items())
    prov = record["provenance"]
    if "entries" in record:
        return f"Each run's provenance is in its row; *{prov['transcribed']}*."
    if "published" in prov:
        return f"Source: {prov['published']} ({prov['date']})."
    command = prov.get("command") or "; ".join(prov.get("commands", []))
    commit = prov.get("commit") or "per row: " + ", ".join(
        sorted({r["commit"] for r in record.get("rows", [])}))
    date = prov.get("date") or f"{prov.get('started')} to {prov.get('finished')}"
    extra = "".join(f", {k} {prov[k]}" for k in ("precision", "allocator", "wall", "wall_s")
                    if k in prov)
    text = (f"`{command}` at commit {commit}; {prov['cpu']}; torch {prov['torch']}; "
            f"{date}{extra}.")
    if "transcribed" in prov:
        text += f" *{prov['transcribed'][0].upper()}{prov['transcribed'][1:]}.*"
    return text
