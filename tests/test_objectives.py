"""Every chapter of the learning path opens with its learning objectives, and the book's
first page marks a route through the chapters with the same times.

* The learning path is the parts of ``_toc.yml`` before the optional "Under the hood" one.
  Each numbered chapter there (``NN_*.ipynb``) has, as the cell right after its title cell,
  one admonition titled "Learning objectives": "After this chapter you can:", 3 to 5
  bullets, and "**Time:** about R minutes to read; E more for the exercises." Another page
  of those parts (a capstone page without a number) is not required to have the block; if
  it has one, it must have the same form (its exercise time may be left out).
* The first page (``book/intro.md``), section "A route through the book", has a table with
  one row per numbered chapter whose reading and exercise times are the chapter's own. The
  core route's stated total is the sum of its rows' reading times and lies between 3 and 4
  hours; the whole path's stated totals are the sums of all rows. Every section that the
  route says can wait is a heading of the chapter it names, and every other page of the
  learning path is named in the route by its title.

Reads ``_toc.yml``, the notebooks and the first page only; executes nothing.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
OPTIONAL_PART = "Under the hood"
NUMBERED = re.compile(r"^\d\d_")
ROUTE_HEADING = "## A route through the book"
BLOCK = re.compile(
    r"\A:::\{admonition\} Learning objectives\n:class: tip\n\n"
    r"After this chapter you can:\n\n"
    r"(?P<bullets>(?:\* [^\n]+\n(?:  [^\n]+\n)*)+)\n"
    r"\*\*Time:\*\* about (?P<read>\d+) minutes to read"
    r"(?:; (?P<exercises>\d+) more for the exercises)?\.\n"
    r":::\Z")
ROW = re.compile(r"^\| \[(?P<number>\d+)\. [^\]]+\]\((?P<page>[\w.-]+)\.ipynb\) \| "
                 r"(?P<route>core|next|second read) \| (?P<read>\d+) min \| "
                 r"(?P<exercises>\d+) min \|$", re.M)
DURATION = r"(\d+ hours?(?: \d+ minutes)?|\d+ minutes)"
CORE_TOTAL = re.compile(r"\*\*The core route\*\*[^:]*: about " + DURATION + " of reading")
PATH_TOTAL = re.compile(r"The whole learning path takes about " + DURATION +
                        " of reading, and " + DURATION + " more for all of its exercises")
SKIP_ITEM = re.compile(r"^\* chapter (\d+): (.+)$", re.M)


def learning_pages(toc: dict | None = None) -> list[str]:
    """The pages (``book/...``, no suffix) of the parts of the toc before the optional one."""
    toc = toc if toc is not None else yaml.safe_load((REPO / "_toc.yml").read_text())
    pages = []
    for part in toc["parts"]:
        if OPTIONAL_PART in part.get("caption", ""):
            break
        pages += [chapter["file"] for chapter in part["chapters"]]
    return pages


def numbered(pages: list[str]) -> list[str]:
    return [p for p in pages if NUMBERED.match(Path(p).name)]


def notebook(page: str) -> dict:
    return json.loads((REPO / f"{page}.ipynb").read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else text


def objectives(nb: dict, exercises_required: bool = True) -> tuple[int, int | None]:
    """(reading minutes, exercise minutes) from the chapter's objectives block, which must be
    the markdown cell right after the title cell and the only such block."""
    cells = nb["cells"]
    assert cells and cells[0]["cell_type"] == "markdown" and source(cells[0]).startswith("# "), \
        "the first cell is not the chapter's title"
    blocks = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
              and "{admonition} Learning objectives" in source(c)]
    assert blocks == [1], f"Learning objectives blocks at cells {blocks}, not at cell 1 only"
    found = BLOCK.match(source(cells[1]))
    assert found, ("cell 1 is not of the form ':::{admonition} Learning objectives', "
                   "':class: tip', 'After this chapter you can:', bullets, '**Time:** ...', "
                   f"':::':\n{source(cells[1])}")
    bullets = re.findall(r"^\* ", found["bullets"], flags=re.M)
    assert 3 <= len(bullets) <= 5, f"{len(bullets)} learning objectives, not 3 to 5"
    assert found["exercises"] or not exercises_required, "no time for the exercises"
    return int(found["read"]), int(found["exercises"]) if found["exercises"] else None


def route_section(text: str) -> str:
    start = text.index(ROUTE_HEADING)
    rest = text[start + len(ROUTE_HEADING):]
    end = min([i for i in (rest.find("\n## "), rest.find("```{tableofcontents}")) if i >= 0],
              default=len(rest))
    return rest[:end]


def minutes(duration: str) -> int:
    hours = re.search(r"(\d+) hours?", duration)
    mins = re.search(r"(\d+) minutes", duration)
    return (int(hours[1]) * 60 if hours else 0) + (int(mins[1]) if mins else 0)


def route(text: str) -> dict:
    """The route of the first page: its rows (page -> number, route, reading, exercises),
    its stated totals in minutes, and the sections it says can wait (chapter -> names)."""
    section = route_section(text)
    rows = {}
    for m in ROW.finditer(section):
        assert m["page"] not in rows, f"{m['page']} has two rows"
        rows[m["page"]] = (int(m["number"]), m["route"], int(m["read"]), int(m["exercises"]))
    flat = " ".join(section.split())
    core, whole = CORE_TOTAL.search(flat), PATH_TOTAL.search(flat)
    assert core and whole, "the route states no core total or no whole-path totals"
    skips = {int(n): re.findall(r"\*([^*]+)\*", items) for n, items in SKIP_ITEM.findall(section)}
    return {"rows": rows, "core": minutes(core[1]), "read": minutes(whole[1]),
            "exercises": minutes(whole[2]), "skips": skips, "text": section}


def route_problems(rt: dict, times: dict[str, tuple[int, int | None]]) -> list[str]:
    """What in the route disagrees with the chapters' own times (page -> times)."""
    problems = []
    for page, (read, exercises) in times.items():
        if page not in rt["rows"]:
            problems.append(f"{page}: no row in the route")
            continue
        number, _, r_read, r_exercises = rt["rows"][page]
        if number != int(page[:2]):
            problems.append(f"{page}: listed as chapter {number}")
        if (r_read, r_exercises) != (read, exercises):
            problems.append(f"{page}: the route says {r_read} + {r_exercises} min, the chapter "
                            f"{read} + {exercises}")
    problems += [f"{page}: a row for no chapter of the learning path"
                 for page in rt["rows"] if page not in times]
    core = sum(read for _, kind, read, _ in rt["rows"].values() if kind == "core")
    if core != rt["core"]:
        problems.append(f"the core route's rows add up to {core} min, the text says {rt['core']}")
    if not 180 <= rt["core"] <= 240:
        problems.append(f"the core route takes {rt['core']} min, not 3 to 4 hours")
    for key, column in (("read", 2), ("exercises", 3)):
        total = sum(row[column] for row in rt["rows"].values())
        if total != rt[key]:
            problems.append(f"the rows' {key} add up to {total} min, the text says {rt[key]}")
    return problems


