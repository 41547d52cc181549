"""benchmarks/cpu/step_profile.py: the classifier of profiled operations into the parts of
a training update, the record's form (every part, shares adding up to one) and the figure
of Under the hood C drawn from the record."""
import argparse
import copy

import pytest

from benchmarks.cpu import step_profile as sp
from helpers import toy_run, toy_trainer
from transformer.measuring import records
from transformer_book import viz

ENGINE = "autograd::engine::evaluate_function: "


@pytest.mark.parametrize("chain, part", [
    # innermost first, up to the benchmark's scope around the update
    (["aten::mm", "aten::linear", "update"], "forward: matrix multiplies"),
    (["aten::mm", "MmBackward0", ENGINE + "MmBackward0", "update"], "backward: matrix multiplies"),
    (["aten::sum", "AddmmBackward0", ENGINE + "AddmmBackward0", "update"],
     "backward: matrix multiplies"),
    # attention's two products are matrix multiplies; its softmax, mask and the rest are
    # attention
    (["aten::bmm", "aten::matmul", "aten::_scaled_dot_product_attention_math",
      "aten::scaled_dot_product_attention", "update"], "forward: matrix multiplies"),
    (["aten::isneginf", "aten::_safe_softmax", "aten::_scaled_dot_product_attention_math",
      "aten::scaled_dot_product_attention", "update"], "forward: attention"),
    (["aten::_softmax_backward_data", ENGINE + "SafeSoftmaxBackward0", "update"],
     "backward: attention"),
    (["aten::native_layer_norm_backward", "NativeLayerNormBackward0",
      ENGINE + "NativeLayerNormBackward0", "update"], "backward: norms"),
    (["aten::index_select", "aten::embedding", "update"], "forward: embeddings"),
    (["aten::embedding_dense_backward", ENGINE + "EmbeddingBackward0", "update"],
     "backward: embeddings"),
    # the fused loss: its matrix multiplies (the output projection and its gradient) are
    # matrix multiplies, its softmax arithmetic is the loss
    (["aten::mm", "ProjectedSmoothedCrossEntropy", "update"], "forward: matrix multiplies"),
    (["aten::exp_", "ProjectedSmoothedCrossEntropy", "update"], "forward: loss"),
    # autocast's cast inside a linear layer is a cast, not a matrix multiply
    (["aten::copy_", "aten::_to_copy", "aten::to", "aten::linear", "update"], "forward: casts"),
    (["aten::add", "update"], "forward: element-wise and copies"),
    (["aten::add", "AddBackward0", ENGINE + "AddBackward0", "update"],
     "backward: element-wise and copies"),
    # the optimizers and the batch take everything inside their scopes
    (["aten::_fused_adam_", "Optimizer.step#Adam.step", "update"], "Adam"),
    (["aten::baddbmm", "Optimizer.step#Muon.step", "update"], "Muon"),
    (["aten::cat", "data and batching", "update"], "data and batching"),
    # a scope's own time is in no operation
    (["AddBackward0", ENGINE + "AddBackward0", "update"], "other"),
])
def test_each_operation_goes_to_its_part(chain, part):
    assert sp.part_of(chain) == part
    assert part in sp.PARTS


@pytest.mark.usefixtures("one_thread")
def test_a_profiled_toy_update_is_shared_out_whole(tmp_path):
    """The toy model with the recipe's optimizers (Muon and Adam): every part the update
    has gets its time, and the shares add up to the whole update."""
    base = toy_trainer(toy_run(tmp_path, tmp_path / "run", optimizer="muon"))
    args = argparse.Namespace(updates=1, budget_s=0.0, start=base.train_iter.state_dict())
    run = sp.profile_precision(base, "fp32", args)
    shares = run["shares"]
    assert list(shares) == sp.PARTS
    assert sum(shares.values()) == pytest.approx(1, abs=1e-3)
    for part in ("forward: matrix multiplies", "backward: matrix multiplies",
                 "forward: attention", "forward: norms", "forward: embeddings",
                 "forward: loss", "backward: norms", "Adam", "Muon", "data and batching"):
        assert shares[part] > 0, part
    assert run["updates_profiled"] == 1 and run["updates_unprofiled"] == 0
    assert run["seconds_per_update"] > 0 and run["ops_per_update"] > 100


def test_the_committed_record_has_every_part_and_its_shares_add_up():
    record = records.load("step_profile")
    assert record["parts"] == sp.PARTS
    assert set(record["precisions"]) == {"fp32", "bf16"}
    assert record["provenance"]["cpu"]          # with its bf16 flags, if the CPU has them
    assert set(record["cpu_bf16_instructions"]) <= {"avx512_bf16", "amx_bf16"}
    assert record["auto_precision"] == ("bf16" if record["cpu_bf16_instructions"] else "fp32")
    for run in record["precisions"].values():
        assert list(run["shares"]) == sp.PARTS
        assert sum(run["shares"].values()) == pytest.approx(1, abs=1e-3)
        assert run["seconds_per_update"] > 0
        assert len(run["load_average_before"]) == len(run["load_average_after"]) == 3


def test_the_figure_draws_the_record():
    """One stacked bar per precision, one trace per part the update has, each the part's
    share as a percentage; a changed record changes the bars."""
    record = records.load("step_profile")
    fig = viz.step_profile(record)
    assert fig.layout.barmode == "stack"
    drawn = {trace.name: list(trace.y) for trace in fig.data}
    assert set(drawn) == {part for part in record["parts"]
                          if any(r["shares"][part] for r in record["precisions"].values())}
    for part, ys in drawn.items():
        assert ys == pytest.approx([100 * r["shares"][part]
                                    for r in record["precisions"].values()])
    changed = copy.deepcopy(record)
    changed["precisions"]["fp32"]["shares"]["Muon"] = 0.5
    bars = {trace.name: trace.y for trace in viz.step_profile(changed).data}
    assert bars["Muon"][0] == pytest.approx(50)
    assert len(fig.data[0].x) == len(record["precisions"])
