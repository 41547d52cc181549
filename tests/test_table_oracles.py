"""The Results page's tables (``transformer/measuring/tables.py``), cell by cell, against
the records in ``book/results/`` read here with plain ``json``: each expected cell is
worked out in the test (the field it shows, its rounding, a ratio or a sum done by hand),
never read back through the renderer, so that a swapped field, a wrong rounding, an
inverted ratio, a wrong record or a dropped row fails here. Where a record holds both a
figure and what it was computed from, the test also recomputes it (a median, a
difference, a verdict) to hold the figure the table shows.

Listed in ``tests/test_book_numbers.py``'s ``ORACLES`` under ``appendix_results.ipynb``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from transformer.measuring import records, tables

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "book" / "results"                 # read with json here, never through the book
MIB = 1024 * 1024


def record(name: str) -> dict:
    return json.loads((RECORDS / f"{name}.json").read_text(encoding="utf-8"))


def parse(markdown: str) -> tuple[list[str], list[list[str]]]:
    """A Markdown table's header and rows, each cell stripped; the text before the table
    (a sentence) is left out, and the separator row must be there."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert lines and all(line.endswith("|") for line in lines), markdown
    header, separator, *rows = [[c.strip() for c in line[1:-1].split("|")] for line in lines]
    assert set(separator) == {"---"} and len(separator) == len(header), lines[1]
    assert all(len(row) == len(header) for row in rows), markdown
    return header, rows


def preface(markdown: str) -> str:
    """The text a table function writes before its table."""
    return markdown.split("\n\n| ", 1)[0]


def x(value: float) -> str:
    """A ratio as the page shows it, two decimals and an x."""
    return "%.2fx" % value


def thousands(n: int) -> str:
    """An integer with commas between its groups of three digits, by hand."""
    digits = str(abs(n))
    groups = []
    while digits:
        digits, groups = digits[:-3], [digits[-3:], *groups]
    return ("-" if n < 0 else "") + ",".join(groups)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def test_thousands_and_median_by_hand():
    assert thousands(2349568) == "2,349,568" and thousands(909) == "909"
    assert thousands(1000) == "1,000" and thousands(4500000) == "4,500,000"
    assert median([3, 1, 2]) == 2 and median([1.55, 1.61]) == pytest.approx(1.58)


# ---------------------------------------------------------------------------- the models
def test_recipes():
    """Each recipe's beam 4 and greedy scores on its test split, then the published anchors."""
    expected = []
    for name, target in (("tiny_recipe", "make train-tiny"), ("small_recipe", "make train-small")):
        r = record(name)
        beams = [k for k in r["test"] if k.startswith("beam4")]
        assert len(beams) == 1, (name, list(r["test"]))
        beam, greedy = r["test"][beams[0]], r["test"]["greedy"]
        expected.append([f"`{target}` ({thousands(r['params'])} parameters, "
                         f"{thousands(r['updates'])} updates)",
                         f"**{beam['bleu']}** / {beam['chrf']}",
                         f"{greedy['bleu']} / {greedy['chrf']}"])
    expected += [[f"{s['name']} (published)", str(s["bleu"]), ""]
                 for s in record("anchors")["systems"]]
    assert parse(tables.recipes()) == (
        ["system", "test BLEU / chrF2, beam 4", "greedy"], expected)


def corpus_by_hand(text: str) -> str:
    """A run's corpus setting (``/path/a*2+/path/b*1`` or one folder) as the table names it:
    each folder's last name, ``×N`` where it is repeated."""
    parts = []
    for part in text.split("+"):
        folder, star, times = part.partition("*")
        times = int(times) if star else 1
        parts.append(folder.rstrip("/").split("/")[-1] + (f" ×{times}" if times > 1 else ""))
    return " + ".join(parts)


def test_book_model():
    """The book's model before and now: what it is, then beam 4 BLEU / chrF2 on each test
    split (a corpus the record did not score is an empty cell)."""
    expected = []
    for name, label in (("book_model_before", "before: the small preset, Multi30k alone"),
                        ("book_model", "now: recipe `book`")):
        r = record(name)
        run = r["run"]
        updates = f"{thousands(run['updates'])} updates" if "updates" in run else "trained"
        cells = []
        for corpus in ("multi30k-en-de", "tatoeba-en-de"):
            beam = r["test"].get(corpus, {}).get("beam4")
            cells.append(f"{beam['bleu']} / {beam['chrf']}" if beam else "")
        expected.append([f"{label} ({thousands(r['parameters'])} parameters, {updates} on "
                         f"{corpus_by_hand(run['settings']['corpus'])})", *cells])
    assert parse(tables.book_model()) == (
        ["model", "Multi30k test2016, BLEU / chrF2", "Tatoeba test, BLEU / chrF2"], expected)


