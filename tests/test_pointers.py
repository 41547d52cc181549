"""Every pointer in the prose resolves: each file path, Python module, function or class
that a docstring, a comment (Python ``#``, JavaScript ``//`` and ``/* */``: a file's header
and its sections' headers alike) or the contributor's docs (CONTRIBUTING.md, README.md,
benchmarks/README.md) names exists, so the prose follows the code when a module moves.

What counts as a pointer, and where it must lead:

* a path, ``transformer/tokenizer.py``, ``lib/dom.js``, ``book/results/NAME.json``,
  optionally with a line pointer (``tokenizer.py:12`` or ``tokenizer.py:12-13``), whose first
  folder is one of the repository root, of ``book/`` (``transformer_book/``), of the
  mentioning file's folder or of the page's static root (``book/_ext/static/``, where the
  page's code names its modules as ``lib/dom.js``): a file or folder there; a line pointer
  must lie inside the file (a path whose first folder is none of these, a run's ``runs/``,
  the site's ``_static/`` or a build's ``_build/`` (a folder git tracks no file in), or is
  hidden, ``.cache/``, points outside the repository and
  is not checked). A word in capitals (``NAME``, ``GROUP``, ``NN``) or ``...`` is a
  placeholder: at least one file must match it; a record the benchmarks' registry promises
  may be not yet written;
* a bare file name in lower case, ``viz.py``: some file of the repository has that name;
* a dotted name starting with ``transformer.``, ``transformer_book.`` or ``benchmarks.``:
  it imports (the longest importable prefix) and the rest resolves by ``getattr``, a
  function or class in its own module (a package's re-export counts; a module's mere import
  of it does not: ``checkpoint.same_vocabulary`` is the tokenizer's);
* in a Python file, a backticked dotted name whose first part is a module of the mentioning
  module's package (``checkpoint.average_checkpoints`` in transformer/inference.py): that
  module has the rest; so does a Sphinx cross-reference (``:func:`.checkpoint.load_checkpoint```, from
  the package; ``:class:`Trainer``` as the mentioning module reads it).

ALLOWED lists the deliberate mentions that do not resolve, each with its reason."""
import ast
import importlib
import os
import re
import subprocess
import types
import warnings
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STATIC = REPO / "book" / "_ext" / "static"
PYTHON_ROOTS = ["transformer", "book/transformer_book", "book/_ext", "benchmarks", "tests"]
JS_ROOTS = ["book/_ext/static", "tests/js"]
DOCS = ["CONTRIBUTING.md", "README.md", "benchmarks/README.md"]
SKIP_DIRS = {"node_modules", "__pycache__", "_build", "fixtures"}

# Deliberate mentions that lead nowhere in this repository: token -> why.
ALLOWED = {
    "plotly.js": "plotly's own bundle, another project's file",
    "tex-chtml.js": "MathJax's own file, another project's",
    "searchtools.js": "Sphinx's own search script, another project's file",
    "average_checkpoints.py": "fairseq's script, another project's file",
    "transformer.x.y": "the form of a module's name, an example",
    "book/NN_name.ipynb": "the form of a chapter's file name",
    "./x.js": "the form of an import the page's staging reads, an example",
    "../lib/y.js": "the form of a re-export the page's staging reads, an example",
    "./r/": "a user's run folder, one of the spellings the resume accepts",
    "benchmarks/book/doubt_set.json": "made by `--make-set` and labelled by hand; not yet",
}

# Modules that re-export another module's names on purpose: module -> why.
REEXPORTS = {
    "transformer_book.viz": "the chapters' one helper module: it hands on switches' and "
                            "site's helpers (pick, setup_plotly) so a chapter imports one",
}

EXT = r"(?:py|js|json|md|ipynb|css|yml|yaml|toml|txt|cfg|html|svg|pt|jsonl)"
URL = re.compile(r"\b(?:https?|file)://\S+")
PATH = re.compile(r"(?<![\w./@~$-])((?:[\w.-]+/)+(?:[\w.-]+\." + EXT + r"|))"
                  r"(?::(\d+)(?:-(\d+))?)?(?![\w/])")
