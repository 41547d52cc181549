"""The result records in book/results/ and the docs generated from them.

Every record the README, benchmarks/README.md or the Results page quotes exists and
carries its provenance; the generated blocks of the two READMEs match the records; the
README's Python block runs; and the README names no machine, commit or date.
"""
import copy
import json
import re
from pathlib import Path

import pytest

from transformer.measuring import blocks, records, registry, tables
from transformer_book import book_tables

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


@pytest.mark.parametrize("name", tables.QUOTED)
def test_quoted_records_exist_with_provenance(name):
    record = records.load(name)                       # raises if missing or incomplete
    assert records.provenance_text(record)


def test_every_committed_record_has_provenance():
    for path in sorted(records.RESULTS.glob("*.json")):
        record = json.loads(path.read_text())
        assert not records.provenance_problems(record), path.name


def test_a_record_without_provenance_is_refused(tmp_path, monkeypatch):
    good = json.loads((records.RESULTS / "compile_cpu.json").read_text())
    assert not records.provenance_problems(good)
    for field in ("commit", "command", "cpu", "torch", "date"):
        bad = copy.deepcopy(good)
        del bad["provenance"][field]
        assert records.provenance_problems(bad) == [f"provenance.{field}"]
    assert records.provenance_problems({"figure": 1}) == ["no provenance"]
    entries = json.loads((records.RESULTS / "build_times.json").read_text())
    del entries["entries"][1]["provenance"]["cpu"]
    assert records.provenance_problems(entries) == ["entry 1: provenance.cpu"]
    runs = json.loads((records.RESULTS / "browser_speed.json").read_text())   # labelled runs
    assert not records.provenance_problems(runs)
    del runs["runs"]["before"]["provenance"]["date"]
    assert records.provenance_problems(runs) == ["run before: provenance.date"]
    assert records.provenance_problems({"runs": {}}) == ["runs: none"]
    assert records.provenance_problems({**good, "runs": {"after": good}}) == [
        "provenance beside runs (each run holds its own)"]
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    with pytest.raises(FileNotFoundError):
        records.load("compile_cpu")
    (tmp_path / "compile_cpu.json").write_text(json.dumps({"eager_s": 0.3}))
    with pytest.raises(ValueError, match="provenance"):
        records.load("compile_cpu")


def test_without_a_checkout_a_record_is_fetched_once_from_the_repository(records_host):
    """Colab has none of our folders: a record comes from the repository, once."""
    committed = json.loads((REPO / "book/results/table3.json").read_text())
    assert records.load("table3") == committed
    assert records.load("table3") == committed and records.exists("table3")
    assert records_host.requests == ["/book/results/table3.json"]        # then the cache
    assert (records.cache_dir() / "table3.json").is_file()
    assert book_tables.norm_and_warmup_table().data.count("|") > 10          # chapter 7's table


def test_a_record_the_repository_lacks_is_missing_not_an_error(records_host):
    assert not records.exists("no_such_record")
    with pytest.raises(FileNotFoundError, match=r"/book/results/no_such_record\.json: no such"):
        records.load("no_such_record")
    assert not records.cache_dir().exists()


def test_an_unreachable_or_broken_host_is_a_one_line_error(records_host):
    records_host.broken["table3"] = 500
    with pytest.raises(ConnectionError, match="table3.*HTTP 500") as failed:
        records.load("table3")
    assert "\n" not in str(failed.value) and records_host.url in str(failed.value)
    records_host.close()
    with pytest.raises(ConnectionError, match=r"result record table3: could not download "
                       + re.escape(f"{records_host.url}/book/results/table3.json")) as failed:
        records.load("table3")
    assert "\n" not in str(failed.value)
    assert not records.cache_dir().exists()                     # nothing half-kept


def test_a_record_that_is_not_json_is_refused_and_not_kept(records_host, tmp_path):
    records_host.folder = tmp_path / "served"
    records_host.folder.mkdir()
    (records_host.folder / "table3.json").write_text("<html>not a record</html>")
    with pytest.raises(ValueError, match="table3.json is not JSON"):
        records.load("table3")
    assert not (records.cache_dir() / "table3.json").exists()


def test_the_records_come_from_the_configured_repository(monkeypatch):
    """_config.yml holds the repository (url, branch); records.py repeats it."""
    config = (REPO / "_config.yml").read_text()
    url, branch = re.search(r"^repository:\s*\n\s+url:\s*(\S+)\s*\n\s+branch:\s*(\S+)",
                            config, flags=re.M).groups()
    assert (records.REPOSITORY, records.BRANCH) == (url, branch)
    monkeypatch.delenv(records.URL_ENV, raising=False)
    owner_repo = url.removeprefix("https://github.com/")
    assert records.source() == f"https://raw.githubusercontent.com/{owner_repo}/{branch}"


