"""The result records rendered: every table of measured figures in the docs comes from
here, never typed, one function per table, each returning Markdown (the records
themselves: :mod:`.records`; the benchmark scripts that write them: :mod:`.registry`).
The book's Results page (``book/appendix_results.ipynb``) shows these tables; the blocks
of ``README.md`` and ``benchmarks/README.md`` that quote them are rewritten by
:mod:`.blocks`.
"""
from __future__ import annotations

from pathlib import Path

from . import records
from .records import load
from .registry import BENCHMARKS, ratio as _x

SITE = "https://attention-book.github.io/transformer"


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table: its header row, then one row per list of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- the figures, one function per record ---------------------------------------------

def headline() -> str:
    """The README's one-line result."""
    tiny, anchors = load("tiny_recipe"), load("anchors")
    beam = tiny["test"]["beam4_alpha1.0"]
    others = " and ".join(f"{s['name']}'s {s['bleu']}" for s in anchors["systems"])
    return (f"**{beam['bleu']} BLEU** (chrF2 {beam['chrf']}) on Multi30k's English→German "
            f"test split after 30 minutes of training on two CPU cores (`make train-tiny`, "
            f"{tiny['params']:,} parameters); for scale, {others} on the same sentences.")


def recipes() -> str:
    """The recipes' test scores against the published anchors."""
    rows = []
    for name, target in (("tiny_recipe", "make train-tiny"), ("small_recipe", "make train-small")):
        r = load(name)
        beam_key = next(k for k in r["test"] if k.startswith("beam"))
        beam, greedy = r["test"][beam_key], r["test"]["greedy"]
        rows.append([f"`{target}` ({r['params']:,} parameters, {r['updates']:,} updates)",
                     f"**{beam['bleu']}** / {beam['chrf']}", f"{greedy['bleu']} / {greedy['chrf']}"])
    for s in load("anchors")["systems"]:
        rows.append([f"{s['name']} (published)", s["bleu"], ""])
    return markdown_table(["system", "test BLEU / chrF2, beam 4", "greedy"], rows)


def book_model() -> str:
    """The book's model before (captions only) and now, on both test splits."""
    from transformer.corpora import CorpusSpec
    rows = []
    for name, label in (("book_model_before", "before: the small preset, Multi30k alone"),
                        ("book_model", "now: recipe `book`")):
        r = load(name)
        run = r["run"]
        corpus = " + ".join(Path(part.name).name + (f" ×{part.times}" if part.times > 1 else "")
                            for part in CorpusSpec.parse(run["settings"]["corpus"]).parts)
        updates = f"{run['updates']:,} updates" if "updates" in run else "trained"
        what = f"{label} ({r['parameters']:,} parameters, {updates} on {corpus})"
        cells = [f"{r['test'][c]['beam4']['bleu']} / {r['test'][c]['beam4']['chrf']}"
                 if c in r["test"] else "" for c in ("multi30k-en-de", "tatoeba-en-de")]
        rows.append([what] + cells)
    return markdown_table(["model", "Multi30k test2016, BLEU / chrF2", "Tatoeba test, BLEU / chrF2"],
                  rows)


def book_mixture() -> str:
    """The book recipe's mixture, chosen on both corpora's valid splits."""
    r = load("book_mixture")
    return _valid_table("train split", [
        (f"Multi30k ×{x['multi30k_repeats']} + Tatoeba ×1"
         + (" (the recipe's)" if x["mixture"] == r["chosen"] else ""), x) for x in r["runs"]])


def book_dropout() -> str:
    """The book recipe's dropout (and the mixture again without it), chosen on both
    corpora's valid splits."""
    r = load("book_dropout")
    return _valid_table("run", [
        (f"dropout {x['dropout']}, Multi30k ×{x['multi30k_repeats']} + Tatoeba ×1"
         + (f", seed {x['seed']}" if x["seed"] != 1 else "")
         + (" (the recipe's)" if x.get("chosen") else ""), x) for x in r["runs"]])


