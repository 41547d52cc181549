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


def test_one_row_per_departure_of_the_recipe_and_the_corpus():
    assert list(table_rows(book_tables.book_departures())) == [*DEPARTURES["book"], "corpus"]
    assert set(book_tables.PAPER_SETTINGS) == {*DEPARTURES["book"], "corpus"}


def test_a_figure_in_the_table_is_the_records(records):
    path = records / "book_dropout.json"
    record = json.loads(path.read_text())
    chosen = next(x for x in record["runs"] if x.get("chosen"))
    assert f"none: {chosen['valid_beam4']['multi30k-en-de']['bleu']} / " in book_tables.book_departures()
    chosen["valid_beam4"]["multi30k-en-de"]["bleu"] = 99.9
    path.write_text(json.dumps(record))
    row = table_rows(book_tables.book_departures())["dropout"]
    assert "none: 99.9 / " in row and "`book_dropout`" in book_tables.book_departures()


def test_a_departure_without_a_record_says_so(records):
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


def test_the_optimizer_row_sets_adam_beside_muon_from_the_records(records):
    path = records / "book_optimizer.json"
    record = json.loads(path.read_text())
    row = table_rows(book_tables.book_departures())["optimizer"]
    adam = record["runs"][0]["valid_beam4"]
    assert f"Adam {adam['multi30k-en-de']['bleu']} / {adam['tatoeba-en-de']['bleu']}" in row
    record["runs"][0]["valid_beam4"]["tatoeba-en-de"]["bleu"] = 12.3
    path.write_text(json.dumps(record))
    assert " / 12.3 (one seed each)" in table_rows(book_tables.book_departures())["optimizer"]
    assert "| Adam (the paper's) | " in tables.book_optimizer()
