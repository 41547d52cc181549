"""What several test files share: small corpora written to disk, the toy model and the toy
training run (its settings, its command line and a trainer handed its parts), the command
line run in process with its exit status and output, and the GPU scripts rehearsed on the
CPU."""
from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import torch

from transformer.batching import BatchIterator
from transformer.config import ModelConfig
from transformer.fast import FastTransformer
from transformer.tools import cli
from transformer.training.command import train_command
from transformer.training.config import TrainConfig
from transformer.training.loop import Trainer
from transformer.training.optimizers import make_optimizer

BOOK = Path(__file__).resolve().parents[1] / "book"
# The chapters a reader opens (each with its Colab install cell): the learning path's
# numbered chapters, the capstone (the learner's own parts assembled) and the optional
# part's "Under the hood" chapters.
CAPSTONE = BOOK / "your_transformer.ipynb"
CHAPTERS = (sorted(BOOK.glob("[0-9][0-9]_*.ipynb")) + [CAPSTONE]
            + sorted(BOOK.glob("hood_*.ipynb")))

# The fixtures of the built site (tests/conftest.py): a test that asks for one, directly or
# through another fixture, is marked `browser` there.
SITE_FIXTURES = frozenset({"site_dir", "base_url", "browser", "open_page", "new_page", "served"})

# How long a wait for an event gives up: a hang guard, so that a test whose event never
# comes fails instead of hanging the run; never a bound on how fast anything is (the suite
# asserts no durations: tests/test_suite.py; timings are benchmarks').
HANG_S = 600


def wait_until(ready, what: str, every: float = 0.02):
    """Poll ``ready()`` until it returns something true, and return that. ``ready`` may
    itself assert (that the process it waits on is still running, say). Fails saying
    ``what`` never happened only after :data:`HANG_S` seconds: the suite's one clock read
    (tests/test_suite.py allows it here)."""
    hung = time.monotonic() + HANG_S
    while not (got := ready()):
        assert time.monotonic() < hung, f"{what}: not after {HANG_S} s (hung?)"
        time.sleep(every)
    return got


class StandInModel(torch.nn.Module):
    """The tests' stand-in for a model in a search (what ``transformer.decoding.SearchModel``
    names): its next token's scores are written down, ``scores(prefix, source)`` -> V
    logits or log-probabilities, ``prefix`` the output so far (BOS first) and ``source``
    the sentence's ids without padding (EOS last). ``cfg`` is the toy model's, for its ids
    and length only; the scores come in ``dtype``. (The "Your turn" check has its own,
    ``transformer.your_turn.search.ScriptedModel``: a learner has no tests/.)"""

    def __init__(self, scores, vocab: int, max_len: int = 32, dtype=torch.float32):
        super().__init__()
        self.scores, self.dtype = scores, dtype
        self.cfg = toy_config(vocab_size=vocab, max_len=max_len)

    def source_mask(self, src):
        return (src != self.cfg.pad_id)[:, None, None, :]

    def encode(self, src, src_mask):
        return src.double()                               # the memory is the source itself

    def decode(self, tgt_in, memory, src_mask):
        out = torch.zeros(*tgt_in.shape, self.cfg.vocab_size, dtype=self.dtype)
        for b, prefix in enumerate(tgt_in.tolist()):
            source = [int(i) for i in memory[b] if int(i) != self.cfg.pad_id]
            out[b, -1] = torch.as_tensor(self.scores(prefix, source), dtype=self.dtype)
        return out

    def project(self, states):
        return states


EN = "the a dog cat man woman runs sits on in under green red house tree big small".split()
DE = "der die das Hund Katze Mann Frau läuft sitzt auf im unter grünen roten Haus Baum".split()


