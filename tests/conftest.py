import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import torch

import corpus_host
import processes
from corpus_host import OFFLINE, rehearse_a_fresh_machine
from helpers import READS_CORPORA
from local_host import LocalHost, StaticFiles

rehearse_a_fresh_machine()      # an empty data root, corpora from local hosts (corpus_host.py)
# each test leaves the process state (signal handlers, working directory, environment,
# torch's threads...) as it found it, or fails (tests/state_guard.py)
pytest_plugins = ["state_guard", "pytester"]   # pytester: tests/test_state_guard.py

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
QUICK_OUT = REPO / "_build" / "quick"


def pytest_report_header(config):
    """Where the corpora come from, or why the tests that need them skip (corpus_host.py)."""
    return corpus_host.report()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


processes.adopt_orphans()          # orphaned grandchildren stay ours (tests/processes.py)


@pytest.fixture(autouse=True)
def _end_its_processes():
    """Every process a test started ends with it, grandchildren included, pass or fail
    (fixtures of a wider scope start theirs before this snapshot, so theirs live on)."""
    before = processes.children()
    yield
    processes.end_new_processes(before)


@pytest.fixture
def ctrl_c():
    """Ctrl-C as in a terminal, for one test: SIGINT raises KeyboardInterrupt in this process
    (and a process it starts begins with the default handler), also when the test run was
    started with SIGINT ignored, as a background job, under nohup or with no terminal."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# ------------------------------------------------- torch's threads, put back by the suite
# Training in this process sets torch's thread count (a run's ``threads``; Trainer.fit
# leaves the run's count, as a user's process should keep it), so every test and fixture
# that trains changes it. None has to remember to put it back (a module fixture that did
# not failed the state guard under OMP_NUM_THREADS=1): the suite does it, for every test
# (``keeps_threads``) and every fixture of any scope (``pytest_fixture_setup`` below).
@pytest.fixture(autouse=True)
def keeps_threads():
    """torch's thread count put back after each test, as it was when the test began."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Each fixture, whatever its scope, leaves torch's thread count as it found it: once
    it is torn down (a module's fixture that trains keeps the run's count for the module's
    tests, as ``one_thread`` keeps 1); one wider than a module, which outlives the module
    whose test set it up (and that module's guard), as soon as it is set up."""
    threads = torch.get_num_threads()
    # registered before the fixture runs, so it runs after the fixture's own teardown
    fixturedef.addfinalizer(lambda: torch.set_num_threads(threads))
    try:
        return (yield)
    finally:
        if fixturedef.scope in ("package", "session"):
            torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def one_thread():
    """torch on one thread for a module's tests (``pytestmark =
    pytest.mark.usefixtures("one_thread")``): small steps on a shared 2-core machine thrash
    with more. The count is put back when the module ends (``pytest_fixture_setup``)."""
    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The offline copy of the corpora, for tests that read it directly
    (tests/corpus_host.py: ../shared/data beside the repo, $TRANSFORMER_TEST_CORPORA, or
    the test cache the run fetched them into from their hosts).

    Corpora that cannot be had skip the tests that need them only where a host cannot be
    reached, and never under CI (``CI`` set, as CI services and .ci/run do): there they
    fail, so a green run has run every test.
    """
    why = corpus_host.missing()
    if why is not None:
        if corpus_host.skipped():
            pytest.skip(why)
        pytest.fail(f"{why}; CI is set, so this fails instead of skipping"
                    if os.environ.get("CI") else why)
    return OFFLINE


@pytest.fixture
def records_host(tmp_path, monkeypatch):
    """A machine without a checkout (Colab, a pip install): no ``book/results``, a new
    ``HOME``, and the committed records served by a local stand-in for the repository's
    host (tests/record_host.py), which ``transformer.measuring.records`` fetches them from."""
    from record_host import RecordHost
    from transformer.measuring import records
    host = RecordHost(records.RESULTS)
    monkeypatch.setattr(records, "RESULTS", tmp_path / "no-checkout")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(records.URL_ENV, host.url)
    yield host
    host.close()


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"))])
def device(request) -> torch.device:
    """Where a device-aware test runs: the CPU always, and a CUDA GPU when there is one."""
    return torch.device(request.param)


# ------------------------------------------- the built site in a real browser
# (the tests marked `browser`: see pytest_collection_modifyitems below)
@pytest.fixture(scope="session")
def site_dir() -> Path:
    given = os.environ.get("BOOK_HTML")
    if given and (Path(given) / "index.html").is_file():
        return Path(given).resolve()
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        pytest.skip("jupyter-book is not installed (make setup)")
    if corpus_host.skipped():                       # the chapters read the corpora
        pytest.skip(f"the book is built from the corpora: {corpus_host.missing()}")
    shutil.rmtree(QUICK_OUT, ignore_errors=True)    # Sphinx would skip unchanged chapters
    env = {**os.environ, "BOOK_QUICK": "1", "OMP_NUM_THREADS": "1"}   # corpora: as above
    cmd = [str(jb), "build", str(REPO), "--path-output", str(QUICK_OUT), "-W", "--keep-going"]
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        pytest.fail(f"book build failed ({' '.join(cmd)}):\n{(run.stdout + run.stderr)[-6000:]}")
    return QUICK_OUT / "_build" / "html"


class _SiteFiles(StaticFiles):
    """Serves the site and records each request's path in ``served``. ``no-cache``: the
    browser's HTTP cache must ask again each time, so a file that is not requested came
    from the page's own cache (the Cache API), not from a heuristic freshness."""
    served: list[str] = []

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def send_head(self):
        self.served.append(urlparse(self.path).path)
        return super().send_head()


@pytest.fixture(scope="session")
def served() -> list[str]:
    """Every path the test server was asked for, in order (every browser, every worker)."""
    return _SiteFiles.served


@pytest.fixture(scope="session")
def base_url(site_dir):
    with LocalHost.static(site_dir, _SiteFiles) as host:
        yield host.url


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (make setup installs Debian's chromium as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


class OpenPage:
    """A page opened on the local server, with what it logged and what it asked for."""

    def __init__(self, browser, url: str, viewport=(1280, 900), init_script: str = ""):
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        if init_script:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.page.set_default_timeout(90_000)           # 2 shared cores, 4.8 MB of plotly.js
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.context.route("**/*", self._route)        # the page's and its workers' requests
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"
        self.page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
            ".every((d) => d.querySelector('svg.main-svg'))")
        # MathJax typesets asynchronously: wait for it where the page loads it.
        self.page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                           " ? MathJax.startup.promise.then(() => true) : false")

    def _route(self, route):
        url = route.request.url
        self.requests.append(url)
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture(scope="session")
def new_page(browser, base_url):
    """``new_page(path, **options)``: an :class:`OpenPage` the caller closes (for pages
    kept open across the tests of a module)."""
    return lambda path, **options: OpenPage(browser, f"{base_url}/{path}", **options)