BARE = re.compile(r"(?<![\w./@~$-])([A-Za-z_][\w-]*\.(?:py|js|ipynb))(?::(\d+)(?:-(\d+))?)?"
                  r"(?![\w/])")
DOTTED = re.compile(r"(?<![\w./-])((?:transformer|transformer_book|benchmarks)"
                    r"(?:\.[A-Za-z_]\w*)+)(?![\w/(])")
TICKED = re.compile(r"`+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?`+")
PLACEHOLDER = re.compile(r"\b(?:[A-Z]{2,}|NN)(?=[_./\-]|$)")
ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj|exc):`~?([.\w]+?)(?:\(\))?`")
NOT_MODULES = {"py", "js", "json", "md", "ipynb", "css", "txt", "yml", "yaml", "toml", "pt"}


def sources() -> list[Path]:
    found = [REPO / name for name in DOCS]
    for roots, suffix in ((PYTHON_ROOTS, ".py"), (JS_ROOTS, ".js")):
        for root in roots:
            found += [p for p in sorted((REPO / root).rglob("*" + suffix))
                      if not SKIP_DIRS & set(p.relative_to(REPO).parts)]
    return sorted(set(found))


def python_prose(text: str) -> list[str]:
    """A Python file's docstrings (module, classes, functions) and its comment lines, each
    run of ``#`` lines one text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)     # a file's own escapes are its lint's
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(text)
    found = [ast.get_docstring(node) for node in ast.walk(tree)
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                  ast.AsyncFunctionDef))]
    blocks, last = [], -2
    for row, line in enumerate(text.splitlines()):
        comment = line.lstrip()
        if not comment.startswith("#"):
            continue
        if row == last + 1:
            blocks[-1] += "\n" + comment.lstrip("#")
        else:
            blocks.append(comment.lstrip("#"))
        last = row
    return [d for d in found if d] + blocks


def js_prose(text: str) -> list[str]:
    """A JavaScript file's comments: its ``/* */`` blocks and runs of ``//`` lines (a ``//``
    after a colon or a quote is a URL's or a string's, not a comment)."""
    blocks = re.findall(r"/\*(.*?)\*/", text, re.S)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = [m.group(1) for m in re.finditer(r"(?<![:\"'\\])//(.*)", text)]
    return blocks + ["\n".join(lines)]


def prose(path: Path) -> list[str]:
    text = path.read_text()
    if path.suffix == ".py":
        return python_prose(text)
    if path.suffix == ".js":
        return js_prose(text)
    return [text]


@cache
def file_names() -> frozenset[str]:
    names = set()
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS - {"fixtures"} and d[0] != "."]
        names.update(files)
    return frozenset(names)


def lines_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


@cache
def moved() -> frozenset[str]:
    """The benchmarks' old paths (the registry's MOVED), which the note on their move names."""
    from transformer.measuring.registry import MOVED
    return frozenset(MOVED)


@cache
def promised_records() -> frozenset[str]:
    """The records the benchmarks' registry names, written when their benchmark first runs
    (benchmarks/README.md says "no record yet" until then)."""
    from transformer.measuring.registry import BENCHMARKS
    return frozenset(f"book/results/{row[3]}.json" for row in BENCHMARKS)


@cache
def tracked_folders() -> frozenset[Path] | None:
    """Every folder holding a file git tracks, or None outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                                check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return None
    return frozenset(parent for name in listed if name
                     for parent in (REPO / name).parents
                     if parent == REPO or REPO in parent.parents)


def ours(folder: Path) -> bool:
    """A folder of the repository's own, not one a build or a run left (``_build/``)."""
    tracked = tracked_folders()
    return folder.is_dir() if tracked is None else folder.resolve() in tracked