VALID_HEADER = ["Multi30k valid, BLEU / chrF2", "Tatoeba valid, BLEU / chrF2"]


def valid_cells(run: dict) -> list[str]:
    return [f"{run['valid_beam4'][c]['bleu']} / {run['valid_beam4'][c]['chrf']}"
            for c in ("multi30k-en-de", "tatoeba-en-de")]


def test_book_mixture():
    """One row per mixture, the recipe's (the record's ``chosen``) marked, once."""
    r = record("book_mixture")
    expected = [[f"Multi30k ×{run['multi30k_repeats']} + Tatoeba ×1"
                 + (" (the recipe's)" if run["mixture"] == r["chosen"] else ""), *valid_cells(run)]
                for run in r["runs"]]
    assert sum("(the recipe's)" in row[0] for row in expected) == 1
    assert parse(tables.book_mixture()) == (["train split", *VALID_HEADER], expected)


def test_book_dropout():
    """One row per run: its dropout and mixture, its seed where not the first, the
    recipe's (``chosen``) marked once."""
    r = record("book_dropout")
    expected = []
    for run in r["runs"]:
        label = f"dropout {run['dropout']}, Multi30k ×{run['multi30k_repeats']} + Tatoeba ×1"
        if run["seed"] != 1:
            label += f", seed {run['seed']}"
        if run.get("chosen") is True:
            label += " (the recipe's)"
        expected.append([label, *valid_cells(run)])
    assert sum("(the recipe's)" in row[0] for row in expected) == 1
    assert parse(tables.book_dropout()) == (["run", *VALID_HEADER], expected)


def test_book_optimizer():
    """Muon is book_dropout's chosen run (the baseline book_optimizer.json names), Adam
    book_optimizer.json's run."""
    adam_record = record("book_optimizer")
    assert adam_record["baseline"] == {"record": "book_dropout", "run": "chosen"}
    [muon] = [run for run in record("book_dropout")["runs"] if run.get("chosen")]
    [adam] = adam_record["runs"]
    assert adam["optimizer"] == "adam" and (adam["seed"], adam["dropout"]) == (muon["seed"], muon["dropout"])
    assert parse(tables.book_optimizer()) == (["optimizer", *VALID_HEADER], [
        ["Muon (the recipe's)", *valid_cells(muon)], ["Adam (the paper's)", *valid_cells(adam)]])


# ---------------------------------------------------------------------------- speed
def test_train_throughput():
    """Each preset and precision: the three tokens/s and the record's medians of paired
    ratios, which agree with the ratio of the tokens/s to within 10%."""
    expected = []
    for row in record("train_throughput")["rows"]:
        for field, over in (("ours_over_torch", "torch"), ("ours_over_marian", "marian")):
            assert row[field] == pytest.approx(row["ours"] / row[over], rel=0.1), (row, field)
        bf16 = row.get("ours_bf16_over_torch_fp32")
        expected.append([f"{row['preset']}, {row['precision']}", thousands(row["ours"]),
                         thousands(row["torch"]), thousands(row["marian"]),
                         x(row["ours_over_torch"]), x(row["ours_over_marian"]),
                         "" if bf16 is None else x(bf16)])
    assert parse(tables.train_throughput()) == (
        ["preset, precision", "ours tok/s", "torch tok/s", "Marian tok/s", "ours / torch",
         "ours / Marian", "ours bf16 / torch fp32"], expected)


def test_speed_held():
    """Each speed-up: the runs of the code before and after, in the record's order, and
    the median after over the median before, worked out here."""
    r = record("speed_held")
    before = [run for run in r["runs"] if run["layout"] == "before"]
    after = [run for run in r["runs"] if run["layout"] == "after"]
    assert len(before) + len(after) == len(r["runs"]) and before and after
    expected = []
    for key in r["runs"][0]["ratios"]:
        change = median([run["ratios"][key] for run in after]) / \
            median([run["ratios"][key] for run in before])
        expected.append([key, " ".join(x(run["ratios"][key]) for run in before),
                         " ".join(x(run["ratios"][key]) for run in after), "%.2f" % change])
    assert parse(tables.speed_held()) == (
        ["speed-up", f"before (`{before[0]['code']}`), runs", f"after (`{after[0]['code']}`), runs",
         "after / before (medians)"], expected)