def muon_and_adam() -> tuple[dict, dict]:
    """The recipe's run (book_dropout's chosen one, Muon) and the same with Adam."""
    muon = next(x for x in load("book_dropout")["runs"] if x.get("chosen"))
    return muon, load("book_optimizer")["runs"][0]


def book_optimizer() -> str:
    """The book recipe with Muon (its chosen run) and with the paper's Adam, on both
    corpora's valid splits."""
    muon, adam = muon_and_adam()
    return _valid_table("optimizer", [("Muon (the recipe's)", muon), ("Adam (the paper's)", adam)])


# The book recipe against the paper, one departure at a time (book_departures.json, written
# by benchmarks/book/departures.py). The book keeps a departure only where setting it back
# to the paper's loses more than the seed spread and at least DEPART_AT BLEU (issue rule:
# "larger than the seed spread and about 1 BLEU or more").
DEPART_AT = 1.0


def run_bleu(run: dict) -> float:
    """One run's valid BLEU, beam 4, averaged over the corpora it was scored on."""
    scores = [c["bleu"] for c in run["valid_beam4"].values()]
    return sum(scores) / len(scores)


def departure_verdicts() -> list[dict]:
    """For each departure of ``book_departures``: the runs with the paper's setting and the
    book's (each run's :func:`run_bleu`, by seed), the book's gain (the difference of the
    means), the seed spread (the larger difference between the two seeds of either setting),
    ``departs``: whether the gain is larger than the spread and at least DEPART_AT, and
    ``narrowly``: whether it departs but clears DEPART_AT by less than the spread."""
    variants = load("book_departures")["variants"]
    book = next(v for v in variants if v["departure"] is None)
    mean = lambda v: sum(map(run_bleu, v["runs"])) / len(v["runs"])          # noqa: E731
    spread = lambda v: max(map(run_bleu, v["runs"])) - min(map(run_bleu, v["runs"]))  # noqa: E731
    rows = []
    for v in variants:
        if v["departure"] is None:
            continue
        gain, noise = mean(book) - mean(v), max(spread(book), spread(v))
        departs = gain > noise and gain >= DEPART_AT
        rows.append({"departure": v["departure"], "paper": [run_bleu(r) for r in v["runs"]],
                     "book": [run_bleu(r) for r in book["runs"]], "gain": gain,
                     "spread": noise, "departs": departs,
                     "narrowly": departs and gain - DEPART_AT < noise})
    return rows


def _valid_table(first: str, runs: list[tuple[str, dict]]) -> str:
    """One row per (label, run) with the run's ``valid_beam4`` BLEU / chrF2 on each corpus."""
    corpora = {"multi30k-en-de": "Multi30k", "tatoeba-en-de": "Tatoeba"}
    return markdown_table([first] + [f"{name} valid, BLEU / chrF2" for name in corpora.values()],
                  [[label] + [f"{x['valid_beam4'][c]['bleu']} / {x['valid_beam4'][c]['chrf']}"
                              for c in corpora] for label, x in runs])


def train_throughput() -> str:
    r = load("train_throughput")
    rows = [[f"{x['preset']}, {x['precision']}", f"{x['ours']:,}", f"{x['torch']:,}",
             f"{x['marian']:,}", _x(x["ours_over_torch"]), _x(x["ours_over_marian"]),
             _x(x["ours_bf16_over_torch_fp32"]) if "ours_bf16_over_torch_fp32" in x else ""]
            for x in r["rows"]]
    return markdown_table(["preset, precision", "ours tok/s", "torch tok/s", "Marian tok/s",
                   "ours / torch", "ours / Marian", "ours bf16 / torch fp32"], rows)