def test_the_generated_blocks_match_the_records():
    """`python -m transformer.measuring.blocks` leaves README.md and benchmarks/README.md as
    committed; run it after changing a record."""
    for rel, made in blocks.BLOCKS.items():
        text = (REPO / rel).read_text()
        assert blocks.render(text, made) == text, \
            f"{rel}: run python -m transformer.measuring.blocks"


def test_a_changed_record_changes_the_generated_docs(tmp_path, monkeypatch):
    for path in records.RESULTS.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    tiny = json.loads((tmp_path / "tiny_recipe.json").read_text())
    tiny["test"]["beam4_alpha1.0"]["bleu"] = 12.3
    (tmp_path / "tiny_recipe.json").write_text(json.dumps(tiny))
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    text = README.read_text()
    new = blocks.render(text, blocks.BLOCKS["README.md"])
    assert new != text and "**12.3 BLEU**" in new


def test_the_readme_for_users():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert len((REPO / "benchmarks" / "README.md").read_text().splitlines()) <= 120
    machines = re.findall(r"Zen [345]|family 2[56]|EPYC|\bVM\b", text)
    dates = re.findall(r"\b20\d\d-\d\d(?:-\d\d)?\b", text)
    hashes = [h for h in re.findall(r"`([0-9a-f]{7,40})`", text) if re.search(r"\d", h)]
    assert not (machines or dates or hashes), (machines, dates, hashes)
    assert "appendix_results.html" in text                     # the Results page
    page = REPO / "book" / "appendix_results.ipynb"
    assert "book/appendix_results" in (REPO / "_toc.yml").read_text() and page.exists()


def test_the_readme_python_block_runs():
    """The public API as the README shows it."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1, "the README has one Python block, and this test runs it"
    exec(compile(blocks[0], "README.md", "exec"), {})


def test_the_results_page_renders_every_quoted_record():
    """Each quoted record appears on the Results page with its provenance line."""
    page = json.loads((REPO / "book" / "appendix_results.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in page["cells"] if c["cell_type"] == "code")
    shown = set(re.findall(r'"([a-z0-9_]+)"', code))
    assert set(tables.QUOTED) <= shown, set(tables.QUOTED) - shown


@pytest.mark.parametrize("module, name, args", [
    ("benchmarks.cpu.dropout_speed", "dropout_speed", ["--rows", "64", "--rounds", "1",
                                                       "--calls", "1"]),
    ("benchmarks.cpu.decode_speed", "decode_speed", ["--batch", "2", "--steps", "4",
                                                     "--src-len", "3"]),
])
def test_a_benchmark_writes_a_record_the_docs_render(module, name, args, tmp_path, monkeypatch):
    """`python -m benchmarks.GROUP.NAME --record PATH` (from the repository root, no path
    set up) writes the figures with complete provenance and the wall time, in the form
    the Results page and benchmarks/README.md render; its command is the one typed."""
    import os
    import subprocess
    import sys
    path = tmp_path / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", module, *args, "--threads", "1", "--record", str(path)],
                   check=True, capture_output=True, env=env, cwd=REPO)
    record = json.loads(path.read_text())
    assert not records.provenance_problems(record)
    assert record["provenance"]["wall_s"] > 0 and record["provenance"]["device"] == "cpu"
    assert record["provenance"]["command"] == " ".join(
        [Path(sys.executable).name, "-m", module, *args, "--threads", "1", "--record", str(path)])
    for other in records.RESULTS.glob("*.json"):
        if other.name != path.name:
            (tmp_path / other.name).write_text(other.read_text())
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    assert tables.speedups() and tables.benchmarks()


def test_a_record_names_a_dirty_tree_anywhere_but_in_the_records(tmp_path, monkeypatch):
    """git_commit's "+changes": a benchmark edited after the commit counts; the records
    themselves (book/results, rewritten by the commands) do not."""
    import shutil
    import subprocess
    package = tmp_path / "transformer" / "measuring"
    package.mkdir(parents=True)
    shutil.copy(REPO / "transformer/measuring/provenance.py", package / "provenance.py")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "x.py").write_text("x = 1\n")
    (tmp_path / "book/results").mkdir(parents=True)
    (tmp_path / "book/results/r.json").write_text("{}\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    from transformer.measuring import provenance as module
    monkeypatch.setattr(module, "__file__", str(package / "provenance.py"))   # that checkout
    monkeypatch.delenv("TRANSFORMER_COMMIT", raising=False)
    assert not module.git_commit().endswith("+changes")
    (tmp_path / "book/results/r.json").write_text('{"a": 1}\n')
    assert not module.git_commit().endswith("+changes")
    (tmp_path / "benchmarks" / "x.py").write_text("x = 2\n")
    assert module.git_commit().endswith("+changes")


# ---- the benchmark scripts and every reference to them ----------------------------------

def _script_of_module(module: str) -> Path:
    return REPO / (module.replace(".", "/") + ".py")


def test_the_table_lists_every_benchmark_as_it_is_run():
    """Each row of BENCHMARKS names scripts that exist, in the group folder its command
    runs; every module that writes a record (``add_option``) has its row."""
    listed = set()
    for script, _, command, _, _ in registry.BENCHMARKS:
        for part in script.split(" + "):
            assert (REPO / "benchmarks" / part).is_file(), part
            listed.add(part)
        if command.startswith("python -m "):
            module = command.split()[2]
            assert _script_of_module(module) == REPO / "benchmarks" / script, (module, script)
        else:
            assert command.split()[:2] == ["bash", f"benchmarks/{script.split(' + ')[0]}"]
    writers = {str(p.relative_to(REPO / "benchmarks")) for p in (REPO / "benchmarks").rglob("*.py")
               if "add_option(" in p.read_text() and p.name != "record.py"}
    assert writers and writers <= listed, writers - listed
    assert {p.split("/")[0] for p in listed} == set(registry.GROUPS)


def _commands(record: dict):
    """Every command a record's provenance names (runs, entries and rows included)."""
    for part in [record, *record.get("entries", []),
                 *(record["runs"].values() if isinstance(record.get("runs"), dict) else []),
                 *(r for r in record.get("rows", []) if isinstance(r, dict))]:
        prov = part.get("provenance", {}) if part is not record or "provenance" in part else {}
        yield from filter(None, [prov.get("command"), *prov.get("commands", []),
                                 part.get("command") if part is not record else None])