def test_precision():
    """fp32 and bf16 tokens/s on a CPU with bf16 instructions and on one without; the
    second row's ratio is worked out here (its record keeps fp32 over bf16)."""
    tp, no = record("trainer_precision"), record("bf16_without_instructions")
    assert "avx512_bf16" in tp["provenance"]["cpu"] and "AVX2 only" in no["provenance"]["cpu"]
    assert tp["bf16_over_fp32"] == pytest.approx(tp["bf16_tokens_per_s"] / tp["fp32_tokens_per_s"],
                                                 abs=0.01)
    without = no["bf16_tokens_per_s"] / no["fp32_tokens_per_s"]
    assert without == pytest.approx(1 / no["fp32_over_bf16"], rel=0.01)
    assert parse(tables.precision()) == (["CPU", "fp32 tok/s", "bf16 tok/s", "bf16 / fp32"], [
        ["with bf16 instructions (AVX512-BF16)", thousands(tp["fp32_tokens_per_s"]),
         thousands(tp["bf16_tokens_per_s"]), x(tp["bf16_over_fp32"])],
        ["without (AVX2 only)", thousands(no["fp32_tokens_per_s"]),
         thousands(no["bf16_tokens_per_s"]), x(without)]])


def test_step_profile():
    """Seconds per update to three figures, each part's share to a tenth of a percent in
    the record's order of parts (a part no precision spent time in left out), and the
    one-minute load before and after; the shares of each precision sum to one."""
    r = record("step_profile")
    runs = r["precisions"]
    for name, run in runs.items():
        assert sum(run["shares"].values()) == pytest.approx(1, abs=0.002), name
        assert set(run["shares"]) == set(r["parts"]), name
    expected = [["seconds per update (profiled)",
                 *("%.3g" % run["seconds_per_update"] for run in runs.values())]]
    for part in r["parts"]:
        if any(run["shares"][part] != 0 for run in runs.values()):
            expected.append([part, *(f"{run['shares'][part]:.1%}" for run in runs.values())])
    expected.append(["load average, before / after", *(
        f"{run['load_average_before'][0]} / {run['load_average_after'][0]}" for run in runs.values())])
    assert parse(tables.step_profile()) == (["part", *runs], expected)


def test_step_profile_leaves_out_a_part_no_precision_spent_time_in(tmp_path, monkeypatch):
    r = record("step_profile")
    for run in r["precisions"].values():
        run["shares"]["Adam"] = 0
    copied = copy_records(tmp_path, monkeypatch)
    (copied / "step_profile.json").write_text(json.dumps(r), encoding="utf-8")
    _, rows = parse(tables.step_profile())
    assert [row[0] for row in rows[1:-1]] == [p for p in r["parts"] if p != "Adam"]


def test_speedups():
    """Each measured speed-up, recomputed here from what the record measured where it
    keeps that: the updates' seconds (attention kernel, --compile), the rounds' ratios
    (Muon), the dropout's milliseconds."""
    a, c, o = record("attention_kernel"), record("compile_cpu"), record("optimizer_speed")
    d, v = record("dropout_speed"), record("decode_speed")
    math_speedup = a["update_s"]["flash"] / a["update_s"]["math"]
    assert x(math_speedup) == x(a["math_speedup"])
    compiled = c["eager_s"] / c["compiled_s"]                     # eager time over compiled
    muon = median([r["muon_s"] / r["adam_s"] for r in o["rounds"]])
    assert x(muon) == x(o["muon_over_adam_median"])
    ms = d["ms"]["bf16"]
    lo, hi = a["kernel_math_speedup_8_to_16_pieces"]
    expected = [
        ["attention kernel, CPU fp32: math over fused, a make train-tiny update",
         x(math_speedup), f"kernel alone at 8-16 pieces: {lo}-{hi}x"],
        ["--compile over eager, a make train-tiny update", x(compiled),
         f"compilation {round(c['warmup_s'])} s, {c['graphs_compiled']} graphs"],
        ["Muon + Adam over Adam, time of an update", x(muon), f"median of {len(o['rounds'])} rounds"],
        ["CheapDropout over nn.Dropout, bf16, forward + backward",
         x(ms["nn.Dropout"] / ms["bitwise AND"]), f"{ms['bitwise AND']} against {ms['nn.Dropout']} ms"],
    ] + [[f"KV cache over recomputing, greedy, {row['preset']} (`{row['command']}`)",
          x(row["kv_cache_speedup"]), f"beam 4 costs {x(row['beam4_over_greedy'])} greedy"]
         for row in v["rows"]]
    assert expected[:4] == [
        [expected[0][0], "1.23x", "kernel alone at 8-16 pieces: 2.06-3.66x"],
        [expected[1][0], "1.12x", "compilation 52 s, 6 graphs"],
        [expected[2][0], "1.06x", "median of 5 rounds"],
        [expected[3][0], "4.29x", "0.568 against 2.436 ms"]]
    assert parse(tables.speedups()) == (["what", "ratio", "detail"], expected)


