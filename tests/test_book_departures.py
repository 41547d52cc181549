"""Under the hood B's table of the book recipe's departures from the paper is rendered from
the package's DEPARTURES and the result records: one row per departure, each figure read
from a record, and "no record" where none measures it (never a typed number)."""
import json
import shutil

import pytest

from transformer.training.recipes import DEPARTURES
from transformer.measuring import records as result_records, tables
from transformer_book import book_tables


def table_rows(text: str) -> dict[str, str]:
    """The rows of the Markdown table in ``text`` by their first cell."""
    lines = [line for line in text.splitlines() if line.startswith("|")][2:]
    return {line.split("|")[1].strip().strip("`"): line for line in lines}


@pytest.fixture
def records(tmp_path, monkeypatch):
    """A copy of the result records that the renderer reads instead of the committed ones."""
    copy = tmp_path / "results"
    shutil.copytree(result_records.RESULTS, copy)
    monkeypatch.setattr(result_records, "RESULTS", copy)
    return copy


@pytest.fixture
def one_seed_records(records):
    """The records without the two-seed departures record: the optimizer's and dropout's
    rows fall back to the earlier one-seed records."""
    (records / "book_departures.json").unlink(missing_ok=True)
    return records


def test_one_row_per_departure_of_the_recipe_and_the_corpus():
    assert list(table_rows(book_tables.book_departures())) == [*DEPARTURES["book"], "corpus"]
    assert set(book_tables.PAPER_SETTINGS) == {*DEPARTURES["book"], "corpus"}


def test_a_figure_in_the_table_is_the_records(one_seed_records):
    records = one_seed_records
    path = records / "book_dropout.json"
    record = json.loads(path.read_text())
    chosen = next(x for x in record["runs"] if x.get("chosen"))
    assert f"none: {chosen['valid_beam4']['multi30k-en-de']['bleu']} / " in book_tables.book_departures()
    chosen["valid_beam4"]["multi30k-en-de"]["bleu"] = 99.9
    path.write_text(json.dumps(record))
    row = table_rows(book_tables.book_departures())["dropout"]
    assert "none: 99.9 / " in row and "`book_dropout`" in book_tables.book_departures()


def test_a_departure_without_a_record_says_so(one_seed_records):
    records = one_seed_records
    (records / "optimizer_speed.json").unlink()
    (records / "book_optimizer.json").unlink()
    rows = table_rows(book_tables.book_departures())
    assert rows["optimizer"].rstrip(" |").endswith("| no record")
    assert rows["warmup"].rstrip(" |").endswith("| no record")
    assert "no record" not in rows["dropout"]


def test_the_books_settings_are_read_from_the_recipe(monkeypatch):
    from transformer.training import recipes
    changed = recipes.recipe("book", warmup=1234)
    monkeypatch.setattr(recipes, "recipe", lambda name, **kw: changed)
    assert "| 1,234 updates |" in table_rows(book_tables.book_departures())["warmup"]


def test_chapter_7s_warm_up_table_is_the_table3_records(records):
    ppl = book_tables.norm_and_warmup()
    rows = {r["row"]: r for r in json.loads((records / "table3.json").read_text())["rows"]
            if r["seed"] == 1}
    assert ppl[("post-norm (the paper)", "none")] == rows["norm-post-nowarmup"]["dev_ppl"]
    assert ppl[("pre-norm", "warm-up")] == rows["norm-pre"]["dev_ppl"]
    assert f"| {rows['norm-pre-nowarmup']['dev_ppl']:.1f} |" in book_tables.norm_and_warmup_table().data


def test_without_a_checkout_the_tables_come_from_the_repository(records_host, monkeypatch):
    """On Colab the records are not installed: the same tables, from the repository's
    records (a local stand-in for its host here)."""
    fetched = book_tables.book_departures(), book_tables.norm_and_warmup_table().data
    assert "/book/results/table3.json" in records_host.requests
    monkeypatch.setattr(result_records, "RESULTS", records_host.folder)      # a checkout's
    assert (book_tables.book_departures(), book_tables.norm_and_warmup_table().data) == fetched


def test_the_optimizer_row_sets_adam_beside_muon_from_the_records(one_seed_records):
    records = one_seed_records
    path = records / "book_optimizer.json"
    record = json.loads(path.read_text())
    row = table_rows(book_tables.book_departures())["optimizer"]
    adam = record["runs"][0]["valid_beam4"]
    assert f"Adam {adam['multi30k-en-de']['bleu']} / {adam['tatoeba-en-de']['bleu']}" in row
    record["runs"][0]["valid_beam4"]["tatoeba-en-de"]["bleu"] = 12.3
    path.write_text(json.dumps(record))
    assert " / 12.3 (one seed each)" in table_rows(book_tables.book_departures())["optimizer"]
    assert "| Adam (the paper's) | " in tables.book_optimizer()


# ---- chapter 7: the book recipe against the paper, two seeds each (book_departures.json)

