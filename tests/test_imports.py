"""The package's modules import each other without a circle (imports inside functions
counted): a module can be read, and loaded, after the ones it names; and no module imports
a layer above its own (:data:`LAYERS`). Loading a model imports no trainer. The package,
the benchmarks and this file never import the book's helpers (``book/transformer_book/``):
imports run book -> package <- benchmarks, the measuring system (``transformer.measuring``)
being the package's."""
import ast
import subprocess
import sys
from pathlib import Path

from transformer.measuring.imports import PACKAGE, module_file, module_imports

REPO = Path(__file__).resolve().parents[1]
BOOK = "transformer_book"

# The package's layers, lowest first; a module imports its own layer and lower ones. The
# model: the plain modules at the top of transformer/ (the paper's sections and what uses
# a trained model), its fast form and the corpora; the measuring system (timing, records,
# tables; the import graph); training; what stands on training (the command line and its
# tools, the learner's exercises). The package itself and ``__main__`` are entry points.
LAYERS = [("model", None), ("measuring", {"measuring"}), ("training", {"training"}),
          ("tools", {"tools", "your_turn"})]
ENTRY_POINTS = {"transformer", "transformer.__main__"}

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


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    sub = module.split(".")[1] if "." in module else ""
    return next((i for i, (_, subs) in enumerate(LAYERS) if subs and sub in subs), 0)


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports of ``graph`` from a layer to a higher one, entry points left out."""
    return sorted((a, b) for a, names in graph.items() if a not in ENTRY_POINTS
                  for b in names if layer(b) > layer(a))


def test_no_module_imports_a_layer_above_its_own():
    assert layer("transformer.cpu") == 0 and layer("transformer.training.precision") == 2
    assert upward({"transformer.measuring.provenance": {"transformer.training.precision"}}) == [
        ("transformer.measuring.provenance", "transformer.training.precision")]      # the old arrow
    graph = modules()
    assert {layer(m) for m in graph} == set(range(len(LAYERS)))      # every layer is there
    found = upward(graph)
    assert not found, "imports from a lower layer to a higher one: " + ", ".join(
        f"{a} -> {b}" for a, b in found)


def test_the_cpu_flags_sit_below_both_their_readers():
    """The bf16 instructions are named once, in the package's lowest module, which both
    provenance and the trainer's precision read; provenance imports no training."""
    graph = modules()
    assert graph["transformer.cpu"] == set()
    assert "transformer.cpu" in graph[PROVENANCE]
    assert "transformer.cpu" in graph["transformer.training.precision"]
    assert not any(m.startswith("transformer.training") for m in graph[PROVENANCE])


PROVENANCE = "transformer.measuring.provenance"


def test_provenance_is_the_measuring_systems():
    """What a record says of where it was measured lives in the measuring system, which the
    run folder and the command line read from below; no copy is left at the top."""
    graph = modules()
    assert layer(PROVENANCE) == layer("transformer.measuring.records") == 1
    readers = {m for m, names in graph.items() if PROVENANCE in names}
    assert {"transformer.training.run_folder", "transformer.tools.cli"} <= readers
    assert all(layer(m) >= layer(PROVENANCE) for m in readers), readers
    assert "transformer.provenance" not in graph


def book_imports(source: str) -> set[str]:
    """The modules of the book's helpers that ``source`` imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [])
        found.update(n for n in names if n.split(".")[0] == BOOK)
    return found


def test_the_benchmarks_and_this_file_never_import_the_book_helpers():
    """Benchmarks time with ``transformer.measuring.timing``, list themselves in
    ``transformer.measuring.registry``, take the book's run from ``transformer.training.cache``
    and a page's own run from the package (the capstone's:
    ``transformer.your_turn.capstone_run.SETTINGS``): no benchmark reads the book."""
    planted = "import torch\n\ndef main():\n    from transformer_book.timing import Stopwatch\n"
    assert book_imports(planted) == {"transformer_book.timing"}
    assert book_imports("import transformer_book, transformer.measuring.timing") == {BOOK}
    files = sorted((REPO / "benchmarks").rglob("*.py")) + [Path(__file__)]
    assert len(files) > 20 and REPO / "benchmarks" / "book" / "capstone.py" in files
    arrows = {f.relative_to(REPO).as_posix(): book_imports(f.read_text(encoding="utf-8"))
              for f in files}
    arrows = {name: found for name, found in arrows.items() if found}
    assert not arrows, arrows
    assert not (REPO / "book" / BOOK / "timing.py").exists()   # the timers are the package's


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