def test_every_records_command_leads_to_its_script_today():
    """A committed record keeps the command that measured it, old paths and all; each
    script such a command names is found today, where it is or through MOVED."""
    assert all((REPO / new).is_file() for new in registry.MOVED.values())
    named = 0
    for path in sorted(records.RESULTS.glob("*.json")):
        for command in _commands(json.loads(path.read_text())):
            for script in re.findall(r"benchmarks/[\w/]+\.(?:py|sh)", command):
                named += 1
                assert (REPO / registry.MOVED.get(script, script)).is_file(), (path.name, script)
            for module in re.findall(r"-m (benchmarks(?:\.\w+)+)", command):
                named += 1
                assert _script_of_module(module).is_file(), (path.name, module)
    assert named >= 15


def test_every_reference_to_a_benchmark_names_a_file_that_exists():
    """The docs, the book, the package, the tests and the scripts name benchmarks by their
    path (``benchmarks/<group>/<name>.py``) or module (``benchmarks.<group>.<name>``); each
    exists. Only the dated
    notes (docs/notes/, history) and the records name the paths from before the move,
    and benchmarks/README.md's sentence about it."""
    import subprocess
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    checked, stale = 0, []
    for name in files:
        if name.startswith(("book/results/", "docs/notes/")) or not name.endswith(
                (".py", ".sh", ".md", ".ipynb", ".toml", ".yml", "Makefile")):
            continue
        text = (REPO / name).read_text(encoding="utf-8")
        for script in re.findall(r"(?<![\w./-])benchmarks/[\w/]+\.(?:py|sh)\b", text):
            checked += 1
            if not (REPO / script).is_file() and not (
                    name == "benchmarks/README.md" and script in registry.MOVED):
                stale.append((name, script))
        for module in re.findall(r"(?<![\w./-])benchmarks(?:\.[a-z_]+)+(?=[\s`'\",)]|$)", text):
            checked += 1
            if not (_script_of_module(module).is_file()
                    or (REPO / module.replace(".", "/") / "__init__.py").is_file()):
                stale.append((name, module))
    assert checked > 50 and not stale, stale


def test_a_record_cut_short_or_of_the_wrong_shape_is_one_line_naming_its_file(tmp_path,
                                                                              monkeypatch):
    """A record cut in half (a killed write), a JSON list, or a Table 3 record without its
    base row: a ValueError of one line naming the file, not a bare JSONDecodeError or a
    KeyError: 'base' from chapter 11's table3.changes."""
    from transformer.tools import ablation
    from transformer_book import table3
    table = json.loads((records.RESULTS / "table3.json").read_text())
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    text = json.dumps(table)
    (tmp_path / "table3.json").write_text(text[:len(text) // 2])
    cases = {"not a JSON result record (": text[:len(text) // 2], "a JSON list": "[1, 2]"}
    without_base = {**table, "rows": [r for r in table["rows"] if r["row"] != "base"]}
    cases["lacks the base row (every row is measured against it)"] = json.dumps(without_base)
    for problem, body in cases.items():
        (tmp_path / "table3.json").write_text(body)
        with pytest.raises(ValueError) as caught:
            records.load("table3")
        message = str(caught.value)
        assert "\n" not in message and message.startswith(f"{tmp_path / 'table3.json'}: ")
        assert problem in message, message
    with pytest.raises(ValueError, match="no run of the base row"):
        table3.changes(without_base, ablation.ROWS)
