"""A learner's first run on Colab, rehearsed: a chapter's own install cell, then the chapter.

On Colab a chapter starts with a hidden cell that, behind ``if "google.colab" in
sys.modules:``, pip-installs the book's package from its repository (``--no-deps``, so as
to keep Colab's own torch) with the few packages Colab lacks. Nowhere else does that cell
run. Here it does, as on Colab:

* a fresh virtual environment (no system site-packages) of Colab's Python (``COLAB``:
  3.13, found by :func:`colab_python`, or ``$COLAB_PYTHON``) holding only what Colab
  preinstalls that the book relies on (``PREINSTALLED``), at Colab's versions where the
  chapters depend on them: torch, numpy, plotly;
* a kernel of that environment, started as Colab's is, with ``google.colab`` imported (a
  stand-in module), in an empty working folder;
* the chapter as it is in the repository, its install cell's repository URL pointed at a
  bare clone of this repository (``git+file://``: the committed tree, as Colab would get
  what is pushed), run with nbclient, then one more cell that checks that ``transformer``
  came from the environment, not from this checkout, and that the install cell left
  Colab's Python, torch, numpy and plotly as they were.

torch: PyPI's Linux wheel of Colab's release. It is a CUDA build (Colab's is the CUDA
12.8 one, which only PyTorch's own index serves; PyPI's has its CUDA libraries as
packages) and runs on a CPU. PyPI's torch for Linux on x86-64 is always such a build and
does not import without its CUDA libraries, so no lighter torch would rehearse Colab's
Python faster. The environment (several GB) takes minutes to build: it is
built once into .cache/colab-venv/ (git-ignored), keyed by the Python and
``PREINSTALLED``, and each test runs in a hard-linked copy of it that is thrown away, so
every run starts from the same untouched environment.

``make test`` rehearses chapter 1 (a learner's first run: the install cell, the package
from the wheel, a chapter): in a fresh clone the environment's build is most of its cost,
once; ``make test-colab`` every chapter (``COLAB_CHAPTERS=all``), which takes far longer
than the rest of ``make test``. As on Colab there is no ``$TRANSFORMER_DATA`` and ``HOME``
is a new folder: a chapter that reads a corpus fetches it on first use, Multi30k from the
local host that stands in for its repository (tests/corpus_host.py), Tatoeba from the
installed package; the result records that a chapter reads (``transformer.measuring.records``)
come from the repository, here a local host serving the bare clone's committed
``book/results`` (tests/record_host.py). Without a Python 3.13 the rehearsal is skipped, except under CI (``CI``
set), where it fails.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

import helpers
import processes
from record_host import RecordHost

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
REPOSITORY_URL = "git+https://github.com/attention-book/transformer"
# Colab's versions (its published package list, 2026-08) of what the chapters rely on
COLAB = {"python": "3.13", "torch": "2.11.0", "numpy": "2.1.3", "plotly": "5.24.1"}
# What Colab preinstalls that the chapters rely on: ipykernel 6, as on Colab and as
# requirements.txt pins; tqdm, the trainer's progress bar; nbformat, which plotly's
# figures need to show in a notebook ("Mime type rendering requires nbformat>=4.2.0", the
# first rehearsal without it).
PREINSTALLED = [f"torch=={COLAB['torch']}", f"numpy=={COLAB['numpy']}",
                f"plotly=={COLAB['plotly']}", "ipywidgets", "ipykernel<7", "tqdm", "nbformat"]
CACHE = REPO / ".cache" / "colab-venv"
FIRST_RUN = ["01_introduction"]
CHAPTERS = [p.stem for p in helpers.CHAPTERS]
STAND_IN = '"""A stand-in for Colab\'s google.colab (tests/test_colab.py)."""\n'


def chapters() -> list[str]:
    return CHAPTERS if os.environ.get("COLAB_CHAPTERS") == "all" else FIRST_RUN


def install_cell(notebook: dict) -> dict:
    """The chapter's Colab install cell: the one code cell that tests for google.colab."""
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"
             and 'if "google.colab" in sys.modules:' in "".join(c["source"])]
    assert len(cells) == 1, f"{len(cells)} Colab install cells"
    return cells[0]


def colab_python() -> Path | None:
    """Colab's Python here: ``$COLAB_PYTHON``, else pyenv's newest 3.13, else a
    ``python3.13`` on PATH (not pyenv's shim, which runs only the version pyenv is set to)."""
    if os.environ.get("COLAB_PYTHON"):
        return Path(os.environ["COLAB_PYTHON"])
    name = f"python{COLAB['python']}"
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(pyenv.glob(f"{COLAB['python']}.*/bin/{name}"), key=lambda p: [
        int(part) if part.isdigit() else -1 for part in p.parts[-3].split(".")])
    if found:
        return found[-1]
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if "shims" not in Path(p).parts)
    on_path = shutil.which(name, path=path)
    return Path(on_path) if on_path else None


