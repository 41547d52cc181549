"""Facts the chapters of the learning path state, held by tests.

The tests read the notebooks and run only the definitions or the few cells they name (the
chapters themselves run under nbval), or call the book's helpers. A planted error in what
a chapter claims (a cost formula, an exercise's code, a figure's boxes) fails them.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"


def notebook(name: str) -> dict:
    return json.loads((BOOK / name).read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"])


def code_cells(nb: dict) -> list[str]:
    return [source(c) for c in nb["cells"] if c["cell_type"] == "code"]


def the_cell(nb: dict, marker: str, kind: str = "code") -> str:
    """The source of the one cell of ``kind`` containing ``marker``."""
    found = [source(c) for c in nb["cells"] if c["cell_type"] == kind and marker in source(c)]
    assert len(found) == 1, f"{len(found)} {kind} cells contain {marker!r}"
    return found[0]


def definitions(code: str) -> dict:
    """Run only the imports and function definitions of ``code``; their namespace."""
    tree = ast.parse(code)
    keep = [node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
    namespace: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "<chapter>", "exec"), namespace)
    return namespace


# ------------------------------------------------------------------ chapter 1
def test_chapter_1_cost_curves_use_min_r_n():
    """Restricted self-attention over n <= r tokens costs what full self-attention costs
    (each query reads at most min(r, n) keys): Table 1's r·n·d holds once n > r, so the figure's curve is min(r, n)·n·d, and the figure is
    drawn from the function the page shows."""
    nb = notebook("01_introduction.ipynb")
    ops = definitions(the_cell(nb, "def ops_per_layer("))["ops_per_layer"]
    d, k, r = 512, 3, 32
    for n in [1, 8, 31, 32, 33, 64, 1000, 16384]:
        cost = ops(n, d, k, r)
        assert cost["restricted self-attention"] == min(r, n) * n * d, n
        assert cost["self-attention"] == n * n * d and cost["recurrent"] == n * d * d
        assert cost["convolutional"] == k * n * d * d
        if n <= r:
            assert cost["restricted self-attention"] == cost["self-attention"], n
    figure = the_cell(nb, '"Operations per layer"')
    assert "ops_per_layer(" in figure and "r * n * d" not in figure


# ------------------------------------------------------------------ Figure 2
def value_of(code: str, namespace: dict):
    """Run ``code`` in ``namespace`` and return the value of its last expression."""
    tree = ast.parse(code)
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), "the cell does not end with an expression"
    exec(compile(tree, "<chapter>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<chapter>", "eval"), namespace)


def anchors(nb: dict) -> set[str]:
    """The targets a link into this chapter may name: its ``(label)=`` lines and the ids
    Sphinx gives its headings."""
    found = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = source(cell)
        found |= set(re.findall(r"^\((\S+)\)=\s*$", text, flags=re.M))
        for heading in re.findall(r"^#+ (.+)$", text, flags=re.M):
            found.add(re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-"))
    return found


FIGURE_2 = [("03_attention.ipynb", "Figure 2 (left)",
             ["MatMul", "Scale", "Mask (opt.)", "SoftMax", "MatMul"]),
            ("04_multi_head.ipynb", "Figure 2 (right)",
             ["Linear", "Linear", "Linear", "Scaled Dot-Product Attention", "Concat", "Linear"])]


# what the line a box links to must contain
CODE_OF = {"MatMul": " @ ", "Scale": "math.sqrt(d_k)", "Mask (opt.)": "masked_fill",
           "SoftMax": "torch.softmax", "Linear": "_proj(", "Concat": "flatten",
           "Scaled Dot-Product Attention": "self.attention("}


@pytest.mark.parametrize("chapter, title, names", FIGURE_2, ids=["left", "right"])
def test_figure_2_is_drawn_with_each_box_linked_to_its_section_and_line(chapter, title, names):
    """The chapter's hidden cell draws its half of Figure 2: the paper's boxes, each name
    linked to a section of the book that exists, each function's name to its line in the
    package."""
    import transformer

    nb = notebook(chapter)
    diagram = value_of(the_cell(nb, "flow("), {})
    assert title in diagram.title
    svg = diagram._repr_html_()
    blocks = re.findall(r'<g class="block">(.*?)</g>', svg, flags=re.S)
    shown = [" ".join(re.findall(r'<text class="label"[^>]*>([^<]*)</text>', b)) for b in blocks]
    assert shown == names, shown
    package = Path(transformer.__file__).parent
    for block in blocks:
        page, code = re.findall(r'<a href="([^"]+)">', block)
        name, _, anchor = page.partition("#")
        target = BOOK / name.replace(".html", ".ipynb")
        assert target.is_file(), page
        assert not anchor or anchor in anchors(notebook(target.name)), page
        file, line = re.fullmatch(r"https://github\.com/.+/transformer/(.+)#L(\d+)", code).groups()
        source = (package / file).read_text()
        line_text = source.splitlines()[int(line) - 1]
        shown_code = "".join(re.findall(r'<text class="source"[^>]*>([^<]*)</text>', block))
        assert re.search(rf"<title>transformer/{re.escape(file)}, ", block), block
        # the box names the function whose body holds the linked line, found here by ast
        holders = [node.name for node in ast.walk(ast.parse(source))
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and node.lineno <= int(line) <= node.end_lineno]
        assert shown_code.removesuffix("()") in holders, (shown_code, holders)
        name_shown = " ".join(re.findall(r'<text class="label"[^>]*>([^<]*)</text>', block))
        assert CODE_OF[name_shown] in line_text, (name_shown, line_text)


# ------------------------------------------------------------------ chapter 4
def exercise_code(nb: dict) -> list[str]:
    """The ```python blocks of the chapter's Exercises section (questions and answers)."""
    text = "\n\n".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    return re.findall(r"^```python\n(.*?)^```", text[text.index("\n## Exercises"):],
                      flags=re.M | re.S)


def test_chapter_4_exercise_fails_as_written_and_its_answer_holds():
    """Chapter 4's W^O exercise, run as written after the chapter's head-by-head rebuild:
    its assertion fails (a head's output read by another head's columns of W^O), and the
    answer's version, heads swapped with their columns, holds."""
    nb = notebook("04_multi_head.ipynb")
    namespace: dict = {}
    exec("import torch\n"
         "from transformer.attention import MultiHeadAttention, scaled_dot_product_attention\n"
         "from transformer.config import ModelConfig", namespace)
    for marker in ("heads.append(head_i)", "by_hand = mha.out_proj("):    # the rebuild, in order
        exec(the_cell(nb, marker), namespace)
    blocks = exercise_code(nb)
    (exercise,) = [b for b in blocks if "swapped = " in b and "unswapped" not in b]
    (answer,) = [b for b in blocks if "unswapped" in b]
    with pytest.raises(AssertionError):
        exec(exercise, namespace)
    exec(answer, namespace)                     # W_O as the exercise left it


@pytest.mark.parametrize("letters, length, steps", [(12, 8, 300), (10, 8, 400)])
def test_the_toy_accuracy_is_measured_on_sequences_no_training_batch_held(letters, length,
                                                                         steps):
    """Chapters 4 and 5 say their toy models are right on "new sequences": every sequence
    ``toy_accuracy`` scores is absent from every batch ``train_toy`` trained on (the
    chapters' settings, their longest runs). Both are watched through a stand-in model
    that records what it reads, so the check holds whatever seeds the two draw with."""
    import torch
    from torch import nn
    from transformer.your_turn import toy

    class Recorder(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = toy.toy_config(letters)
            self.logits = nn.Parameter(torch.zeros(self.cfg.vocab_size))
            self.seen = []

        def forward(self, src, tgt_in):
            self.seen.append(src.clone())
            return self.logits.expand(*tgt_in.shape, -1)

    trained, scored = Recorder(), Recorder()
    toy.train_toy(trained, "reverse", steps, letters, length)
    toy.toy_accuracy(scored, "reverse", letters, length)
    train = {tuple(row) for batch in trained.seen for row in batch.tolist()}
    held_out = [tuple(row) for batch in scored.seen for row in batch.tolist()]
    assert len(trained.seen) == steps and len(held_out) == 512
    assert not train & set(held_out), f"{len(train & set(held_out))} held-out sequences " \
                                      f"were trained on"


# --------------------------------------------------- Under the hood C (hardware)
def test_under_the_hood_c_reads_the_step_profile_as_its_record_says():
    """The prose under the step profile's figure: matrix multiplies the largest part in
    both precisions, Muon far more than Adam, and the loss and the casts a larger share in
    bf16 than in fp32; each read from the record the figure draws."""
    from transformer.measuring import records
    prose = " ".join(the_cell(notebook("hood_hardware.ipynb"), "Matrix multiplies take the "
                              "largest", "markdown").split())
    assert "Muon costs far more than Adam" in prose and "take a larger share" in prose
    assert "the loss takes longer" in prose and "as the record's is" in prose
    record = records.load("step_profile")
    assert record["cpu_bf16_instructions"]                 # "a CPU with bf16 instructions"
    shares = {p: r["shares"] for p, r in record["precisions"].items()}
    loss_s = {p: (r["shares"]["forward: loss"] + r["shares"]["backward: loss"])
              * r["seconds_per_update"] for p, r in record["precisions"].items()}
    assert loss_s["bf16"] > loss_s["fp32"]                 # seconds, not only a share
    assert set(shares) == {"fp32", "bf16"}
    for s in shares.values():
        matmul = s["forward: matrix multiplies"] + s["backward: matrix multiplies"]
        others = {k: v for k, v in s.items() if "matrix multiplies" not in k}
        assert matmul > max(others.values())
        assert s["Muon"] > 3 * s["Adam"]
    loss_and_casts = {p: s["forward: loss"] + s["backward: loss"] + s["forward: casts"]
                      + s["backward: casts"] for p, s in shares.items()}
    assert loss_and_casts["bf16"] > loss_and_casts["fp32"]