def test_vocab_speed():
    """Each vocabulary: seconds per update and sentences/s as recorded, the ratio to three
    decimals (it is sentences/s over the first row's, to within the rounding of the
    sentences/s the record keeps)."""
    rows = record("vocab_speed")["rows"]
    for row in rows:
        assert row["ratio"] == pytest.approx(row["sentences_per_s"] / rows[0]["sentences_per_s"],
                                             abs=0.005), row
    assert parse(tables.vocab_speed()) == (
        ["BPE vocabulary", "s / update", "sentences / s", "ratio"],
        [[thousands(row["vocab"]), str(row["s_per_update"]), str(row["sentences_per_s"]),
          "%.3f" % row["ratio"]] for row in rows])


def test_memory():
    rows = record("host_memory")["rows"]
    expected = [[row["allocator"], f"{row['peak_gb']} GB", thousands(row["tokens_per_s"])]
                for row in rows]
    assert parse(tables.memory()) == (["allocator", "peak resident (VmHWM)", "median tok/s"],
                                      expected)


def test_prepare_scale():
    """The corpus's size, then the preparation and each reader: seconds rounded, peak
    memory (and a reader's private part) in MB, tokens/s in millions; a reader's tokens/s
    is its tokens over its seconds, to within the rounding of the seconds."""
    r = record("prepare_wmt14_scale")
    for reader in r["readers"]:
        assert reader["tokens_per_s"] == pytest.approx(reader["tokens"] / reader["seconds"], rel=0.02)
    markdown = tables.prepare_scale()
    assert preface(markdown) == (f"{thousands(r['corpus']['pairs'])} sentence pairs, "
                                 f"{thousands(r['corpus']['text_mb'])} MB of text.")
    expected = [["prepare (BPE on a sample, token ids on disk)", f"{round(r['prepare']['seconds'])} s",
                 f"{thousands(r['prepare']['peak_rss_mb'])} MB", ""]]
    expected += [[f"reader {i} (every batch of an epoch)", f"{round(reader['seconds'])} s",
                  f"{thousands(reader['peak_rss_mb'])} MB ({thousands(reader['peak_private_mb'])} MB private)",
                  "%.1fM" % (reader["tokens_per_s"] / 1_000_000)]
                 for i, reader in enumerate(r["readers"], start=1)]
    assert parse(markdown) == (["process", "time", "peak resident memory", "tokens / s"], expected)


def test_thread_policy():
    """Every run of every set, grouped by threads and wait policy (sorted), idle and beside
    a busy process, a cell's runs in the order measured."""
    r = record("thread_policy")
    cells: dict = {}
    for one in r["sets"]:
        for run in one["runs"]:
            cells.setdefault((run["threads"], run["wait_policy"]), {False: [], True: []})[
                run["busy_neighbour"]].append(thousands(run["tokens_per_s"]))
    expected = [[str(threads), policy, " / ".join(cells[threads, policy][False]),
                 " / ".join(cells[threads, policy][True])] for threads, policy in sorted(cells)]
    assert [row[:2] for row in expected] == [["1", "default"], ["1", "passive"], ["2", "adaptive"],
                                             ["2", "default"], ["2", "passive"], ["2", "spin-20k"]]
    markdown = tables.thread_policy()
    assert preface(markdown).startswith("`train --recipe tiny`, target tokens/s")
    assert parse(markdown) == (["threads", "OpenMP wait", "idle machine", "beside one busy process"],
                               expected)