def pristine_environment() -> Path:
    """The cached environment, built on first use (under a lock: one builder at a time)."""
    python = colab_python()
    if python is None or not python.is_file():
        message = (f"no Python {COLAB['python']} (Colab's) for the Colab rehearsal "
                   f"(set COLAB_PYTHON)")
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI is set, so this fails instead of skipping")
        pytest.skip(message)
    version = subprocess.run([str(python), "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    key = hashlib.sha256(json.dumps([str(python), version, PREINSTALLED]).encode())
    venv = CACHE / f"{version.split()[-1]}-{key.hexdigest()[:12]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "built").is_file():
            shutil.rmtree(venv, ignore_errors=True)
            steps = [[str(python), "-m", "venv", str(venv)],
                     [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                      *PREINSTALLED]]
            for step in steps:
                done = processes.run(step, timeout=3600)
                assert done.returncode == 0, f"{' '.join(step)}:\n{done.stderr[-3000:]}"
            colab = venv / "lib" / f"python{version.split()[-1].rsplit('.', 1)[0]}" / \
                "site-packages" / "google" / "colab"
            colab.mkdir(parents=True)
            (colab / "__init__.py").write_text(STAND_IN)
            (venv / "built").write_text("\n".join(PREINSTALLED) + "\n")
    return venv


@pytest.fixture
def colab_environment() -> Path:
    """A throw-away hard-linked copy of the pristine environment (pip replaces files, it
    does not write into them, so the cached one stays as built)."""
    pristine = pristine_environment()
    copy = Path(tempfile.mkdtemp(prefix="run-", dir=CACHE)) / "venv"
    subprocess.run(["cp", "-al", str(pristine), str(copy)], check=True)
    yield copy
    shutil.rmtree(copy.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A bare clone of this repository's committed tree (HEAD)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing committed to install from")
    bare = tmp_path_factory.mktemp("origin") / "transformer.git"
    done = processes.run(["git", "clone", "--quiet", "--bare", str(REPO), str(bare)],
                         timeout=600)
    assert done.returncode == 0, done.stderr
    return bare


@pytest.fixture(scope="module")
def records_host(clone, tmp_path_factory):
    """The repository's host of the result records, serving the clone's committed
    ``book/results``."""
    folder = tmp_path_factory.mktemp("records")
    done = subprocess.run(["git", "--git-dir", str(clone), "archive", "HEAD", "book/results"],
                          capture_output=True, check=True, timeout=600)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(folder, filter="data")
    host = RecordHost(folder / "book" / "results")
    yield host
    host.close()


def kernel_environment(home: Path, records_url: str) -> dict:
    """The kernel's environment: ours less what would let it see this checkout, a data
    folder or our allocator settings, with ``HOME`` at ``home`` and the result records'
    host at ``records_url`` (see above)."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "LD_PRELOAD", "MALLOC_CONF", "TRANSFORMER_CACHE",
            "JUPYTER_PATH", "PYTHONSTARTUP", "TRANSFORMER_DATA")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.setdefault("OMP_NUM_THREADS", "1")
    env["HOME"] = str(home)
    env["TRANSFORMER_RECORDS_URL"] = records_url
    return env


@pytest.mark.parametrize("chapter", chapters())
def test_a_chapter_runs_on_colab_after_its_own_install_cell(chapter, colab_environment,
                                                           clone, records_host, tmp_path):
    import nbformat
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    notebook = nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4)
    cell = install_cell(notebook)
    assert cell.source.count(REPOSITORY_URL) == 1, cell.source
    cell.source = cell.source.replace(REPOSITORY_URL, f"git+file://{clone}")
    python = colab_environment / "bin" / "python"
    check = nbformat.v4.new_code_cell(
        "import json, sys, numpy, plotly, torch, transformer, transformer_book\n"
        "from transformer.corpora import SHIPPED, verify\n"
        "assert verify('tatoeba-en-de', SHIPPED / 'tatoeba-en-de') == []   # in the wheel\n"
        "print(json.dumps({'executable': sys.executable, 'package': transformer.__file__,\n"
        "                  'helpers': transformer_book.__file__,\n"
        "                  'python': sys.version.split()[0], 'torch': torch.__version__,\n"
        "                  'numpy': numpy.__version__, 'plotly': plotly.__version__}))")
    notebook.cells.append(check)

    kernels = tmp_path / "kernels" / "colab"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "display_name": "Colab rehearsal", "language": "python",
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 "--IPKernelApp.exec_lines=['import google.colab']"]}))
    content = tmp_path / "content"                     # Colab's working folder
    content.mkdir()
    (tmp_path / "home").mkdir()
    manager = KernelManager(kernel_name="colab", kernel_spec_manager=KernelSpecManager(
        kernel_dirs=[str(tmp_path / "kernels")]))
    client = NotebookClient(notebook, km=manager, timeout=3600,    # a hang guard per cell
                            resources={"metadata": {"path": str(content)}})
    # execute() hands SIGINT and SIGTERM to asyncio while it runs and then leaves them at
    # Python's defaults, whatever they were (SIGINT ignored, in a run started as a
    # background job): put them back
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    asked = len(records_host.requests)
    try:
        client.execute(env=kernel_environment(tmp_path / "home", records_host.url))
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)

    printed = "".join(o.get("text", "") for o in check.outputs)
    found = json.loads(printed)
    site = colab_environment / "lib"
    assert Path(found["executable"]) == python, printed
    assert Path(found["package"]).is_relative_to(site), printed
    assert Path(found["helpers"]).is_relative_to(site), printed
    versions = {"python": found["python"].rsplit(".", 1)[0],       # Colab's, untouched
                "torch": found["torch"].split("+")[0], "numpy": found["numpy"],
                "plotly": found["plotly"]}
    assert versions == COLAB, printed
    fetched = sorted({Path(r).stem for r in records_host.requests[asked:]})
    print(f"{chapter} ran on Colab's versions: Python {found['python']}, torch "
          f"{found['torch']}, numpy {found['numpy']}, plotly {found['plotly']}; records "
          f"fetched: {', '.join(fetched) or 'none'}")