def speed_held() -> str:
    """Ours' speed-ups before and after a change of the code (runs alternating), with the
    median of each side."""
    import statistics
    r = load("speed_held")
    keys = list(r["runs"][0]["ratios"])
    sides = {side: [x for x in r["runs"] if x["layout"] == side] for side in ("before", "after")}
    median = {side: {k: statistics.median(x["ratios"][k] for x in runs) for k in keys}
              for side, runs in sides.items()}
    header = ["speed-up"] + [f"{side} (`{runs[0]['code']}`), runs" for side, runs in sides.items()] \
        + ["after / before (medians)"]
    return markdown_table(header, [[k] + [" ".join(_x(x["ratios"][k]) for x in runs)
                                  for runs in sides.values()]
                           + [f"{median['after'][k] / median['before'][k]:.2f}"] for k in keys])


def precision() -> str:
    tp, no = load("trainer_precision"), load("bf16_without_instructions")
    return markdown_table(["CPU", "fp32 tok/s", "bf16 tok/s", "bf16 / fp32"], [
        ["with bf16 instructions (AVX512-BF16)", f"{tp['fp32_tokens_per_s']:,}",
         f"{tp['bf16_tokens_per_s']:,}", _x(tp["bf16_over_fp32"])],
        ["without (AVX2 only)", f"{no['fp32_tokens_per_s']:,}", f"{no['bf16_tokens_per_s']:,}",
         _x(no["bf16_tokens_per_s"] / no["fp32_tokens_per_s"])]])


def step_profile() -> str:
    """Each part's share of one training update of the recipe ``book``, per precision."""
    r = load("step_profile")
    runs = r["precisions"]
    rows = [["seconds per update (profiled)"] + [f"{x['seconds_per_update']:.3g}"
                                                  for x in runs.values()]]
    rows += [[part] + [f"{x['shares'][part]:.1%}" for x in runs.values()]
             for part in r["parts"] if any(x["shares"][part] for x in runs.values())]
    rows += [["load average, before / after"] + [
        f"{x['load_average_before'][0]} / {x['load_average_after'][0]}" for x in runs.values()]]
    return markdown_table(["part"] + list(runs), rows)


def speedups() -> str:
    """One row per measured speed-up or cost: what was compared and the ratio."""
    a, c, o = load("attention_kernel"), load("compile_cpu"), load("optimizer_speed")
    d, v = load("dropout_speed"), load("decode_speed")
    lo, hi = a["kernel_math_speedup_8_to_16_pieces"]
    rows = [
        ["attention kernel, CPU fp32: math over fused, a make train-tiny update",
         _x(a["math_speedup"]), f"kernel alone at 8-16 pieces: {lo}-{hi}x"],
        ["--compile over eager, a make train-tiny update",
         _x(1 / c["compiled_over_eager"]), f"compilation {c['warmup_s']:.0f} s, {c['graphs_compiled']} graphs"],
        ["Muon + Adam over Adam, time of an update", _x(o["muon_over_adam_median"]),
         f"median of {len(o['rounds'])} rounds"],
        ["CheapDropout over nn.Dropout, bf16, forward + backward",
         _x(d["ms"]["bf16"]["nn.Dropout"] / d["ms"]["bf16"]["bitwise AND"]),
         f"{d['ms']['bf16']['bitwise AND']} against {d['ms']['bf16']['nn.Dropout']} ms"],
    ] + [[f"KV cache over recomputing, greedy, {x['preset']} (`{x['command']}`)",
          _x(x["kv_cache_speedup"]), f"beam 4 costs {_x(x['beam4_over_greedy'])} greedy"]
         for x in v["rows"]]
    return markdown_table(["what", "ratio", "detail"], rows)


def vocab_speed() -> str:
    r = load("vocab_speed")
    return markdown_table(["BPE vocabulary", "s / update", "sentences / s", "ratio"],
                  [[f"{x['vocab']:,}", x["s_per_update"], x["sentences_per_s"], f"{x['ratio']:.3f}"]
                   for x in r["rows"]])