# ---------------------------------------------------------------------------- the page
def test_browser():
    """The page's translator before and after: weights and where the search runs, the
    downloads in MiB (the first visit's is the model's and the runtime's), the time to a
    ready model and the sentence's times, in the browser and in Python."""
    runs = record("browser_speed")["runs"]
    labels = [label for label in ("before", "after") if label in runs]
    assert labels == ["before", "after"]

    def mib(n: int) -> str:
        return "%.1f MiB" % (n / MIB)

    columns = []
    for label in labels:
        run, page, python = runs[label], runs[label]["browser"], runs[label]["python"]
        assert page["downloaded_bytes"] == run["model_bytes"] + run["runtime_bytes"], label
        where = "a Web Worker" if run["page_code"] == "this tree" else "the page's thread"
        columns.append([f"{run['weights']}; {where}", mib(run["model_bytes"]),
                        mib(run["runtime_bytes"]), mib(page["downloaded_bytes"]),
                        mib(page["second_visit_downloaded_bytes"]), "%.1f s" % page["ready_s"],
                        "%.0f / %.0f ms" % (page["greedy_ms"], page["beam_ms"]),
                        "%.0f / %.0f ms" % (python["greedy_ms"], python["beam_ms"])])
    assert columns[0][0] == "fp32; the page's thread" and columns[1][0] == "fp16; a Web Worker"
    what = ["weights; where the search runs", "model download", "runtime download (onnxruntime-web)",
            "first visit: bytes downloaded", "second visit: bytes downloaded",
            "button to a ready model", "a 15-word sentence, greedy / beam 4",
            "the same in Python (torch, fp32), greedy / beam 4"]
    assert parse(tables.browser()) == (
        ["what", *labels], [[w, *(column[i] for column in columns)] for i, w in enumerate(what)])


def test_page_training():
    """Chapter 4's panel: its settings, the median of its runs' seconds to the target (the
    record's figure is that median), steps, the download in MiB, the runtime, the
    browser and the load."""
    r = record("page_training")
    s, tf = r["settings"], r["tfjs"]
    assert r["seconds_to_target"] == median(r["seconds_each"])
    assert r["target_sequence_accuracy"] == s["target"] and r["accuracy_at_stop"] >= s["target"]
    expected = [
        ["task", f"reverse {s['length']} of {s['symbols']} symbols; batches of {s['batch']}, "
                 f"Adam at {s['lr']}"],
        ["the panel's starting model", f"{s['layers']}+{s['layers']} layers, {s['n_heads']} heads, "
                                       f"d_model {s['d_model']}, {s['positional']} positions "
                                       f"({thousands(r['parameters'])} parameters)"],
        [f"training to {round(100 * r['target_sequence_accuracy'])}% sequence accuracy (500 "
         f"held-out sequences)", "%.1f s, %d steps (median of %d runs)"
         % (median(r["seconds_each"]), r["steps_to_target"], len(r["seconds_each"]))],
        ["download when the panel opens", "%.2f MiB (%.2f MiB gzip-compressed)"
         % (r["download_bytes"] / MIB, r["download_bytes_gzip"] / MIB)],
        ["runtime", f"TensorFlow.js {tf['version']}, {tf['backend']}" + (" SIMD" if tf["simd"] else "")
         + ", one thread, in a Web Worker"],
        ["browser", r["browser"]],
        ["load average (1 min) before / after",
         f"{r['load_average_before'][0]} / {r['load_average_after'][0]}"]]
    assert parse(tables.page_training()) == (["what", "measured"], expected)