@pytest.fixture
def open_page(browser, base_url):
    opened = []

    def _open(path: str, **options) -> OpenPage:
        p = OpenPage(browser, f"{base_url}/{path}", **options)
        opened.append(p)
        return p

    yield _open
    for p in opened:
        p.close()


# ------------------------------------------------------ which tests need the built site
@pytest.hookimpl(tryfirst=True)          # before `-m` deselects by the markers
def pytest_collection_modifyitems(items):
    """Every test that asks for a fixture of the built site (helpers.SITE_FIXTURES), directly
    or through another fixture, is marked ``browser``: ``make test-unit`` runs ``-m "not
    browser"`` and builds no book, and a new site test needs no marker written by hand."""
    from helpers import SITE_FIXTURES
    for item in items:
        if SITE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
    _skip_chapters_without_corpora(items)


def _skip_chapters_without_corpora(items) -> None:
    """The chapters under nbval that read the corpora skip, as the tests that need them do,
    where the corpora's hosts cannot be reached (never under CI: tests/corpus_host.py)."""
    if not corpus_host.skipped():
        return
    mark = pytest.mark.skip(reason=f"the chapter reads the corpora: {corpus_host.missing()}")
    for item in items:
        path = Path(str(item.path))
        if path.suffix == ".ipynb" and path.stem in READS_CORPORA:
            item.add_marker(mark)


# -------------------------------------------- the command line's toy corpus and runs
# (tests/test_cli_*.py)
@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> Path:
    from helpers import write_corpus
    return write_corpus(tmp_path_factory.mktemp("toy") / "corpus")


@pytest.fixture(scope="session")
def toy_runs(toy_corpus, tmp_path_factory) -> dict:
    """Two finished 3-update runs: "a", the toy run of ``train_args(toy_corpus, out)`` (which
    resumes it: vocabulary 120, d_model 32), and "b", another (vocabulary 100, d_model 16).
    A test that changes one works on a copy."""
    from helpers import train_args
    from transformer.tools import cli
    runs = {}
    for name, knobs in (("a", {}), ("b", {"vocab": 100, "d_model": 16})):
        out = tmp_path_factory.mktemp("runs") / name
        cli.main(train_args(toy_corpus, out, **knobs))
        runs[name] = out
    return runs