def memory() -> str:
    r = load("host_memory")
    return markdown_table(["allocator", "peak resident (VmHWM)", "median tok/s"],
                  [[x["allocator"], f"{x['peak_gb']} GB", f"{x['tokens_per_s']:,}"] for x in r["rows"]])


def browser() -> str:
    """The page's translator before issue #35 (fp32, on the page's thread) and now."""
    runs = load("browser_speed")["runs"]
    labels = [k for k in ("before", "after") if k in runs]
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    rows = [
        ("weights; where the search runs",
         lambda r: f"{r['weights']}; " + ("the page's thread" if r["page_code"] != "this tree"
                                          else "a Web Worker")),
        ("model download", lambda r: mib(r["model_bytes"])),
        ("runtime download (onnxruntime-web)", lambda r: mib(r["runtime_bytes"])),
        ("first visit: bytes downloaded", lambda r: mib(r["browser"]["downloaded_bytes"])),
        ("second visit: bytes downloaded",
         lambda r: mib(r["browser"]["second_visit_downloaded_bytes"])),
        ("button to a ready model", lambda r: f"{r['browser']['ready_s']:.1f} s"),
        ("a 15-word sentence, greedy / beam 4",
         lambda r: f"{r['browser']['greedy_ms']:.0f} / {r['browser']['beam_ms']:.0f} ms"),
        ("the same in Python (torch, fp32), greedy / beam 4",
         lambda r: f"{r['python']['greedy_ms']:.0f} / {r['python']['beam_ms']:.0f} ms")]
    return markdown_table(["what"] + labels, [[what] + [f(runs[k]) for k in labels] for what, f in rows])


def page_training() -> str:
    """Chapter 4's training panel in headless Chromium: its starting settings, the time and
    steps to 99% sequence accuracy on reversal, and what opening it downloads."""
    r = load("page_training")
    s, tf = r["settings"], r["tfjs"]
    mib = lambda b: f"{b / 2**20:.2f} MiB"
    return markdown_table(["what", "measured"], [
        ["task", f"reverse {s['length']} of {s['symbols']} symbols; batches of {s['batch']}, "
                 f"Adam at {s['lr']}"],
        ["the panel's starting model", f"{s['layers']}+{s['layers']} layers, {s['n_heads']} heads, "
                                       f"d_model {s['d_model']}, {s['positional']} positions "
                                       f"({r['parameters']:,} parameters)"],
        [f"training to {r['target_sequence_accuracy']:.0%} sequence accuracy (500 held-out "
         f"sequences)", f"{r['seconds_to_target']:.1f} s, {r['steps_to_target']} steps "
                        f"(median of {len(r['seconds_each'])} runs)"],
        ["download when the panel opens", f"{mib(r['download_bytes'])} "
                                          f"({mib(r['download_bytes_gzip'])} gzip-compressed)"],
        ["runtime", f"TensorFlow.js {tf['version']}, {tf['backend']}"
                    f"{' SIMD' if tf['simd'] else ''}, one thread, in a Web Worker"],
        ["browser", r["browser"]],
        ["load average (1 min) before / after", f"{r['load_average_before'][0]} / "
                                                f"{r['load_average_after'][0]}"]])


def weight_forms() -> str:
    """The page model's weight forms against fp32: download, greedy-id agreement, BLEU."""
    r = load("weight_forms")
    rows = []
    for form in r["model_bytes"]:
        cells = [form, f"{r['model_bytes'][form] / 2**20:.2f} MiB"]
        for split, e in r["splits"].items():
            f = e["forms"].get(form)
            cells.append(f"{f['greedy_agreement']:.1%} / {f['bleu_change']:+.2f}" if f
                         else f"(BLEU {e['bleu']['fp32']:.2f})")
        cells.append({True: "yes", False: "no"}.get(r["passes"].get(form), ""))
        rows.append(cells)
    c = r["criteria"]
    sentences = sorted({e["agreement_sentences"] for e in r["splits"].values()})
    return (f"A form keeps the translations when its greedy token ids equal the fp32 graphs' "
            f"on at least {c['greedy_agreement_at_least']:.0%} of the first "
            f"{', '.join(map(str, sentences))} test sentences of each split and its BLEU (beam "
            f"{r['beam_size']}, the whole split) moves by at most {c['bleu_change_at_most']}.\n\n"
            + markdown_table(["weights", "graphs + weights"]
                     + [f"{split}: greedy ids as fp32 / BLEU change" for split in r["splits"]]
                     + ["keeps the translations"], rows))