def headings(nb: dict) -> set[str]:
    return {h.strip() for c in nb["cells"] if c["cell_type"] == "markdown"
            for h in re.findall(r"^#{2,3} (.+)$", source(c), flags=re.M)}


PAGES = learning_pages()
CHAPTERS = numbered(PAGES)


def intro() -> str:
    return (REPO / "book" / "intro.md").read_text(encoding="utf-8")


def test_the_learning_path_is_read_from_the_toc():
    names = [Path(p).name for p in CHAPTERS]
    assert names[0] == "01_introduction" and "12_conclusion" in names, names
    assert len(names) >= 12 and not [p for p in PAGES if "hood" in p or "appendix" in p], PAGES


@pytest.mark.parametrize("page", CHAPTERS, ids=[Path(p).name for p in CHAPTERS])
def test_each_chapter_opens_with_its_learning_objectives(page):
    objectives(notebook(page))


def test_other_pages_of_the_learning_path_have_well_formed_objectives_if_any():
    """A page without a number (the capstone) need not have the block; one that has it
    has the chapters' form, and the route names the page by its title."""
    text = " ".join(route_section(intro()).split())
    for page in PAGES:
        if page in CHAPTERS or not (REPO / f"{page}.ipynb").is_file():
            continue
        nb = notebook(page)
        if any("{admonition} Learning objectives" in source(c) for c in nb["cells"]):
            objectives(nb, exercises_required=False)
        title = source(nb["cells"][0]).splitlines()[0].lstrip("#").strip()
        assert title in text, f"{page}: the route does not name {title!r}"


