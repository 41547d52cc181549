"""The training step on each device the machine has (the CPU, and CUDA where present):
every precision the trainer offers there, and ``--compile`` (one compilation for every
batch shape, the same numbers as eager). benchmarks/gpu/check.sh runs these on a GPU."""
import pytest
import torch
from torch._dynamo.utils import counters

from helpers import toy_config, toy_pairs, toy_trainer
from transformer import FastTransformer
from transformer.fast import FastLabelSmoothingLoss, SequenceLoss, compile_layers, fast_form
from transformer.batching import BatchIterator
from transformer.training.config import TrainConfig

CFG = toy_config(dropout=0.0)


def trainer(device, precision):
    """The toy trainer on ``device`` in ``precision``, 48 pairs of lengths 3-16 (batches of
    many shapes), with an endless stream of batches."""
    torch.manual_seed(0)
    cfg = TrainConfig(precision=precision, max_tokens=128, update_tokens=128, warmup=10,
                      progress=False, seed=0)
    result = toy_trainer(cfg, CFG, n_pairs=48, device=device)
    result.stream = iter(result.train_iter)
    return result


def update(trainer):
    """One update of the trainer, from the next batch of its endless stream."""
    micro, n_tokens = trainer.next_micro_batches(trainer.stream)
    if not micro:                                                      # a new epoch
        trainer.stream = iter(trainer.train_iter)
        micro, n_tokens = trainer.next_micro_batches(trainer.stream)
    return trainer.train_update(micro, n_tokens)


PRECISIONS = {"cpu": ["fp32", "bf16"], "cuda": ["fp32", "bf16", "fp16"]}


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_every_precision_trains_and_tracks_fp32(device, precision):
    if precision not in PRECISIONS[device.type]:
        pytest.skip(f"{precision} is not offered on {device.type}")
    reference, run = trainer(device, "fp32"), trainer(device, precision)
    assert run.precision == precision and (run.scaler is not None) == (precision == "fp16")
    losses, ref_losses = [], []
    for _ in range(30):
        ref_losses.append(update(reference))
        losses.append(update(run))
    assert abs(losses[0] - ref_losses[0]) < 0.02 * ref_losses[0]       # same first loss
    assert sum(losses[-5:]) / 5 < 0.85 * losses[0]                     # it learns
    assert abs(sum(losses[-5:]) - sum(ref_losses[-5:])) < 0.05 * sum(ref_losses[-5:])


def test_compiled_layers_equal_eager_and_compile_once_for_every_shape(device):
    torch.manual_seed(0)
    eager = FastTransformer(CFG).to(device)
    compiled = compile_layers(fast_form(eager))
    criterion = FastLabelSmoothingLoss(0.1, CFG.pad_id)
    torch._dynamo.reset()
    counters.clear()
    batches = BatchIterator(*toy_pairs(96, CFG.vocab_size), max_tokens=96, seed=1)
    shapes, graphs = set(), []
    for batch in list(batches)[:12]:
        batch = batch.to(device)
        shapes.add((*batch.src.shape, batch.tgt_in.size(1)))
        losses = []
        for model in (eager, compiled):
            model.zero_grad()
            loss = SequenceLoss(model, criterion)(batch.src, batch.tgt_in, batch.tgt_out)
            loss.backward()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-4)
        for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-5, msg=name)
        graphs.append(int(counters["stats"]["unique_graphs"]))
    # one graph per layer type (encoder, decoder), a few more for the padded layout and
    # coinciding sizes; never one per batch shape
    assert graphs[-1] <= 6 < len(shapes), (len(shapes), graphs)
