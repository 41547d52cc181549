"""The browser tests' probes (``tests/js/probes/NAME.js``, read by ``site_checks.probe``):
each is one function expression, and whether an element is shown is asked of one predicate,
``shown`` (``tests/js/probes/lib/shown.js``), which a probe names on a ``/* global shown */``
line."""
import json
import re
import subprocess

from site_checks import HELPERS, PROBES, probe, with_helpers

NAMES = sorted(p.stem for p in PROBES.glob("*.js"))

# Probes that read a page's styles for visibility without ``shown``: name -> why.
OWN_QUESTION = {
    "past_the_edge": "what is laid out past the screen's edge, seen or not: a transparent "
                     "element widens the page all the same",
}


def test_every_probe_is_one_function_expression_with_its_helpers():
    assert "shown" in with_helpers("/* global shown */\n(a) => shown(a)")
    assert with_helpers("() => 1") == "() => 1"
    sources = {name: probe(name) for name in NAMES}
    check = ("const sources = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
             "const bad = Object.keys(sources).filter((n) => {"
             " try { return typeof new Function('return (' + sources[n] + ')')() !== 'function'; }"
             " catch { return true; } });"
             "process.stdout.write(JSON.stringify(bad));")
    result = subprocess.run(["node", "-e", check], input=json.dumps(sources), text=True,
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_whether_an_element_is_shown_has_one_home():
    own = re.compile(r"\bshown\s*=|function\s+shown\b|\.(?:visibility|opacity)\b")
    for name in NAMES:
        text = (PROBES / f"{name}.js").read_text(encoding="utf-8")
        code = "\n".join(line for line in text.splitlines() if not line.startswith("//"))
        if name not in OWN_QUESTION:
            assert not own.search(code), f"{name}.js asks what is shown itself: use shown"
        if re.search(r"\bshown\b", code):
            assert "/* global shown */" in code, name
    assert [p.stem for p in HELPERS.glob("*.js")] == ["shown"]
    assert set(OWN_QUESTION) <= set(NAMES)


CASES = """
<style>text { font-size: 12px; }</style>
<a data-k="seen" href="#">a link</a>
<a data-k="hidden" href="#" style="visibility: hidden">hidden</a>
<a data-k="none" href="#" style="display: none">no box</a>
<a data-k="transparent" href="#" style="opacity: 0">transparent</a>
<span data-k="empty-box" style="display: inline-block; width: 0"></span>
<input data-k="field" type="search">
<svg width="300" height="200">
  <text data-k="seen-text" x="10" y="20">words</text>
  <text data-k="no-words" x="10" y="40">  </text>
  <text data-k="no-fill" x="10" y="60" style="fill: rgba(0, 0, 0, 0)">clear</text>
  <text data-k="fill-opacity" x="10" y="80" fill-opacity="0">clear</text>
  <text data-k="tiny" x="10" y="100" style="font-size: 2px">tiny</text>
  <g style="display: none"><text data-k="in-hidden-group" x="10" y="120">gone</text></g>
</svg>
"""


def test_shown_tells_what_the_reader_sees(browser):
    page = browser.new_page()
    try:
        page.set_content(CASES)
        seen = page.evaluate(with_helpers(
            "/* global shown */\n"
            "() => Array.from(document.querySelectorAll('[data-k]')).filter(shown)"
            ".map((e) => e.dataset.k)"))
    finally:
        page.close()
    assert seen == ["seen", "field", "seen-text"]
