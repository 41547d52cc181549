"""Mutation testing of the modules that compute what a reader reads or trusts: how many
small planted bugs (a ``<`` made ``<=``, a constant changed, a branch dropped) their
targeted tests catch. Python through mutmut, the page's JavaScript through Stryker (its
command runner over ``node --test``); the targets and their tests are pyproject.toml's
``[tool.mutation]``, mutmut's own settings its ``[tool.mutmut]``.

    make mutate                                          # every target (a long run)
    python -m benchmarks.quality.mutation transformer/schedule.py \\
        --label before --record book/results/mutation.json

Each target runs in a copy of the tree under ``.cache/mutation/`` (mutmut's ``mutants/``
and Stryker's sandbox stay there), with only its own tests, so a target costs minutes.
A surviving mutant that changes nothing a caller can observe is listed in
``benchmarks/quality/equivalent_mutants.json`` (the module, the mutated line before and
after, and one line of reason); it counts as equivalent, not as survived. The score is
killed / (killed + survived): a mutant no targeted test reaches counts as survived, an
equivalent one in neither.

The record keeps each target's counts under a label (``--label``: ``before`` and
``after`` a round of new tests), merged into the record already at ``--record``; the
Results page renders it (``transformer.measuring.tables.mutation``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.record import STARTED, add_option
from transformer.measuring.provenance import provenance, write_record

try:
    import tomllib
except ModuleNotFoundError:                     # Python 3.10: tomllib's own source
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
EQUIVALENT = Path(__file__).with_name("equivalent_mutants.json")
WORK = REPO / ".cache" / "mutation"
KILLED, SURVIVED, EQUIV, NO_TESTS, TIMEOUT = "killed", "survived", "equivalent", "no tests", "timeout"


def settings() -> dict:
    """pyproject.toml's ``[tool.mutmut]`` and ``[tool.mutation]``."""
    tool = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    return {"mutmut": tool["mutmut"], **tool["mutation"]}


def copy_tree(dest: Path) -> Path:
    """The tracked and untracked-but-not-ignored files of the checkout as the run starts,
    copied to ``dest`` once (every target starts from this copy: the tests as they were)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file() and not name.startswith("node_modules/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def target_tree(target: str) -> Path:
    """A fresh copy of the run's tree for ``target`` (mutmut's mutants/ and Stryker's
    sandbox go into it)."""
    work = WORK / target.replace("/", "_")
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(WORK / "tree", work, symlinks=True)
    if (REPO / "node_modules").exists():
        (work / "node_modules").symlink_to(REPO / "node_modules")
    return work


def changed_lines(diff: str) -> list[str]:
    """A mutant's diff as its changed lines (``-old``, ``+new``), the key of an equivalent."""
    return [line.rstrip() for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def equivalents(target: str) -> list[dict]:
    return json.loads(EQUIVALENT.read_text(encoding="utf-8")).get(target, [])


def classify(target: str, found: list[tuple[str, str, str]]) -> dict:
    """Counts and survivors of ``found`` (name, status, diff), equivalents set apart."""
    known = [e["lines"] for e in equivalents(target)]
    counts = dict.fromkeys([KILLED, SURVIVED, EQUIV, NO_TESTS, TIMEOUT], 0)
    survivors = []
    for name, status, diff in found:
        if status in (SURVIVED, NO_TESTS) and changed_lines(diff) in known:
            status = EQUIV
        counts[status] = counts.get(status, 0) + 1
        if status in (SURVIVED, NO_TESTS):
            survivors.append({"mutant": name, "status": status, "lines": changed_lines(diff)})
    caught = counts[KILLED] + counts[TIMEOUT]
    scored = caught + counts[SURVIVED] + counts[NO_TESTS]
    return {**counts, "total": len(found), "score": round(caught / scored, 3) if scored else None,
            "survivors": survivors}


# ---- Python: mutmut ---------------------------------------------------------------------
BOOK = "book/"
NO_TEST_STOP = "could not find any test case for any mutant"
MUTMUT_STATUS = {1: KILLED, 3: KILLED, 0: SURVIVED, 5: NO_TESTS, 33: NO_TESTS, 36: TIMEOUT,
                 24: TIMEOUT, -24: TIMEOUT, 152: TIMEOUT, 255: TIMEOUT}


def run_mutmut(target: str, tests: list[str], conf: dict, jobs: int) -> list[tuple[str, str, str]]:
    work = target_tree(target)
    mutated, sources = target, conf["mutmut"]["source_paths"]
    if target.startswith(BOOK):
        # the book's helpers are imported as top-level modules (transformer_book.NAME), and
        # mutmut names a mutant by its file's path (book.transformer_book.NAME), so a test
        # never reached one: mutmut mutates a copy under src/, whose prefix it drops
        mutated = "src/" + target[len(BOOK):]
        shutil.copytree(work / BOOK / "transformer_book", work / "src" / "transformer_book")
        sources = [p for p in sources if not p.startswith(BOOK)] + ["src/transformer_book"]
        # on PYTHONPATH (below) from the start: a folder missing when Python starts is not
        # searched once made, and the tests would import the unmutated copy
        (work / "mutants" / "src").mkdir(parents=True)
    mutmut = {**conf["mutmut"], "source_paths": sources, "only_mutate": [mutated],
              "pytest_add_cli_args_test_selection": tests}
    lines = ["[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in mutmut.items()]
    text = (work / "pyproject.toml").read_text(encoding="utf-8")
    head = text.split("[tool.mutmut]")[0]
    (work / "pyproject.toml").write_text(head + "\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": os.pathsep.join(
        [str(work / "mutants" / "src"), str(work / "mutants" / "book"), str(work / "book"),
         *filter(None, [os.environ.get("PYTHONPATH")])])}
    run = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)],
                         cwd=work, env=env, capture_output=True, text=True)
    # mutmut stops (exit 1) when no selected test reaches any mutant: each is then one
    # that no test reaches, not a failed run
    untested = NO_TEST_STOP in run.stdout
    if run.returncode and not untested:
        sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
        run.check_returncode()
    meta = json.loads((work / "mutants" / f"{mutated}.meta").read_text())["exit_code_by_key"]
    found = []
    for name, code in sorted(meta.items()):
        status = NO_TESTS if untested else MUTMUT_STATUS.get(code, f"exit {code}")
        diff = ""
        if status != KILLED:
            diff = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work,
                                  env=env, capture_output=True, text=True).stdout
        found.append((name, status, diff))
    return found