def departure_record(scores: dict[str, list[tuple[float, float]]]) -> dict:
    """A book_departures record: {variant: [(Multi30k, Tatoeba) valid BLEU of seed 1, 2]}."""
    departures = {"book": None, "adam": "optimizer", "post": "norm_position",
                  "drop01": "dropout"}
    provenance = {"commit": "test", "command": "test", "cpu": "test", "torch": "test",
                  "date": "test"}
    return {"provenance": provenance, "variants": [
        {"name": name, "departure": departures[name], "runs": [
            {"seed": seed, "valid_beam4": {"multi30k-en-de": {"bleu": m, "chrf": 0},
                                           "tatoeba-en-de": {"bleu": t, "chrf": 0}}}
            for seed, (m, t) in enumerate(runs, start=1)]}
        for name, runs in scores.items()]}


def expected_rows(record: dict) -> dict[str, list[str]]:
    """Chapter 7's cells computed here from the record: each run's BLEU the mean of its two
    corpora, the gain the difference of the two settings' means, the spread the larger
    difference between two seeds of one setting."""
    runs = {v["departure"]: [sum(c["bleu"] for c in r["valid_beam4"].values()) / 2
                             for r in v["runs"]] for v in record["variants"]}
    book = runs.pop(None)
    rows = {}
    for name, paper in runs.items():
        gain = sum(book) / 2 - sum(paper) / 2
        spread = max(max(book) - min(book), max(paper) - min(paper))
        rows[name] = [f"{paper[0]:.2f}, {paper[1]:.2f}", f"{book[0]:.2f}, {book[1]:.2f}",
                      f"{gain:+.2f}", f"{spread:.2f}",
                      ("departs, narrowly" if gain - 1.0 < spread else "departs: more")
                      if gain > spread and gain >= 1.0 else
                      "within the seed spread" if gain <= spread else "less than 1 BLEU"]
    return rows


def check_table(record: dict) -> None:
    rows = table_rows(book_tables.departures_measured())
    want = expected_rows(record)
    assert list(rows) == list(want)
    for name, (paper, book, gain, spread, verdict) in want.items():
        cells = [c.strip() for c in rows[name].split("|")[2:-1]]
        assert cells[0].endswith(f": {paper}") and cells[1].endswith(f": {book}"), cells
        assert cells[2:4] == [gain, spread] and cells[4].startswith(verdict), cells


def test_chapter_7s_departures_by_hand(records):
    """Worked by hand: Muon gains 35.675 - 34.3 = 1.375, more than the spread of 0.6 and 1
    BLEU, but clears 1 BLEU by 0.375, less than the spread: the book departs, narrowly;
    post-norm 0.225, inside the spread of 0.55; dropout 0.925, outside it but under 1."""
    record = departure_record({
        "book": [(35.0, 35.8), (36.3, 35.6)],            # 35.4, 35.95: mean 35.675, spread 0.55
        "adam": [(34.1, 33.9), (34.5, 34.7)],            # 34.0, 34.6: gain 1.375
        "post": [(35.5, 35.3), (35.9, 35.1)],            # 35.4, 35.5: gain 0.225
        "drop01": [(34.8, 34.6), (35.0, 34.6)]})         # 34.7, 34.8: gain 0.925
    (records / "book_departures.json").write_text(json.dumps(record))
    rows = table_rows(book_tables.departures_measured())
    assert [c.strip() for c in rows["optimizer"].split("|")[2:-1]][1:] == [
        "Muon + Adam: 35.40, 35.95", "+1.38", "0.60",
        "departs, narrowly: it clears 1 BLEU by less than the seed spread"]
    assert rows["optimizer"].split("|")[2].strip() == "Adam: 34.00, 34.60"
    assert "| +0.22 | 0.55 | within the seed spread |" in rows["norm_position"]
    assert "| +0.92 | 0.55 | less than 1 BLEU |" in rows["dropout"]   # 0.925 in binary: below
    check_table(record)
    # Adam 1 BLEU lower: a gain of 2.375 clears 1 BLEU by more than the spread
    record["variants"][1]["runs"] = departure_record({"adam": [(33.1, 32.9), (33.5, 33.7)]})[
        "variants"][0]["runs"]
    (records / "book_departures.json").write_text(json.dumps(record))
    assert "| +2.38 | 0.60 | departs: more than the seed spread and at least 1 BLEU |" in \
        table_rows(book_tables.departures_measured())["optimizer"]
    check_table(record)


def test_chapter_7s_departures_table_is_the_records():
    path = result_records.RESULTS / "book_departures.json"
    if not path.exists():
        pytest.skip("no book_departures record yet (benchmarks/book/departures.py writes it)")
    check_table(json.loads(path.read_text()))


def test_under_the_hood_bs_rows_read_the_two_seed_record(records):
    """Where the two-seed record measures a departure, Under the hood B's row quotes it (the
    same figures as chapter 7's table), not the one-seed records."""
    record = departure_record({
        "book": [(35.0, 35.8), (36.3, 35.6)], "adam": [(34.1, 33.9), (34.5, 34.7)],
        "post": [(35.5, 35.3), (35.9, 35.1)], "drop01": [(34.8, 34.6), (35.0, 34.6)]})
    (records / "book_departures.json").write_text(json.dumps(record))
    rows = table_rows(book_tables.book_departures())
    assert "the paper's 34.00, 34.60, the book's 35.40, 35.95; gain +1.38, seed spread 0.60" \
        in rows["optimizer"]
    assert "the paper's 35.40, 35.50" in rows["norm_position"] and "gain +0.22" in rows["norm_position"]
    assert "the paper's 34.70, 34.80" in rows["dropout"]
    assert "`book_departures`" in book_tables.book_departures()