def test_weight_forms():
    """Each weight form: its size in MiB, on each split its greedy agreement and its BLEU
    change (the change worked out here as its BLEU less fp32's), fp32's own BLEU in its
    row, and whether it keeps the translations, decided here from the criteria (every
    split's agreement at least the bar, its change at most the bar either way)."""
    r = record("weight_forms")
    c = r["criteria"]
    rows = []
    for form, size in r["model_bytes"].items():
        cells, keeps = [form, "%.2f MiB" % (size / MIB)], True
        for split in r["splits"].values():
            if form == "fp32":
                assert form not in split["forms"]
                cells.append("(BLEU %.2f)" % split["bleu"]["fp32"])
                continue
            f = split["forms"][form]
            change = f["bleu"] - split["bleu"]["fp32"]
            assert change == pytest.approx(f["bleu_change"], abs=1e-9)
            cells.append("%.1f%% / %+.2f" % (100 * f["greedy_agreement"], change))
            keeps &= f["greedy_agreement"] >= c["greedy_agreement_at_least"] and \
                abs(change) <= c["bleu_change_at_most"]
        if form == "fp32":
            assert form not in r["passes"]
            cells.append("")
        else:
            assert r["passes"][form] is keeps, form
            cells.append("yes" if keeps else "no")
        rows.append(cells)
    markdown = tables.weight_forms()
    sentences = sorted({split["agreement_sentences"] for split in r["splits"].values()})
    assert preface(markdown) == (
        f"A form keeps the translations when its greedy token ids equal the fp32 graphs' on at "
        f"least {round(100 * c['greedy_agreement_at_least'])}% of the first "
        f"{', '.join(str(n) for n in sentences)} test sentences of each split and its BLEU (beam "
        f"{r['beam_size']}, the whole split) moves by at most {c['bleu_change_at_most']}.")
    assert parse(markdown) == (
        ["weights", "graphs + weights",
         *(f"{split}: greedy ids as fp32 / BLEU change" for split in r["splits"]),
         "keeps the translations"], rows)


# ---------------------------------------------------------------------------- building
def copy_records(tmp_path: Path, monkeypatch, leave_out: tuple[str, ...] = ()) -> Path:
    """The committed records copied into ``tmp_path`` (less ``leave_out``), which the
    renderers then read."""
    for path in RECORDS.glob("*.json"):
        if path.stem not in leave_out:
            shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    return tmp_path


BUILD_HEADER = ["machine", "`make book` from an empty run cache",
                "of it: training the book's model", "updates", "precision"]


def build_row(name: str) -> list[str]:
    r = record(name)
    return [f"{round(r['wall_s'] / 60)} min", f"{round(r['train_s'] / 60)} min",
            thousands(r["updates"]), r["precision"]]


def test_book_build():
    """The first build on a CPU with bf16 instructions (book_build.json), on one without
    (book_build_avx2.json), and on a GPU (not yet measured): minutes rounded, updates,
    precision."""
    assert "avx512_bf16" in record("book_build")["provenance"]["cpu"]
    assert "bf16" not in record("book_build_avx2")["provenance"]["cpu"]
    header, rows = parse(tables.book_build())
    assert header == BUILD_HEADER
    machines = [row[0] for row in rows]
    assert "with bf16 instructions" in machines[0] and "without" in machines[1]
    assert "GPU" in machines[2] and len(machines) == 3
    assert [row[1:] for row in rows] == [build_row("book_build"), build_row("book_build_avx2"),
                                         ["not yet measured", "", "", ""]]


def test_book_build_says_which_machine_is_not_yet_measured(tmp_path, monkeypatch):
    copy_records(tmp_path, monkeypatch, leave_out=("book_build_avx2",))
    _, rows = parse(tables.book_build())
    assert [row[1:] for row in rows] == [build_row("book_build"), ["not yet measured", "", "", ""],
                                         ["not yet measured", "", "", ""]]


def test_build_times():
    r = record("build_times")
    expected = [[f"`{e['target']}`", e["wall"], e["note"],
                 f"{e['provenance']['cpu']}; commit {e['provenance']['commit']}; {e['provenance']['date']}"]
                for e in r["entries"]]
    assert parse(tables.build_times()) == (["target", "wall time", "note", "provenance"], expected)


def missing_by_hand(results: Path) -> list[str]:
    """Of the records the benchmark scripts write (registry.BENCHMARKS: script and record
    name), those with no file in ``results``, looked for here."""
    from transformer.measuring.registry import BENCHMARKS
    return [f"`book/results/{name}.json` ({script})" for script, _, _, name, _ in BENCHMARKS
            if not (results / f"{name}.json").is_file()]


def test_missing_records(tmp_path, monkeypatch):
    """The records no run has written: today's, and, with two more taken away, those
    too, in the scripts' order."""
    today = missing_by_hand(RECORDS)
    assert tables.missing_records() == today
    copy_records(tmp_path, monkeypatch, leave_out=("vocab_speed", "page_training"))
    missing = tables.missing_records()
    assert missing == missing_by_hand(tmp_path)
    assert "`book/results/vocab_speed.json` (cpu/vocab_speed.py)" in missing
    assert "`book/results/page_training.json` (book/page_training.py)" in missing
    assert len(missing) == len(today) + 2
