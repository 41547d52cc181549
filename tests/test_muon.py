"""--optimizer muon: orthogonalised updates for the layers' matrices, Adam for the rest,
an exact resume like Adam's."""
import gzip
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import toy_config, toy_run, train_args
from transformer.checkpoint import load_checkpoint
from transformer.fast import FastTransformer
from transformer.training.muon import (MUON_SCALE, Muon, MuonWithAdam, newton_schulz,
                                      orthogonalise)
from transformer.training.loop import Trainer
from transformer.training.optimizers import make_optimizer

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("shape", [(3, 16, 16), (2, 32, 8), (2, 8, 32)])
def test_newton_schulz_flattens_every_singular_value(shape):
    torch.manual_seed(0)
    U, _, Vh = torch.linalg.svd(torch.randn(shape), full_matrices=False)
    spread = torch.logspace(0, -2, min(shape[1:]))       # condition number 100
    G = U @ torch.diag_embed(spread.expand(shape[0], -1)) @ Vh
    X = newton_schulz(G)
    assert X.shape == G.shape
    s = torch.linalg.svdvals(X)
    assert s.min() > 0.6 and s.max() < 1.25               # 0.01 to 1 became about 1
    core = U.mT @ X @ Vh.mT                               # the same singular vectors:
    off_diagonal = core - torch.diag_embed(torch.diagonal(core, dim1=-2, dim2=-1))
    assert off_diagonal.abs().max() < 1e-4                # X = U diag(s') V^T


SHAPES = [(16, 16), (8, 24), (24, 8), (16, 16), (24, 8), (12, 20)]   # square, wide, tall


def test_orthogonalise_is_newton_schulz_of_each_matrix_in_their_order():
    # the batched form: same-size matrices in one call, tall ones transposed to join the
    # wide ones; in fp32 each result is the plain newton_schulz of that matrix alone
    torch.manual_seed(0)
    matrices = [torch.randn(shape) for shape in SHAPES]
    batched = orthogonalise(matrices)
    assert [tuple(x.shape) for x in batched] == SHAPES
    for m, x in zip(matrices, batched):
        assert x.dtype == torch.float32
        torch.testing.assert_close(x, newton_schulz(m[None])[0], rtol=1e-5, atol=1e-6)


def test_orthogonalise_in_bf16_is_within_bf16_rounding_of_fp32():
    torch.manual_seed(0)
    matrices = [torch.randn(shape) for shape in SHAPES]
    for m, x in zip(matrices, orthogonalise(matrices, dtype=torch.bfloat16)):
        exact = newton_schulz(m[None])[0]
        assert x.dtype == torch.float32                   # handed back in the weights' dtype
        assert (x - exact).norm() / exact.norm() < 0.03   # bf16 keeps about 3 digits
        assert (x - exact).abs().max() > 1e-4             # ... and it did run in bf16
        s = torch.linalg.svdvals(x)
        assert s.min() > 0.6 and s.max() < 1.25


@pytest.mark.parametrize("precision, ns_dtype", [("bf16", torch.bfloat16),
                                                 ("fp32", torch.float32),
                                                 ("fp16", torch.float32)])
def test_muon_runs_newton_schulz_in_bf16_only_where_the_run_trains_in_bf16(precision, ns_dtype):
    optimizer = make_optimizer(FastTransformer(toy_config()), "muon", precision)
    assert optimizer.muon.ns_dtype == ns_dtype


def test_a_muon_step_is_an_orthogonal_step_of_the_set_size_against_the_gradient():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(24, 12))
    before = w.detach().clone()
    opt = Muon([w], lr=0.01)
    w.grad = torch.randn(24, 12)
    opt.step()
    delta = w.detach() - before
    s = torch.linalg.svdvals(delta) / (0.01 * MUON_SCALE * 24 ** 0.5)
    assert s.min() > 0.6 and s.max() < 1.25
    assert torch.sum(delta * w.grad) < 0                  # downhill
    assert torch.equal(opt.state[w]["momentum_buffer"], w.grad)
    with pytest.raises(ValueError, match="matrices only"):
        Muon([torch.nn.Parameter(torch.zeros(3))])