def write_pairs(folder: Path, split: str, pairs, gz: bool = False) -> Path:
    """``split`` of a corpus folder: ``{split}.src`` (English) and ``{split}.tgt`` (German),
    one sentence a line, gzip-compressed when ``gz``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for side, i in (("src", 0), ("tgt", 1)):
        text = "".join(p[i] + "\n" for p in pairs)
        if gz:
            with gzip.open(folder / f"{split}.{side}.gz", "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (folder / f"{split}.{side}").write_text(text, encoding="utf-8")
    return folder


def write_corpus(folder: Path, n_train=300, n_valid=20, seed=0) -> Path:
    """A toy English-German corpus (train, valid and test) of random 3-9 word sentences."""
    rng = random.Random(seed)
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_valid)):
        pairs = []
        for _ in range(n):
            k = rng.randint(3, 9)
            pairs.append((" ".join(rng.choice(EN) for _ in range(k)) + ".",
                          " ".join(rng.choice(DE) for _ in range(k)) + "."))
        write_pairs(folder, split, pairs)
    return Path(folder)


# --------------------------------------------------------------- the toy model and run
# The one toy of the tests: the paper's model (post-norm, shared embeddings, dropout 0.1)
# shrunk to run in milliseconds on a CPU: two layers a side, width 32, four heads. A test
# that needs another size says so with an override.
def toy_shape(d_model=32, heads=4, layers=2, **overrides) -> dict:
    """The toy model's :class:`ModelConfig` fields: width ``d_model`` (``d_ff`` twice it),
    ``heads`` heads, ``layers`` layers in each stack, then ``overrides``."""
    return {"d_model": d_model, "n_heads": heads, "d_ff": 2 * d_model,
            "n_encoder_layers": layers, "n_decoder_layers": layers, **overrides}


def toy_config(vocab_size=60, **knobs) -> ModelConfig:
    """The toy :class:`ModelConfig` (:func:`toy_shape`'s knobs and any field)."""
    return ModelConfig(vocab_size=vocab_size, **toy_shape(**knobs))


def toy_run(corpus, out, updates=3, vocab=120, d_model=32, heads=4, layers=2, model=None,
            **settings) -> TrainConfig:
    """The toy training run: the toy model (``d_model``, ``heads``, ``layers``, and
    ``model``'s ModelConfig fields) on ``corpus`` into ``out``, ``updates`` updates of 400
    tokens with a vocabulary of ``vocab`` pieces, fp32, a checkpoint every 2 updates (the
    last 2 kept), no BLEU, no progress bar; ``settings``: any other TrainConfig field (a
    field named there wins over the knob that sets it)."""
    toy = dict(corpus=str(corpus), out_dir=str(out), vocab_size=vocab, max_updates=updates,
               max_tokens=400, update_tokens=400, save_every=2, keep_last=2, warmup=10,
               precision="fp32", log_every=1, eval_bleu_sentences=0, progress=False,
               model_overrides=toy_shape(d_model, heads, layers, **(model or {})))
    return TrainConfig(**{**toy, **settings})


def train_args(corpus, out, **knobs) -> list[str]:
    """The ``train`` command of :func:`toy_run` (``python -m transformer`` + these, or
    ``cli.main(these)``), ``--corpus`` and ``--out`` first, both as given."""
    args = train_command(toy_run(corpus, out, **knobs), out=str(out))[6:]
    if "--corpus" in args:
        del args[args.index("--corpus"):args.index("--corpus") + 2]
    return ["train", "--corpus", str(corpus), "--out", str(out), *args]


def toy_pairs(n=64, vocab_size=60, lengths=(3, 16), seed=0) -> tuple[list, list]:
    """``n`` random token-id pairs (no special ids), each side ``lengths`` long (inclusive):
    batches of many shapes."""
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(lengths[0], lengths[1] + 1, (n, 2), generator=gen).tolist()
    src = [torch.randint(4, vocab_size, (s,), generator=gen).tolist() for s, _ in sizes]
    tgt = [torch.randint(4, vocab_size, (t,), generator=gen).tolist() for _, t in sizes]
    return src, tgt


def toy_trainer(cfg: TrainConfig, model: ModelConfig | None = None, n_pairs=64, seed=0,
                device="cpu") -> Trainer:
    """A :class:`Trainer` handed its parts: the toy model (``model``, else
    :func:`toy_config`) on ``device``, ``n_pairs`` :func:`toy_pairs`, batched by
    ``cfg.max_tokens``; no run folder."""
    net = FastTransformer(model or toy_config()).to(device)
    batches = BatchIterator(*toy_pairs(n_pairs, net.cfg.vocab_size, seed=seed), cfg.max_tokens,
                            seed=cfg.seed)
    return Trainer(net, make_optimizer(net), batches, cfg=cfg)


def run_cli(capsys, argv) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``python -m transformer *argv``, run in process (a
    bug in the package: status 1, its traceback and a line asking for a report)."""
    try:
        cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The one ``error:`` line of ``err``, which holds no traceback."""
    lines = [line for line in err.splitlines() if line.startswith("error:")
             or ": error:" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def gpu_dry_run(script: str, out: Path, data: Path, *options: str, timeout: int = 600):
    """``bash benchmarks/gpu/SCRIPT --dry-run OPTIONS`` on this CPU, writing into ``out``,
    corpora from ``data``: the completed process and its log (``out/log.txt``)."""
    env = {**os.environ, "OUT": str(out), "PY": sys.executable,
           "TRANSFORMER_DATA": str(data), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(["bash", f"benchmarks/gpu/{script}", "--dry-run", *options],
                            cwd=Path(__file__).resolve().parents[1], env=env,
                            capture_output=True, text=True, timeout=timeout)
    log = (out / "log.txt").read_text() if (out / "log.txt").is_file() else result.stderr
    return result, log


# The chapters whose code reads the corpora (loads one, trains or reuses the book's run, or
# runs the ablation on Multi30k), by notebook name: tests/conftest.py skips them where the
# corpora cannot be had, and tests/test_suite.py holds the list to the chapters. (Here, not
# in conftest.py: a full run imports book/conftest.py under the same module name.)
READS_CORPORA = frozenset({"02_data", "07_training", "08_decoding", "09_attention_explorer",
                           "10_full_model", "11_table3", "hood_in_the_page"})
