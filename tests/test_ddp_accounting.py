"""DDP's token accounting, under ``torchrun --nproc_per_node 2`` on gloo.

Section 5.1: "Each training batch contained a set of sentence pairs containing approximately
25000 source tokens and 25000 target tokens." ``--update-tokens`` is that figure for the
whole update, however many processes share it: each of N ranks trains ``accum`` micro-batches
of ``--max-tokens``, ``accum * N * max_tokens = update_tokens``. tests/ddp_probe.py records
what every rank of a real run trained on; here those records must show

* the target tokens of an update, summed over the ranks, are ``--update-tokens`` within one
  micro-batch, and are what the update's loss is divided by;
* the ranks train on disjoint shares of the epoch, which together are the whole epoch;
* the run equals one process with the same update size: the same batches in each update,
  the same losses, gradients and final weights, within float rounding;
* an epoch whose last update would leave a rank without a micro-batch ends the same way on
  every rank (the run finishes, its ranks agree), dropping fewer than N batches.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import processes
from helpers import toy_run, write_pairs
from transformer.data import load_corpus
from transformer.tokenizer import Tokenizer
from transformer.training.config import TrainConfig
from transformer.training.run_data import batch_iterators

REPO = Path(__file__).resolve().parents[1]
TORCHRUN = Path(sys.executable).parent / "torchrun"
WORLD = 2
MAX_TOKENS, UPDATE_TOKENS = 256, 1024       # 4 micro-batches an update: 2 on each rank
WORDS = ["die", "Katze", "Hund", "sieht", "eine", "Haus", "grosse", "kleine", "rote", "rennt",
         "und", "schläft", "Vogel", "Baum"]

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not beside this Python")


def random_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Sentences of seven words, each its own 'translation'. Every word is one piece of the
    vocabulary (:func:`vocabulary`), so every micro-batch holds 32 pairs of 8 tokens a side
    (EOS included): the slots of ``--max-tokens`` filled on the target side as on the source
    side, whatever the order of the epoch."""
    rng = np.random.default_rng(seed)
    sentences = [" ".join(rng.choice(WORDS, size=7)) for _ in range(n)]
    return [(s, s) for s in sentences]


def config(corpus: Path, out: Path, **overrides) -> TrainConfig:
    """A toy run without dropout (one process and two must see the same numbers), in fp32,
    one epoch."""
    return toy_run(corpus, out, **{"updates": None, "vocab": 100, "model": {"dropout": 0.0},
                                   "max_tokens": MAX_TOKENS, "update_tokens": UPDATE_TOKENS,
                                   "max_epochs": 1, "warmup": 4, "threads": 1,
                                   "save_every": 1000, "keep_last": 1, "seed": 5, **overrides})


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory) -> Path:
    """One BPE vocabulary for every run here, trained on all the pairs any run uses."""
    folder = tmp_path_factory.mktemp("vocab")
    pairs = random_pairs(1000)
    path = folder / "spm.model"
    tokenizer = Tokenizer.train([t for p in pairs for t in p], path, vocab_size=100, seed=5)
    assert {len(ids) for ids in tokenizer.encode_batch([p[0] for p in pairs])} == {7}
    return path


def epoch_batches(cfg: TrainConfig, tokenizer: Tokenizer) -> int:
    """How many micro-batches the first epoch of ``cfg``'s run has (as the trainer builds it)."""
    train = load_corpus(cfg.corpus, "train")
    valid = load_corpus(cfg.corpus, "valid")
    return len(batch_iterators(cfg, tokenizer, train, valid)[0].batches(0))


def corpus_ending_with(remainder: int, folder: Path, vocabulary: Path) -> Path:
    """A corpus of 150 to 400 pairs whose epoch's batches leave ``remainder`` micro-batches
    after its whole updates (of ``WORLD * accum`` micro-batches)."""
    tokenizer, per_update = Tokenizer.load(vocabulary), UPDATE_TOKENS // MAX_TOKENS
    pairs = random_pairs(1000)
    for n in range(150, 400, 7):
        corpus = write_pairs(folder / f"n{n}", "train", pairs[:n])
        write_pairs(corpus, "valid", pairs[:20])
        if epoch_batches(config(corpus, folder / "unused"), tokenizer) % per_update == remainder:
            return corpus
        shutil.rmtree(corpus)
    raise AssertionError(f"no corpus size gives an epoch ending {remainder} micro-batch(es) "
                         f"after its last whole update")


def probe(cfg: TrainConfig, vocabulary: Path, out: Path, world: int | None,
          **env) -> list[dict]:
    """Run tests/ddp_probe.py on ``cfg`` alone (``world`` None) or under torchrun, with the
    environment variables ``env``; the records of each rank."""
    out.mkdir(parents=True)
    settings = out / "config.json"
    settings.write_text(json.dumps(dataclasses.asdict(cfg)))
    script = [str(REPO / "tests" / "ddp_probe.py"), str(settings), str(vocabulary), str(out)]
    cmd = ([str(TORCHRUN), "--standalone", "--nproc_per_node", str(world)] if world else
           [sys.executable]) + script
    env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    done = processes.run(cmd, cwd=REPO, env=env, timeout=180)   # ~10 s; a hang guard
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world or 1)]
    for r, record in enumerate(ranks):
        record["model"] = torch.load(out / f"model{r}.pt", weights_only=True)
    return ranks