def test_the_route_lists_every_chapter_with_its_own_times():
    times = {Path(p).name: objectives(notebook(p)) for p in CHAPTERS}
    problems = route_problems(route(intro()), times)
    assert not problems, "\n".join(problems)


def test_the_sections_the_route_skips_are_in_their_chapters():
    rt = route(intro())
    assert rt["skips"], "the route names no section to skip on a first read"
    by_number = {int(Path(p).name[:2]): p for p in CHAPTERS}
    for number, names in rt["skips"].items():
        found = headings(notebook(by_number[number]))
        missing = [n for n in names if n not in found]
        assert not missing, f"chapter {number} has no section {missing}"


def test_the_route_names_the_building_route():
    text = " ".join(route_section(intro()).split())
    assert "*Your turn*" in text and "[Your Transformer](your_transformer.ipynb)" in text
    for number in range(3, 9):
        assert f"(chapter {number}," in text, number


# ------------------------------------------------------------------ the checks themselves
def test_the_objectives_check_sees_a_missing_or_malformed_block():
    good = notebook(CHAPTERS[2])
    assert objectives(good)
    nb = json.loads(json.dumps(good))
    del nb["cells"][1]                                                      # no block
    with pytest.raises(AssertionError, match="not at cell 1"):
        objectives(nb)
    nb = json.loads(json.dumps(good))
    nb["cells"].insert(1, nb["cells"].pop(2))                               # moved down
    with pytest.raises(AssertionError, match="not at cell 1"):
        objectives(nb)
    for change, message in ((lambda s: s.replace("* ", "* a;\n* b;\n* c;\n* ", 1), "not 3 to 5"),
                            (lambda s: s.replace("; 20 more for the exercises", ""),
                             "no time for the exercises"),
                            (lambda s: s.replace("minutes to read", "min to read"), "form")):
        nb = json.loads(json.dumps(good))
        nb["cells"][1]["source"] = change(source(nb["cells"][1]))
        with pytest.raises(AssertionError, match=message):
            objectives(nb)


def test_the_route_check_sees_a_time_that_disagrees():
    text = intro()
    times = {Path(p).name: objectives(notebook(p)) for p in CHAPTERS}
    assert not route_problems(route(text), times)
    planted = text.replace("| core | 30 min | 20 min |", "| core | 25 min | 20 min |", 1)
    assert any("03_attention" in p for p in route_problems(route(planted), times))
    assert any("core route's rows" in p for p in route_problems(route(planted), times))
    shifted = dict(times, **{"05_positional": (times["05_positional"][0] + 5,
                                               times["05_positional"][1])})
    assert any("05_positional" in p for p in route_problems(route(text), shifted))
    missing = "\n".join(line for line in text.splitlines() if "(12_conclusion.ipynb)" not in line)
    assert any("12_conclusion: no row" in p for p in route_problems(route(missing), times))


def test_the_toc_reading_stops_at_the_optional_part_and_keeps_a_capstone():
    toc = {"parts": [{"caption": "The model", "chapters": [{"file": "book/01_x"}]},
                     {"caption": "Training", "chapters": [{"file": "book/08_y"},
                                                          {"file": "book/your_transformer"}]},
                     {"caption": "Under the hood (optional)", "chapters": [{"file": "book/h"}]}]}
    pages = learning_pages(toc)
    assert pages == ["book/01_x", "book/08_y", "book/your_transformer"]
    assert numbered(pages) == ["book/01_x", "book/08_y"]