# ---- JavaScript: Stryker ----------------------------------------------------------------
STRYKER_STATUS = {"Killed": KILLED, "Timeout": TIMEOUT, "Survived": SURVIVED,
                  "NoCoverage": NO_TESTS, "RuntimeError": KILLED, "CompileError": KILLED}


def run_stryker(target: str, tests: list[str], jobs: int) -> list[tuple[str, str, str]]:
    work = target_tree(target)
    report = work / "stryker.json"
    config = {"testRunner": "command", "commandRunner": {"command": "node --test " + " ".join(tests)},
              "mutate": [target], "reporters": ["json"], "jsonReporter": {"fileName": str(report)},
              "concurrency": jobs, "tempDirName": ".stryker-tmp", "cleanTempDir": True}
    (work / "stryker.config.json").write_text(json.dumps(config, indent=1))
    subprocess.run([str(REPO / "node_modules" / ".bin" / "stryker"), "run", "stryker.config.json"],
                   cwd=work, check=True, stdout=subprocess.DEVNULL)
    data = json.loads(report.read_text())
    source = (REPO / target).read_text(encoding="utf-8").splitlines()
    found = []
    for m in data["files"][target]["mutants"]:
        start, end = m["location"]["start"], m["location"]["end"]
        line = source[start["line"] - 1]
        if start["line"] == end["line"]:
            after = line[:start["column"] - 1] + m["replacement"] + line[end["column"] - 1:]
        else:
            after = f"{line[:start['column'] - 1]}{m['replacement']} (to line {end['line']})"
        diff = f"-{line}\n+{after}"
        found.append((f"{target}:{start['line']}:{m['mutatorName']}:{m['id']}",
                      STRYKER_STATUS.get(m["status"], m["status"]), diff))
    return found


def main(argv=None) -> int:
    conf = settings()
    targets = {**conf["python"], **conf["javascript"]}
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="FILE",
                        help=f"modules to mutate (default: all of [tool.mutation]: "
                             f"{', '.join(targets)})")
    parser.add_argument("--label", default="after",
                        help="the run's label in the record (before / after new tests)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    add_option(parser, "mutation")
    args = parser.parse_args(argv)
    chosen = args.targets or list(targets)
    unknown = [t for t in chosen if t not in targets]
    if unknown:
        parser.error(f"not a target of [tool.mutation]: {', '.join(unknown)}")
    path = Path(args.record) if args.record else None
    record = json.loads(path.read_text()) if path and path.exists() else {"modules": {}}
    copy_tree(WORK / "tree")
    for target in chosen:
        tests, started = targets[target], time.monotonic()
        found = (run_mutmut(target, tests, conf, args.jobs) if target.endswith(".py")
                 else run_stryker(target, tests, args.jobs))
        result = classify(target, found)
        result["provenance"] = {**provenance(), "wall_s": round(time.monotonic() - started, 1)}
        result["tests"] = tests
        record["modules"].setdefault(target, {})[args.label] = result
        print(f"{target} ({args.label}): {result[KILLED]} killed, {result[SURVIVED]} survived, "
              f"{result[NO_TESTS]} reached by no test, {result[EQUIV]} equivalent of "
              f"{result['total']}; score {result['score']}")
        for s in result["survivors"]:
            print(f"  {s['status']}: {s['mutant']}\n    " + "\n    ".join(s["lines"]))
        if path:                                # after each target: a long run keeps its part
            record["what"] = ("mutation testing: of each module's planted bugs, how many its "
                              "targeted tests catch (mutmut for Python, Stryker for the page's "
                              "JavaScript)")
            record["provenance"] = {**provenance(),
                                    "wall_s": round(time.monotonic() - STARTED, 1)}
            write_record(path, record)
            print(f"record written: {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
