"""Chapter 7's perplexity trace is the run's own: the book reads the validation figures from
the run's metrics.jsonl (transformer_book.runs.validation_trace), and the perplexity it
plots is the exponential of the unsmoothed negative log-likelihood the run logged, not of
the label-smoothed loss it trains."""
import json
import math
from pathlib import Path

import pytest

from helpers import BOOK, train_args, write_corpus
from transformer.tools import cli
from transformer.errors import InputError
from transformer_book.runs import read_metrics, validation_trace


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """A toy run (a few updates, validated twice) and the lines of its metrics.jsonl."""
    tmp = tmp_path_factory.mktemp("toy-run")
    corpus, out = write_corpus(tmp / "toy-en-de"), tmp / "run"
    cli.main([str(a) for a in train_args(corpus, out, updates=4) + ["--eval-every", "2"]])
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return out, lines


def test_the_trace_is_the_logged_validations_in_order(toy_run):
    out, lines = toy_run
    evals = [r for r in lines if "valid_loss" in r]
    assert len(evals) >= 2                                   # update 2, 4 and the final one
    trace = validation_trace(out)
    assert trace["step"] == [r["step"] for r in evals]
    for key in ("valid_loss", "valid_nll", "valid_ppl"):
        assert trace[key] == [r[key] for r in evals], key
    train, valid = read_metrics(out)
    assert [r["step"] for r in train] == [r["step"] for r in lines if "loss" in r]
    assert valid == evals


def test_the_perplexity_is_the_unsmoothed_likelihoods_not_the_smoothed_loss(toy_run):
    trace = validation_trace(toy_run[0])
    for loss, nll, ppl in zip(trace["valid_loss"], trace["valid_nll"], trace["valid_ppl"]):
        assert math.isclose(ppl, math.exp(nll), rel_tol=1e-9)
        # smoothing adds eps * mean_k(-log p_k) over the whole vocabulary: far above -log p_y
        # for a model that has learned anything, and never below it by much
        assert not math.isclose(ppl, math.exp(loss), rel_tol=1e-3)


def test_a_run_without_the_figures_is_named(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"step": 2, "loss": 5.0}) + "\n" + json.dumps({"step": 2, "valid_loss": 4.0}) + "\n")
    with pytest.raises(InputError, match=r"metrics\.jsonl: a validation at update 2 lacks "
                                         r"valid_nll, valid_ppl"):
        validation_trace(tmp_path)


def test_chapter_7_plots_the_trace_it_reads():
    source = "".join("".join(c["source"]) for c in json.loads(
        Path(BOOK / "07_training.ipynb").read_text())["cells"] if c["cell_type"] == "code")
    assert "validation_trace(run)" in source


def test_a_last_line_torn_by_a_killed_run_is_left_out_as_the_package_leaves_it_out(toy_run,
                                                                                   tmp_path):
    """A run killed in the middle of writing metrics.jsonl leaves its last line torn: the
    trace is that of the lines before it, as the package's own reader
    (RunFolder.records) reads them, not a JSONDecodeError naming no file."""
    from transformer.training.run_folder import RunFolder
    out, lines = toy_run
    text = (out / "metrics.jsonl").read_text()
    (tmp_path / "metrics.jsonl").write_text(text + '{"step": 6, "valid_loss": 3.')
    assert validation_trace(tmp_path) == validation_trace(out)
    assert read_metrics(tmp_path) == read_metrics(out)
    assert RunFolder(tmp_path).records() == lines


def test_an_unreadable_line_before_the_last_is_one_line_naming_the_file(tmp_path):
    from transformer.training.config import TrainingError
    (tmp_path / "metrics.jsonl").write_text('{"step": 2, "loss"\n'
                                            + json.dumps({"step": 4, "loss": 5.0}) + "\n")
    with pytest.raises(TrainingError) as caught:
        validation_trace(tmp_path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{tmp_path / 'metrics.jsonl'}: line 1 ")
    with pytest.raises(FileNotFoundError, match=r"metrics\.jsonl: no such metrics file"):
        validation_trace(tmp_path / "absent")
