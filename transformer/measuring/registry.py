"""The benchmark scripts under ``benchmarks/``, one row each: what each measures, the
command that runs it and the record it writes (``book/results/NAME.json``), with the
function that reads its latest figure; and where a script was before the folder was
grouped, for the commands the committed records keep."""
from __future__ import annotations


def _mean_bleu(variant: dict) -> float:
    """A variant of ``book_departures``'s valid BLEU, averaged over its seeds and corpora."""
    scores = [c["bleu"] for run in variant["runs"] for c in run["valid_beam4"].values()]
    return sum(scores) / len(scores)


def ratio(v: float) -> str:
    """A ratio as the tables show it: ``1.23x``."""
    return f"{v:.2f}x"


# The scripts under benchmarks/, one row each, in their groups (cpu/: the model on a CPU;
# book/: the book and its page; gpu/: the GPU path): script, what it measures, command,
# record, and the latest figure (a function of the record) or None for records not yet
# written. A `python -m` command takes `--record PATH`; a GPU script's record is made from
# what it leaves (benchmarks/README.md, "The GPU scripts").
BENCHMARKS = [
    ("cpu/train_throughput.py", "a training step: ours against torch.nn.Transformer and Marian",
     "python -m benchmarks.cpu.train_throughput", "train_throughput",
     lambda r: f"ours / torch {ratio(r['rows'][0]['ours_over_torch'])} (small, fp32)"),
    ("cpu/trainer_precision.py", "the trainer's tokens/s, fp32 and bf16",
     "python -m benchmarks.cpu.trainer_precision", "trainer_precision",
     lambda r: f"bf16 / fp32 {ratio(r['bf16_over_fp32'])}"),
    ("cpu/attention_kernel_speed.py", "CPU attention kernel: math against fused",
     "python -m benchmarks.cpu.attention_kernel_speed", "attention_kernel",
     lambda r: f"math {ratio(r['math_speedup'])} a tiny update"),
    ("cpu/compile_speed.py", "`--compile` against eager on a CPU",
     "python -m benchmarks.cpu.compile_speed", "compile_cpu",
     lambda r: f"compiled / eager {r['compiled_over_eager']:.2f} of the time"),
    ("cpu/step_profile.py", "where one update of the recipe `book` spends its time, by part "
     "(torch.profiler), fp32 and bf16", "python -m benchmarks.cpu.step_profile", "step_profile",
     lambda r: "matrix multiplies " + ", ".join(
         f"{sum(s for k, s in x['shares'].items() if k.endswith('matrix multiplies')):.0%}"
         f" ({p})" for p, x in r["precisions"].items()) + " of an update"),
    ("cpu/optimizer_speed.py", "Muon's cost per update",
     "python -m benchmarks.cpu.optimizer_speed", "optimizer_speed",
     lambda r: f"Muon / Adam {ratio(r['muon_over_adam_median'])}"),
    ("cpu/dropout_speed.py", "the dropout mask", "python -m benchmarks.cpu.dropout_speed",
     "dropout_speed", lambda r: f"{r['ms']['bf16']['bitwise AND']} ms against "
                                f"{r['ms']['bf16']['nn.Dropout']} (bf16)"),
    ("cpu/vocab_speed.py", "sentences/s at three vocabulary sizes, and their BPE training",
     "python -m benchmarks.cpu.vocab_speed", "vocab_speed",
     lambda r: ", ".join(f"{x['vocab']:,}: {x['sentences_per_s']}" for x in r["rows"])),
    ("cpu/host_memory.py", "resident memory of a CPU training run",
     "python -m benchmarks.cpu.host_memory [--jemalloc]", "host_memory",
     lambda r: " against ".join(f"{x['peak_gb']} GB" for x in r["rows"][::-1]) + " (jemalloc, glibc)"),
    ("cpu/thread_policy.py", "CPU training beside a busy process: threads and OpenMP's wait "
     "policy, and the trainer's adaptive threads", "python -m benchmarks.cpu.thread_policy",
     "thread_policy",
     lambda r: "beside a busy process: " + ", ".join(
         f"{x['threads']} thread{'s' * (x['threads'] > 1)} {x['wait_policy']} "
         f"{x['tokens_per_s']:,}" for one in r["sets"] for x in one["runs"]
         if x["busy_neighbour"] and x["wait_policy"] in ("default", "adaptive")) + " tokens/s"),
    ("cpu/prepare_speed.py", "a WMT14-sized corpus prepared once, then read by two processes",
     "python -m benchmarks.cpu.prepare_speed", "prepare_wmt14_scale",
     lambda r: f"{r['corpus']['pairs'] / 1e6:.1f}M pairs prepared in "
               f"{r['prepare']['seconds'] / 60:.0f} min; per reader "
               f"{max(x['peak_rss_mb'] for x in r['readers']):,} MB peak "
               f"({max(x['peak_private_mb'] for x in r['readers']):,} MB private), "
               f"{min(x['tokens_per_s'] for x in r['readers']) / 1e6:.1f}M tokens/s"),
    ("cpu/decode_speed.py", "KV-cached against recomputed decoding; beam against greedy",
     "python -m benchmarks.cpu.decode_speed", "decode_speed",
     lambda r: f"KV cache {ratio(r['rows'][0]['kv_cache_speedup'])}"),
    ("book/browser_speed.py", "the model in headless Chromium: download, latency and the "
     "page's frames while it translates, before and after (--label)", "python -m benchmarks.book.browser_speed --label after",
     "browser_speed",
     lambda r: f"{r['runs']['after']['model_bytes'] / 2**20:.1f} MiB, beam 4 "
               f"{r['runs']['after']['browser']['beam_ms']:.0f} ms"),
    ("book/page_training.py", "chapter 4's training panel in headless Chromium: time to 99% "
     "on reversal, the page's frames meanwhile, and its download", "python -m benchmarks.book.page_training", "page_training",
     lambda r: f"{r['seconds_to_target']:.1f} s ({r['steps_to_target']} steps), "
               f"{r['download_bytes_gzip'] / 2**20:.2f} MiB gzip"),
    ("book/capstone.py", "the capstone page's reference run: training time and greedy "
     "accuracy on held-out reversals", "python -m benchmarks.book.capstone", "capstone",
     lambda r: f"{r['lowest_accuracy']:.1%} of new sequences at worst, trained in "
               f"{r['slowest_train_s']:.0f} s at most"),
    ("book/weight_forms.py", "the page model's weights in int8 and fp16 against fp32",
     "python -m benchmarks.book.weight_forms", "weight_forms",
     lambda r: ", ".join(f"{f} {b / 2**20:.2f} MiB" for f, b in r["model_bytes"].items())),
    ("book/model.py", "the book's model on each corpus's test split",
     "python -m benchmarks.book.model", "book_model",
     lambda r: "; ".join(f"{c} {t['beam4']['bleu']} BLEU" for c, t in r["test"].items())),
    ("book/departures.py", "the recipe `book` with each departure set back to the paper's "
     "(Adam, post-norm, dropout 0.1), two seeds each, on the valid splits",
     "python -m benchmarks.book.departures --work DIR", "book_departures",
     lambda r: "; ".join(f"{v['name']} {_mean_bleu(v):.1f}" for v in r["variants"])
               + " valid BLEU"),
    ("book/doubt_quality.py", "the doubt note on labelled held-out translations",
     "python -m benchmarks.book.doubt_quality", "doubt",
     lambda r: f"{r['flagged_wrong']}/{r['wrong']} wrong, "
               f"{r['flagged_good']}/{r['good']} good flagged" + (
                   f" (dev set: {r['dev']['flagged_wrong']}/{r['dev']['wrong']}, "
                   f"{r['dev']['flagged_good']}/{r['dev']['good']})" if "dev" in r else "")),
    ("book/build.py", "`make book` from an empty run cache",
     "python -m benchmarks.book.build", "book_build",
     lambda r: f"{r['wall_s'] / 60:.1f} min ({r['precision']})"),
    ("quality/mutation.py", "mutation testing: the planted bugs each module's targeted tests "
     "catch (mutmut; Stryker for the page)", "python -m benchmarks.quality.mutation",
     "mutation",
     lambda r: ", ".join(f"{m.rsplit('/', 1)[-1]} {x['score']:.0%}" for m, runs in
                         r["modules"].items() for x in [list(runs.values())[-1]])),
    ("gpu/check.sh + gpu/check_record.py", "device tests and GPU throughput",
     "bash benchmarks/gpu/check.sh", "gpu_step", None),
    ("gpu/train.sh + gpu/train_record.py", "the base model on a GPU, torchrun, chapters 7 "
     "and 10", "bash benchmarks/gpu/train.sh", "gpu_train", None),
    ("gpu/table3.sh", "Table 3 at the GPU budget", "bash benchmarks/gpu/table3.sh",
     "table3_gpu", None),
]