def test_muon_takes_the_layers_matrices_and_adam_everything_else():
    model = FastTransformer(toy_config())
    opt = make_optimizer(model, "muon")
    assert isinstance(opt, MuonWithAdam)
    muon = {id(p) for g in opt.muon.param_groups for p in g["params"]}
    adam = {id(p) for g in opt.adam.param_groups for p in g["params"]}
    names = {id(p): n for n, p in model.named_parameters()}
    assert muon.isdisjoint(adam) and muon | adam == set(names)
    assert all(p.ndim == 2 and "_layers." in n for n, p in model.named_parameters()
               if id(p) in muon)
    assert sum(p.ndim == 2 and "_layers." in n for n, p in model.named_parameters()) == len(muon)
    assert "output_weight" in {names[i] for i in adam}    # the shared embedding stays with Adam
    for group in opt.param_groups:                        # the trainer sets lr on each group
        group["lr"] = 0.5
    assert [g["lr"] for g in opt.adam.param_groups + opt.muon.param_groups] == [0.5, 0.5]
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'"):
        make_optimizer(model, "sgd")


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    for split, n in (("train", 800), ("valid", 50), ("test", 50)):
        for side in ("src", "tgt"):
            with gzip.open(shared_data / "multi30k-en-de" / f"{split}.{side}.gz", "rt") as f:
                lines = [next(f) for _ in range(n)]
            (folder / f"{split}.{side}").write_text("".join(lines), encoding="utf-8")
    return folder


def train(corpus, out, updates, optimizer="muon"):
    cmd = [sys.executable, "-m", "transformer",
           *train_args(corpus, out, updates=updates, optimizer=optimizer, vocab=300,
                       max_tokens=500, update_tokens=500, save_every=6, threads=1, heads=2,
                       layers=1)]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("precision, ns_dtype", [("bf16", torch.bfloat16),
                                                 ("fp32", torch.float32)])
def test_the_trainer_hands_muon_its_runs_precision(corpus, tmp_path, precision, ns_dtype):
    cfg = toy_run(corpus, tmp_path / "run", optimizer="muon", precision=precision, threads=1)
    trainer = Trainer.from_config(cfg)
    try:
        assert trainer.optimizer.muon.ns_dtype == ns_dtype
    finally:
        trainer.lock.close()


def test_muon_run_resumes_exactly_and_keeps_its_optimizer(corpus, tmp_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train(corpus, straight, 12).returncode == 0
    assert train(corpus, resumed, 6).returncode == 0      # stops at checkpoint 6 ...
    assert train(corpus, resumed, 12).returncode == 0     # ... and the same run goes on
    a = load_checkpoint(straight / "checkpoints" / "step_0000012.pt")
    b = load_checkpoint(resumed / "checkpoints" / "step_0000012.pt")
    assert set(a["optimizer"]) == {"adam", "muon"}
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    refused = train(corpus, resumed, 18, optimizer="adam")
    assert refused.returncode == 2 and 'optimizer "muon" there, "adam" now' in refused.stderr


@pytest.mark.parametrize("shape", [(32, 32), (48, 16), (16, 48)])
def test_muon_updates_are_near_orthogonal_on_ill_conditioned_gradients(shape):
    # A layer's gradient is far from well conditioned: singular values from 1 to 0.01.
    # Every direction of Muon's step must still get about the same size (the optimizer as
    # the trainer builds it, MuonWithAdam, and Muon with its defaults).
    torch.manual_seed(0)
    U, _, Vh = torch.linalg.svd(torch.randn(shape), full_matrices=False)
    grad = U @ torch.diag(torch.logspace(0, -2, min(shape))) @ Vh
    model = FastTransformer(toy_config())
    layer = next(p for name, p in model.named_parameters()
                 if "encoder_layers." in name and p.ndim == 2)
    for optimizer, w in ((MuonWithAdam(model), layer),
                         (None, torch.nn.Parameter(torch.randn(shape)))):
        if optimizer is None:
            optimizer = Muon([w])
        w.data = torch.randn(shape)
        for group in optimizer.param_groups:
            group["lr"] = 0.01
        before = w.detach().clone()
        w.grad = grad.clone()
        optimizer.step()
        s = torch.linalg.svdvals(w.detach() - before) / (0.01 * MUON_SCALE * max(shape) ** 0.5)
        assert s.min() > 0.6 and s.max() < 1.25, (type(optimizer).__name__, s.min(), s.max())
