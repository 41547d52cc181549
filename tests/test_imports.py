"""The package's modules import each other without a circle (imports inside functions
counted): a module can be read, and loaded, after the ones it names. Loading a model
imports no trainer, and the package never imports the book's helpers."""
import subprocess
import sys
from pathlib import Path

from transformer_book.runs import PACKAGE, module_file, module_imports

REPO = Path(__file__).resolve().parents[1]


def modules() -> dict[str, set[str]]:
    """Every module of the package -> the package modules it imports (not the packages
    on the way, which every submodule's import names)."""
    names = {"transformer" + "".join("." + part for part in
                                     p.relative_to(PACKAGE).with_suffix("").parts)
             .removesuffix(".__init__") for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name in names:
        path = module_file(name)
        packages = {n.rpartition(".")[0] for n in names} | {"transformer"}
        graph[name] = {m for m in module_imports(name, path)
                       if m != name and m not in packages and m in names}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports in ``graph``, or [] when there is none."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_finder_sees_imports_inside_functions_and_relative_ones():
    graph = modules()
    assert "transformer.training.muon" in graph["transformer.training.optimizers"]
    assert "transformer.corpora.spec" in graph["transformer.data"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_module_of_the_package_imports_itself_through_others():
    found = cycle(modules())
    assert not found, "import circle: " + " -> ".join(found)


def test_loading_a_model_does_not_import_the_trainer():
    code = ("import sys; from transformer import load_model, translate, Tokenizer; "
            "assert 'transformer.training.loop' not in sys.modules; "
            "assert 'transformer.training.distributed' not in sys.modules; "
            "import transformer; transformer.Trainer, transformer.TrainConfig; "
            "assert 'transformer.training.loop' in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_library_never_imports_the_book_helpers():
    for path in (REPO / "transformer").rglob("*.py"):
        assert "transformer_book" not in path.read_text(encoding="utf-8"), path