# The first `make book` on each kind of machine a reader has: its record, or None while
# no run has measured it.
FIRST_BUILDS = [("a 2-core CPU with bf16 instructions (AVX512-BF16 or AMX)", "book_build"),
                ("a 2-core CPU without them (AVX2 only)", "book_build_avx2"),
                ("a GPU", None)]


def book_build() -> str:
    """``make book`` from an empty run cache, on each kind of machine."""
    rows = []
    for kind, name in FIRST_BUILDS:
        if name is None or not records.exists(name):
            rows.append([kind, "not yet measured", "", "", ""])
            continue
        r = load(name)
        rows.append([kind, f"{r['wall_s'] / 60:.0f} min", f"{r['train_s'] / 60:.0f} min",
                     f"{r['updates']:,}", r["precision"]])
    return markdown_table(["machine", "`make book` from an empty run cache",
                   "of it: training the book's model", "updates", "precision"], rows)


def first_build() -> str:
    """One sentence: what the first build costs, from the records (README, chapter 7)."""
    measured = [(kind, load(name)) for kind, name in FIRST_BUILDS
                if name and records.exists(name)]
    unmeasured = [kind for kind, name in FIRST_BUILDS
                  if not name or not records.exists(name)]
    said = "; ".join(f"about {r['wall_s'] / 60:.0f} minutes on {kind}, training in "
                     f"{r['precision']}" for kind, r in measured)
    return (f"The first `make book` trains the book's model once (later builds reuse it): "
            f"{said}" + (f"; on {' or '.join(unmeasured)} not yet measured" if unmeasured else "")
            + f" ([the Results page]({SITE}/book/appendix_results.html#building-the-book-and-running-the-tests) names the "
            "machines).")


def thread_policy() -> str:
    """Training beside a busy process: tokens/s by threads and OpenMP wait policy."""
    r = load("thread_policy")
    runs = [run for one in r["sets"] for run in one["runs"]]
    cell = {}
    for run in runs:
        key = (run["threads"], run["wait_policy"], run["busy_neighbour"])
        cell.setdefault(key, []).append(run["tokens_per_s"])
    fmt = lambda xs: " / ".join(f"{x:,}" for x in xs) if xs else ""   # noqa: E731
    rows = [[threads, policy, fmt(cell.get((threads, policy, False), [])),
             fmt(cell.get((threads, policy, True), []))]
            for threads, policy in sorted({(t, p) for t, p, _ in cell})]
    return ("`train --recipe tiny`, target tokens/s (each run's median; a cell with two "
            "figures was measured twice):\n\n"
            + markdown_table(["threads", "OpenMP wait", "idle machine", "beside one busy process"], rows))


def prepare_scale() -> str:
    """A WMT14-sized corpus prepared once, then memory-mapped by two reading processes."""
    r = load("prepare_wmt14_scale")
    rows = [["prepare (BPE on a sample, token ids on disk)", f"{r['prepare']['seconds']:.0f} s",
             f"{r['prepare']['peak_rss_mb']:,} MB", ""]]
    rows += [[f"reader {i + 1} (every batch of an epoch)", f"{x['seconds']:.0f} s",
              f"{x['peak_rss_mb']:,} MB ({x['peak_private_mb']:,} MB private)",
              f"{x['tokens_per_s'] / 1e6:.1f}M"] for i, x in enumerate(r["readers"])]
    return (f"{r['corpus']['pairs']:,} sentence pairs, {r['corpus']['text_mb']:,} MB of text.\n\n"
            + markdown_table(["process", "time", "peak resident memory", "tokens / s"], rows))


