"""The result records in ``book/results/``: what one holds, how to load it, where its
figures come from.

A record is a JSON object with a ``provenance`` object. One a command wrote holds the
commit, the command, the CPU, torch and the date (``transformer.measuring.provenance``); one
transcribed from the experiment notes says where from in ``transcribed`` and holds the same
fields as the notes give them; a figure published elsewhere holds ``published`` and
``date``. A record of several runs holds them under ``runs`` (labelled), ``sets`` or
``entries``, each with its own provenance.

Where the records come from (:func:`path`): a checkout's ``book/results/`` (:data:`RESULTS`)
where there is one; elsewhere (Colab, a ``pip install``, which install the package but not
the records) the repository's copy, fetched once per record into :func:`cache_dir`
(``~/.cache/transformer/records``; delete it to fetch again) from :func:`source`:
``$TRANSFORMER_RECORDS_URL`` (a stand-in for the host, which only the tests set), else the
repository's raw files on its branch.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]          # a checkout's root
RESULTS = REPO / "book" / "results"
MEASURED = ("commit", "command", "cpu", "torch", "date")
# _config.yml's repository (url and branch); tests/test_results.py checks that they agree
REPOSITORY = "https://github.com/attention-book/transformer"
BRANCH = "main"
URL_ENV = "TRANSFORMER_RECORDS_URL"


def source() -> str:
    """The base URL that the records lie under (as ``book/results/NAME.json``) where there
    is no checkout: ``$TRANSFORMER_RECORDS_URL``, else the repository's raw files."""
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    return (os.environ.get(URL_ENV)
            or f"https://raw.githubusercontent.com/{owner_repo}/{BRANCH}").rstrip("/")


def cache_dir() -> Path:
    """Where fetched records are kept: one folder per :func:`source`."""
    key = hashlib.sha256(source().encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "transformer" / "records" / key


def path(name: str, timeout: float = 30.0) -> Path | None:
    """The file of record ``name``: the checkout's (:data:`RESULTS`) where there is one,
    else the repository's, fetched once into :func:`cache_dir`; None where no record of
    that name exists. Raises ConnectionError (one line) where the host cannot be reached."""
    if RESULTS.is_dir():
        local = RESULTS / f"{name}.json"
        return local if local.is_file() else None
    cached = cache_dir() / f"{name}.json"
    if cached.is_file():
        return cached
    url = f"{source()}/book/results/{name}.json"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise ConnectionError(f"result record {name}: could not download {url}: HTTP "
                              f"{e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise ConnectionError(f"result record {name}: could not download {url}: "
                              f"{getattr(e, 'reason', None) or e}") from None
    try:
        json.loads(data)
    except ValueError as e:
        raise ValueError(f"result record {name}: {url} is not JSON ({e}; not kept)") from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{name}.{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(cached)
    return cached


def exists(name: str) -> bool:
    """Whether a record ``name`` exists (see :func:`path`)."""
    return path(name) is not None


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


# what the readers of a record need besides its provenance: name -> check -> problems
def _table3_problems(record: dict) -> list[str]:
    rows = record.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return ["rows (a list of the rows' runs)"]
    if not any(r.get("row") == "base" for r in rows):
        return ["the base row (every row is measured against it)"]
    return []


CONTENT = {"table3": _table3_problems, "table3_gpu": _table3_problems}


def content_problems(name: str, record: dict) -> list[str]:
    """What record ``name`` lacks that its readers need (:data:`CONTENT`); empty if none."""
    check = CONTENT.get(name)
    return check(record) if check else []


def load(name: str) -> dict:
    """The record ``book/results/NAME.json`` (see :func:`path`); raises, naming the file, if
    it is missing, is not a JSON object (a record cut short), lacks provenance or lacks
    what its readers need (:func:`content_problems`: a Table 3 record its base row)."""
    found = path(name)
    if found is None:
        where = RESULTS if RESULTS.is_dir() else f"{source()}/book/results"
        raise FileNotFoundError(f"{where}/{name}.json: no such result record")
    try:
        record = json.loads(found.read_text(encoding="utf-8"))
    except ValueError as e:                      # cut short, or not JSON at all
        raise ValueError(f"{found}: not a JSON result record ({e})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{found}: a JSON {type(record).__name__}, not a result record's "
                         f"object")
    problems = provenance_problems(record)
    if problems:
        raise ValueError(f"{found}: incomplete provenance: {', '.join(problems)}")
    problems = content_problems(name, record)
    if problems:
        raise ValueError(f"{found}: lacks {', '.join(problems)}")
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