@pytest.fixture(scope="module")
def runs(tmp_path_factory, vocabulary):
    """One epoch of whole updates, trained by two processes and by one."""
    root = tmp_path_factory.mktemp("ddp")
    corpus = corpus_ending_with(0, root / "corpus", vocabulary)
    two = probe(config(corpus, root / "run-2"), vocabulary, root / "probe-2", WORLD)
    one = probe(config(corpus, root / "run-1"), vocabulary, root / "probe-1", None)
    return one[0], two


def test_an_update_holds_update_tokens_summed_over_the_ranks(runs):
    _, ranks = runs
    assert [r["world"] for r in ranks] == [WORLD] * WORLD
    assert [r["accum"] for r in ranks] == [UPDATE_TOKENS // MAX_TOKENS // WORLD] * WORLD
    steps = {r["step"] for r in ranks}
    assert steps == {len(ranks[0]["updates"])} and steps != {0}
    for k, updates in enumerate(zip(*(r["updates"] for r in ranks))):
        tokens = sum(sum(u["tokens"]) for u in updates)
        assert abs(tokens - UPDATE_TOKENS) <= MAX_TOKENS, \
            f"update {k + 1} held {tokens} target tokens over {WORLD} ranks, not " \
            f"{UPDATE_TOKENS} within one micro-batch of {MAX_TOKENS}"
        assert {u["n_tokens_global"] for u in updates} == {tokens}    # what the loss divides
        assert len({u["loss"] for u in updates}) == 1                 # every rank's mean


def test_the_ranks_share_the_epoch_without_overlap(runs):
    _, ranks = runs
    seen = [[i for u in r["updates"] for batch in u["batches"] for i in batch] for r in ranks]
    for r, indices in enumerate(seen):
        assert len(indices) == len(set(indices)), f"rank {r} saw a pair twice in one epoch"
    assert not set(seen[0]) & set(seen[1]), "the ranks trained on the same pairs"
    epoch = ranks[0]["epoch_batches"][0]
    assert sum(len(u["batches"]) for r in ranks for u in r["updates"]) == epoch
    assert all(len(u["batches"]) == ranks[0]["accum"] for r in ranks for u in r["updates"])


def test_two_processes_train_what_one_process_trains(runs):
    one, ranks = runs
    assert one["world"] == 1 and one["accum"] == UPDATE_TOKENS // MAX_TOKENS
    assert one["step"] == ranks[0]["step"]
    for k, (alone, *shared) in enumerate(zip(one["updates"], *(r["updates"] for r in ranks))):
        together = sorted(b for u in shared for b in u["batches"])
        assert sorted(alone["batches"]) == together, f"update {k + 1} trained other batches"
        assert shared[0]["n_tokens_global"] == alone["n_tokens_global"]
        assert shared[0]["loss"] == pytest.approx(alone["loss"], rel=1e-5), k + 1
        assert shared[0]["grad_sq"] == pytest.approx(alone["grad_sq"], rel=1e-4), k + 1
    for rank in ranks:
        for name, weight in one["model"].items():
            if name.endswith("k_proj.bias"):
                # its gradient is zero but for rounding (a softmax does not change when a
                # constant is added to every score), and Adam scales rounding noise to
                # steps of the learning rate's size: it is noise in both runs
                continue
            torch.testing.assert_close(rank["model"][name], weight, rtol=1e-4, atol=1e-5,
                                       msg=lambda m: f"rank {rank['rank']}, {name}: {m}")


def test_an_epoch_ending_with_too_few_batches_for_every_rank_ends_together(
        tmp_path, vocabulary):
    """A last update of one micro-batch cannot be shared by two ranks: both must end the
    epoch there (the one batch unused), not one of them train it alone."""
    corpus = corpus_ending_with(1, tmp_path / "corpus", vocabulary)
    cfg = config(corpus, tmp_path / "run", max_epochs=0, max_updates=None)
    epoch = epoch_batches(cfg, Tokenizer.load(vocabulary))
    whole = epoch // (UPDATE_TOKENS // MAX_TOKENS)
    cfg = dataclasses.replace(cfg, max_updates=whole + 2)        # into the second epoch
    ranks = probe(cfg, vocabulary, tmp_path / "probe", WORLD)
    assert [r["step"] for r in ranks] == [whole + 2] * WORLD
    for k, updates in enumerate(zip(*(r["updates"] for r in ranks))):
        assert [len(u["batches"]) for u in updates] == [ranks[0]["accum"]] * WORLD, k + 1
        assert len({u["loss"] for u in updates}) == 1
    for name, weight in ranks[0]["model"].items():
        assert torch.equal(ranks[1]["model"][name], weight), name


def test_a_time_limit_stops_every_rank_at_the_same_update(tmp_path, vocabulary):
    """``--time-limit-min`` under torchrun: each rank keeps its own clock, and the clocks
    differ; the ranks must still stop after the same update (one stopping alone would
    leave the others waiting for it). Rank 1's clock starts 5.5 s into a 6-second limit."""
    corpus = corpus_ending_with(0, tmp_path / "corpus", vocabulary)
    cfg = config(corpus, tmp_path / "run", max_epochs=0, time_limit_min=0.1)
    ranks = probe(cfg, vocabulary, tmp_path / "probe", WORLD, PROBE_HEAD_START="5.5")
    steps = [r["step"] for r in ranks]
    assert steps[0] >= 1 and steps[0] == steps[1] == len(ranks[0]["updates"]) == len(ranks[1]["updates"]), steps
    for name, weight in ranks[0]["model"].items():
        assert torch.equal(ranks[1]["model"][name], weight), name