# The scripts' paths before benchmarks/ was grouped by folder. A committed record keeps
# the command that measured it, as it was typed; this leads from such a command's script
# to today's (tests/test_results.py checks that every record's script is found).
MOVED = {f"benchmarks/{old}": f"benchmarks/{new}" for old, new in [
    *[(f"{name}.py", f"cpu/{name}.py") for name in (
        "train_throughput", "trainer_precision", "attention_kernel_speed", "compile_speed",
        "optimizer_speed", "dropout_speed", "vocab_speed", "host_memory", "prepare_speed",
        "decode_speed", "thread_policy")],
    ("book_build.py", "book/build.py"), ("book_model.py", "book/model.py"),
    ("browser_speed.py", "book/browser_speed.py"), ("weight_forms.py", "book/weight_forms.py"),
    ("page_training.py", "book/page_training.py"),
    ("gpu_check.sh", "gpu/check.sh"), ("gpu_train.sh", "gpu/train.sh"),
    ("gpu_table3.sh", "gpu/table3.sh"), ("gpu_common.sh", "gpu/common.sh"),
    ("gpu_throughput.py", "gpu/throughput.py"), ("gpu_record.py", "gpu/check_record.py"),
    ("gpu_train_record.py", "gpu/train_record.py"),
    ("gpu_train_steps.py", "gpu/train_steps.py")]}

GROUPS = ("cpu", "book", "gpu", "quality")       # the folders of benchmarks/