def table3() -> str:
    r = load("table3")
    paper = lambda x, k: (x.get("paper") or {}).get(k, "")
    rows = [[x["row"], x["seed"], x["label"], f"{x['params'] / 1e6:.2f}M",
             "diverged" if x.get("diverged") else f"{x['dev_ppl']:.1f}",
             "" if x.get("diverged") else f"{x['dev_bleu']:.1f}", paper(x, "ppl"), paper(x, "bleu")]
            for x in r["rows"]]
    return markdown_table(["row", "seed", "setting", "params", "dev ppl", "dev BLEU",
                   "paper ppl", "paper BLEU"], rows)


def mutation() -> str:
    """The mutation runs (benchmarks/quality/mutation.py): for each module and run (before
    and after a round of new tests), its planted bugs caught and missed, and the score,
    caught / (caught + missed); an equivalent mutant (no caller can tell it apart) counts
    in neither."""
    rows = []
    for module, runs in load("mutation")["modules"].items():
        for label, x in runs.items():
            rows.append([f"`{module}`", label, x["killed"] + x["timeout"], x["survived"],
                         x["no tests"], x["equivalent"], x["total"],
                         "" if x["score"] is None else f"{x['score']:.0%}"])
    return markdown_table(["module", "run", "caught", "survived", "reached by no test", "equivalent",
                   "mutants", "score"], rows)


def build_times() -> str:
    r = load("build_times")
    return markdown_table(["target", "wall time", "note", "provenance"], [
        [f"`{e['target']}`", e["wall"], e["note"],
         f"{e['provenance']['cpu']}; commit {e['provenance']['commit']}; {e['provenance']['date']}"]
        for e in r["entries"]])


def benchmarks(group: str | None = None) -> str:
    """benchmarks/README.md's table of a group (cpu, book, gpu; all when None): one row per
    script, with its latest figure."""
    rows = []
    for script, what, command, name, figure in BENCHMARKS:
        if group and not script.startswith(f"{group}/"):
            continue
        if records.exists(name):
            rec = load(name)
            latest = figure(rec) if figure else "recorded"
            prov = (rec["sets"][-1]["provenance"] if "sets" in rec else rec.get("provenance")
                    or rec["runs"].get("after", list(rec["runs"].values())[-1])["provenance"])
            note = " (transcribed)" if "transcribed" in prov else ""
            latest += f"; {prov['date']}{note}"
        else:
            latest = "no record yet"
        rows.append([f"`{script}`", what, f"`{command} --record book/results/{name}.json`"
                     if command.startswith("python -m") else f"`{command}`",
                     f"`book/results/{name}.json`", latest])
    return markdown_table(["script", "measures", "command", "record", "latest figure"], rows)


# Every record the README, benchmarks/README.md or the Results page quotes.
QUOTED = ["tiny_recipe", "small_recipe", "anchors", "book_model_before", "book_model",
          "book_mixture", "book_dropout", "book_optimizer", "book_departures", "book_build", "weight_forms", "train_throughput",
          "speed_held", "trainer_precision",
          "bf16_without_instructions", "attention_kernel", "compile_cpu", "optimizer_speed",
          "dropout_speed", "decode_speed", "vocab_speed", "host_memory", "prepare_wmt14_scale",
          "browser_speed", "page_training",
          "table3", "build_times", "step_profile", "mutation"]


def missing_records() -> list[str]:
    """The records the benchmark scripts write that no run has written yet."""
    return [f"`book/results/{name}.json` ({script})" for script, _, _, name, _ in BENCHMARKS
            if not records.exists(name)]