def path_problem(token: str, first: str | None, last: str | None, where: Path) -> str | None:
    if token in promised_records():
        return None
    first_folder = token.split("/")[0]
    if first_folder.startswith(".") and first_folder not in (".", ".."):
        return None                  # a hidden folder (.cache/, .venv/): a machine's, not ours
    bases = [base for base in (REPO, REPO / "book", where.parent, STATIC)
             if ours(base / first_folder)]
    if not bases:
        return None                  # not a pointer into the repository: a run's folder, a URL
    if PLACEHOLDER.search(token) or "..." in token:
        pattern = PLACEHOLDER.sub("*", token).replace("...", "*").rstrip("/")
        if any(next(base.glob(pattern), None) for base in bases):
            return None
        return f"{token}: no file matches"
    for base in bases:
        target = base / token
        if target.exists():
            line = int(last or first or 0)
            if line and line > lines_in(target):
                return f"{token}:{line}: the file has {lines_in(target)} lines"
            return None
    return f"{token}: no such file or folder"


@cache
def resolves(name: str, home: bool = True) -> bool:
    """``name`` imports and its attributes exist; with ``home``, a function or class is named
    in its own module (or a package, or a module of REEXPORTS), not in a module that merely
    imports it."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as error:
            if error.name and not ".".join(parts[:i]).startswith(error.name):
                raise                                # the module exists; an import in it fails
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            owner, obj = obj, getattr(obj, attr)
            if home and isinstance(owner, types.ModuleType) and not hasattr(owner, "__path__") \
                    and owner.__name__ not in REEXPORTS \
                    and isinstance(obj, (type, types.FunctionType)) \
                    and obj.__module__ != owner.__name__:
                return False                 # a module's import of it, not its home
        return True
    return False


def package_of(path: Path) -> list[str]:
    """The packages a module of ``path`` sits in, innermost first (``transformer.training``,
    ``transformer`` for transformer/training/loop.py); none outside the importable trees."""
    rel = path.relative_to(REPO)
    if rel.parts[0] == "book":
        rel = rel.relative_to("book")
    parts = list(rel.parent.parts)
    if not parts or parts[0] not in ("transformer", "transformer_book", "benchmarks"):
        return []
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def relative_names(name: str, path: Path) -> list[str]:
    """``checkpoint.average_checkpoints`` named in a module of ``transformer`` ->
    ``transformer.checkpoint.average_checkpoints``, as ``checkpoint`` is a module of it: the
    name read from each package around the mentioning module that has such a module."""
    first, found = name.split(".")[0], []
    for package in package_of(path):
        folder = REPO / ("book/" if package.startswith("transformer_book") else "") / \
            package.replace(".", "/")
        if (folder / f"{first}.py").is_file() or (folder / first / "__init__.py").is_file():
            found.append(f"{package}.{name}")
    return found


def module_name(path: Path) -> str | None:
    """transformer/training/loop.py -> ``transformer.training.loop``; None outside the
    importable trees."""
    packages = package_of(path)
    if not packages:
        return None
    return packages[0] if path.stem == "__init__" else f"{packages[0]}.{path.stem}"


def role_problem(target: str, path: Path) -> str | None:
    """A Sphinx cross-reference, ``:func:`.checkpoint.average_checkpoints``` (from the package),
    ``:mod:`transformer.fast``` (whole) or ``:func:`load_model``` (in the module or its
    packages, or an attribute of one of the module's classes or their instances): it
    resolves."""
    roots = ("transformer", "transformer_book", "benchmarks")
    module = module_name(path)
    if target.split(".")[0] in roots:
        candidates = [target]
    elif module is None:
        return None
    elif target.startswith("."):
        package = module if path.stem == "__init__" else module.rpartition(".")[0]
        candidates = [package + target]
    else:                            # as the module reads it: its imports count
        candidates = [module] + package_of(path)
        candidates = [f"{base}.{target}" for base in dict.fromkeys(candidates)]
        if any(resolves(name, home=False) for name in candidates):
            return None
    if any(resolves(name) for name in candidates):
        return None
    if module and "." not in target and (any(  # a method or field of a class of the module
            hasattr(value, target) for value in vars(importlib.import_module(module)).values()
            if isinstance(value, type) and value.__module__ == module)
            or re.search(rf"self\.{target}\b[^=\n]*=", path.read_text())):       # or an instance's attribute
        return None
    return f"{target} ({candidates[0]}): does not resolve"


def problems(path: Path, texts: list[str] | None = None) -> list[str]:
    found = []
    for text in prose(path) if texts is None else texts:
        text = URL.sub(" ", text)
        paths = set()
        for match in PATH.finditer(text):
            token = match.group(1)
            paths.add(match.span())
            if "/" not in token.rstrip("/") and not token.endswith("/"):
                continue
            if token in ALLOWED or token in moved() or not re.search(r"[A-Za-z]", token):
                continue                     # moved(): an old path, in the note on the move
            problem = path_problem(token, match.group(2), match.group(3), path)
            if problem:
                found.append(problem)
        for match in BARE.finditer(text):
            token = match.group(1)
            if token in ALLOWED or token in file_names() or token != token.lower():
                continue                     # a capital: a product (TensorFlow.js), a placeholder
            found.append(f"{token}: no file of that name")
        for match in DOTTED.finditer(text):
            name = match.group(1)
            if name.split(".")[-1] in NOT_MODULES or name in ALLOWED:
                continue
            if not resolves(name) and not re.search(r"\.[A-Z]+(?:\.|$)", name):
                found.append(f"{name}: does not resolve")
        if path.suffix == ".py":
            for match in ROLE.finditer(text):
                problem = role_problem(match.group(1), path)
                if problem and match.group(1) not in ALLOWED:
                    found.append(problem)
            for match in TICKED.finditer(text):
                name = match.group(1)
                if name.split(".")[0] in ("transformer", "transformer_book", "benchmarks") \
                        or name.split(".")[-1] in NOT_MODULES or name in ALLOWED:
                    continue
                full = relative_names(name, path)
                if full and not any(resolves(each) for each in full):
                    found.append(f"{name} ({full[0]}): does not resolve")
    return sorted(set(found))


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_pointer_in_the_prose_resolves(path):
    assert problems(path) == [], "a pointer in its prose leads nowhere (tests/test_pointers.py)"


def test_a_stale_pointer_fails():
    """Each kind of pointer, planted stale, is reported; its sound twin is not."""
    inference = REPO / "transformer" / "inference.py"
    stale = """``transformer/nowhere.py``, transformer/tools/cli.py:99999,
    ``transformer.tokenizer.no_such_function``, ``checkpoint.no_such_function``,
    ``lib/no_such_module.js``, ``toy_nowhere.py``, ``book/results/NOSUCH_x.json``,
    ``checkpoint.same_vocabulary`` (imported there, defined in the tokenizer),
    :mod:`.no_such_module`, :func:`no_such_name`."""
    assert problems(inference, [stale]) == sorted([
        "transformer/nowhere.py: no such file or folder",
        "transformer/tools/cli.py:99999: the file has "
        f"{lines_in(REPO / 'transformer/tools/cli.py')} lines",
        "transformer.tokenizer.no_such_function: does not resolve",
        "checkpoint.no_such_function (transformer.checkpoint.no_such_function): "
        "does not resolve",
        "lib/no_such_module.js: no such file or folder",
        "toy_nowhere.py: no file of that name",
        "book/results/NOSUCH_x.json: no file matches",
        "checkpoint.same_vocabulary (transformer.checkpoint.same_vocabulary): "
        "does not resolve",
        ".no_such_module (transformer.no_such_module): does not resolve",
        "no_such_name (transformer.inference.no_such_name): does not resolve"])
    sound = """``transformer/tools/cli.py``, transformer/tools/cli.py:1,
    ``transformer.tokenizer.same_vocabulary``, ``tokenizer.same_vocabulary``,
    ``lib/dom.js``, ``viz.py``, ``book/results/NAME.json``, ``benchmarks.GROUP.NAME``,
    :mod:`.checkpoint`, :func:`load_model`, :func:`load_checkpoint` (imported there)."""
    assert problems(inference, [sound]) == []


def test_the_allowed_mentions_are_still_made():
    """An allowance whose mention is gone goes too."""
    made = " ".join(text for path in sources() for text in prose(path))
    assert [token for token in ALLOWED if token not in made] == []
