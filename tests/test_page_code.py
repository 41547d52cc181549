"""The page's code (book/_ext/static) as a module graph with one contract, checked without
building the book: its Node unit tests and its linter pass, no script puts a name on
window or self but the one namespace, the export's file list and format are written once,
and the page's search and doubt agree with the package's on the same cases."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from transformer.doubt import doubt

REPO = Path(__file__).resolve().parents[1]
STATIC = REPO / "book" / "_ext" / "static"
NODE, NPM = shutil.which("node"), shutil.which("npm")


def _node():
    if NODE is None:
        pytest.skip("no node (Node 20 is needed for the page's tests and npm pack)")
    return NODE


def scripts() -> list[Path]:
    return sorted(STATIC.rglob("*.js"))


def test_no_script_puts_a_name_on_window_or_self_but_the_namespace():
    assignment = re.compile(r"\b(window|self|globalThis)\s*(\.\s*\w+|\[[^\]]+\])\s*(=(?!=)|\|\|=|\?\?=)")
    found = {p.relative_to(STATIC).as_posix(): assignment.findall(p.read_text(encoding="utf-8"))
             for p in scripts()}
    found = {name: hits for name, hits in found.items() if hits}
    assert list(found) == ["lib/namespace.js"], found
    assert re.search(r"globalThis\.attentionBook\s*=", (STATIC / "lib/namespace.js").read_text())


def test_every_script_is_a_module_and_no_python_carries_javascript():
    for path in scripts():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\(function \(|importScripts\(", text, flags=re.M), path
    for ext in (REPO / "book" / "_ext").glob("*.py"):
        text = ext.read_text(encoding="utf-8")
        assert not re.search(r"document\.|addEventListener|function \(", text), ext


def test_the_export_files_and_format_are_written_once():
    sources = [p for p in (REPO / "transformer").rglob("*.py")] + \
              [p for p in (REPO / "book" / "_ext").rglob("*.py")] + scripts()
    page = [p for p in sources if "transformer" not in p.relative_to(REPO).parts[:1]]
    for literal in ("encoder.onnx", "decoder.onnx", "weights.bin", "spm.model"):
        # spm.model is also every run folder's tokenizer: in the package, the graphs only
        searched = page if literal == "spm.model" else sources
        where = [p.relative_to(REPO).as_posix() for p in searched
                 if re.search(rf"[\"']{re.escape(literal)}[\"']", p.read_text(encoding="utf-8"))]
        assert where == ([] if literal == "spm.model" else ["transformer/tools/manifest.py"]), (literal, where)
    formats = [p.relative_to(REPO).as_posix() for p in sources
               if re.search(r"^\s*(export\s+)?(const\s+)?FORMAT\s*=", p.read_text(encoding="utf-8"), re.M)]
    assert formats == ["transformer/tools/manifest.py"], formats


def test_the_search_fixture_is_what_the_package_searches_now():
    """tests/js/fixtures/search.json (the ids the Node tests hold search.js to) is what
    greedy_decode and beam_search give on the stand-in model today."""
    import page_search_model
    fixture = json.loads((REPO / "tests" / "js" / "fixtures" / "search.json").read_text())
    assert fixture == page_search_model.expected()


DOUBT = json.loads((REPO / "tests" / "js" / "fixtures" / "doubt.json").read_text(encoding="utf-8"))


def test_the_page_doubts_as_the_package_does():
    """translator/doubt.js and transformer.doubt on the same cases (tests/js/fixtures/
    doubt.json, which tests/js/doubt.test.js reads too), in Node: the same note, word for
    word, or none."""
    node = _node()
    script = ("import {doubt} from %s; const d = JSON.parse(process.argv[1]);"
              "console.log(JSON.stringify(d.cases.map((c) => { const o = c.options || {};"
              " return doubt(c.ids, d.unk, c.text, c.pieces, {source: o.source,"
              " sourcePieces: o.source_pieces, cross: o.cross}); })));"
              % json.dumps((STATIC / "translator" / "doubt.js").as_uri()))
    run = subprocess.run([node, "--input-type=module", "-e", script, json.dumps(DOUBT)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    expected = [doubt(c["ids"], DOUBT["unk"], c["text"], c["pieces"],
                      **{k: v for k, v in c.get("options", {}).items()})
                for c in DOUBT["cases"]]
    assert sum(e is not None for e in expected) >= len(expected) // 3   # notes, not only None
    assert json.loads(run.stdout) == expected


def test_the_panels_toy_tasks_are_the_books():
    """training/model.js's TASKS and transformer.your_turn.toy's TASKS, the two homes of the toy
    tasks (the panel trains in the page what chapters 4 and 5 train in Python): the same
    names, and the same target for the same sequences, in Node."""
    import torch
    from transformer.your_turn.toy import TASKS

    node = _node()
    text = (STATIC / "training" / "model.js").read_text(encoding="utf-8")
    block = re.search(r"export const TASKS = (\{.*?\n\});", text, flags=re.S).group(1)
    sequences = [[7, 4, 9, 4, 5], [4], [12, 11, 10, 9, 8, 7, 6, 5], [6, 6, 5, 30, 21]]
    script = ("const TASKS = %s; const s = JSON.parse(process.argv[1]);"
              "console.log(JSON.stringify(Object.fromEntries(Object.entries(TASKS)"
              ".map(([k, f]) => [k, s.map(f)]))));" % block)
    run = subprocess.run([node, "-e", script, json.dumps(sequences)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    page = json.loads(run.stdout)
    assert set(page) == set(TASKS)
    for name, task in TASKS.items():
        assert page[name] == [task(torch.tensor([s]))[0].tolist() for s in sequences], name


def test_the_attention_kinds_are_named_alike():
    """The names of the three attention kinds, in the book's figures (viz.ATTENTION_KINDS),
    the translator's map (translator/map.js) and the training panel (training/panel.js):
    the decoder's self-attention is "masked" in all three, never "causal"."""
    from transformer_book.viz import ATTENTION_KINDS

    assert "(masked)" in ATTENTION_KINDS["decoder.self"][0]
    for page in ("translator/map.js", "training/panel.js"):
        text = (STATIC / page).read_text(encoding="utf-8")
        assert re.search(r'\["decoder\.self", "[^"]*\(masked\)"', text), page
        assert "(causal)" not in text, page
