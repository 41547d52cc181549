"""Table 3 at CPU scale (transformer.tools.ablation, ``python -m transformer ablate``)."""
import dataclasses
import json
from pathlib import Path

import pytest

from transformer.tools import ablation
from transformer.tools.ablation import ROW_BY_NAME, ROWS, run_row, run_table, select_rows
from transformer.config import ModelConfig
from transformer.schedule import no_warmup_lr, noam_lr
from transformer.training.config import LossDiverged, TrainConfig, TrainingError

from helpers import write_corpus


def model_of(row):
    return ModelConfig.small(**row.model)


def test_each_row_changes_only_what_its_label_names():
    base = dataclasses.asdict(ModelConfig.small())
    derived = {"n_heads": {"d_k", "d_v"}, "d_model": {"d_k", "d_v"}}     # d_k = d_model / h
    for row in ROWS:
        changed = {k for k, v in dataclasses.asdict(model_of(row)).items()
                   if k != "extra" and v != base[k]}
        allowed = set(row.model).union(*(derived.get(k, set()) for k in row.model))
        assert changed <= allowed and set(row.model) <= changed, (row.name, changed)
        assert set(row.train) <= {f.name for f in dataclasses.fields(TrainConfig)}
    assert model_of(ROW_BY_NAME["A-h1"]).d_k == 256 and model_of(ROW_BY_NAME["A-h16"]).d_k == 16
    assert model_of(ROW_BY_NAME["B-dk16"]).d_v == 64                   # (B) leaves d_v alone
    assert model_of(ROW_BY_NAME["C-d128"]).d_k == 32


def test_rows_a_keep_the_computation_and_b_c_change_the_parameters():
    params = {row.name: ablation.parameters(row) for row in ROWS}
    assert all(params[f"A-h{h}"] == params["base"] for h in (1, 2, 8, 16))
    assert params["B-dk16"] < params["B-dk32"] < params["base"]
    assert params["C-N1"] < params["C-N2"] < params["base"] < params["C-N4"] < params["C-N6"]
    assert params["C-d128"] < params["base"] < params["C-d512"]
    assert params["embed-separate"] > params["base"]


def test_the_paper_values_are_table_3s():
    assert ROW_BY_NAME["base"].paper == {"row": "base", "ppl": 4.92, "bleu": 25.8, "params_m": 65}
    assert ROW_BY_NAME["A-h1"].paper["ppl"] == 5.29 and ROW_BY_NAME["A-h1"].paper["bleu"] == 24.9
    assert ROW_BY_NAME["C-N1"].paper == {"row": "N=2", "ppl": 6.11, "bleu": 23.7, "params_m": 36}
    assert ROW_BY_NAME["D-ls0"].paper["ppl"] == 4.67
    assert ROW_BY_NAME["E-learned"].paper["bleu"] == 25.7
    assert ROW_BY_NAME["norm-pre"].paper is None


def test_rows_are_chosen_by_name_or_group_and_the_base_comes_first():
    assert [r.name for r in select_rows("B")] == ["base", "B-dk32", "B-dk16"]
    assert [r.name for r in select_rows("A-h1,base,A-h1")] == ["base", "A-h1"]
    assert len(select_rows("all")) == len(ROWS)
    with pytest.raises(ValueError, match="unknown row or group 'Z'"):
        select_rows("A,Z")


def test_no_warmup_starts_at_the_peak_and_then_follows_equation_3():
    peak = noam_lr(400, 256, 400)
    assert no_warmup_lr(1, 256, 400) == pytest.approx(peak)
    assert no_warmup_lr(399, 256, 400) == pytest.approx(peak)
    for step in (400, 401, 1000, 5000):
        assert no_warmup_lr(step, 256, 400) == pytest.approx(noam_lr(step, 256, 400))


TINY = dict(vocab_size=120, max_tokens=400, update_tokens=400, precision="fp32",
            threads=1)


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus")


def test_the_table_runs_resumes_and_records_its_provenance(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(ablation, "TABLE_TRAIN", {**ablation.TABLE_TRAIN, "warmup": 5})
    out = tmp_path / "table"
    rows = select_rows("A-h1")
    lines = []
    data = run_table(rows, out, updates=3, corpus=str(corpus), bleu_sentences=5,
                     command="test", log=lines.append, **TINY)
    assert [(r["row"], r["seed"], r["updates"]) for r in data["rows"]] == [("base", 1, 3),
                                                                         ("A-h1", 1, 3)]
    for r in data["rows"]:
        assert r["dev_ppl"] > 1 and 0 <= r["dev_bleu"] <= 100 and r["params"] > 0
        assert r["peak_rss_mb"] > 0 and r["commit"]
    prov = json.loads((out / "results.json").read_text())["provenance"]
    assert prov["commands"] == ["test"] and prov["shared"]["updates"] == 3
    assert "Table 3" in prov["source"] and prov["cpu"] and prov["torch"]
    # again: nothing is retrained, the file is unchanged
    before = (out / "results.json").read_text()
    lines.clear()
    run_table(rows, out, updates=3, corpus=str(corpus), bleu_sentences=5, command="test",
              log=lines.append, **TINY)
    assert all("already" in line for line in lines), lines
    assert json.loads((out / "results.json").read_text())["rows"] == json.loads(before)["rows"]
    # another budget in the same folder is refused, naming the file
    with pytest.raises(TrainingError, match="results.json holds a table with other"):
        run_table(rows, out, updates=4, corpus=str(corpus), bleu_sentences=5, **TINY)


def test_the_table_records_the_precision_auto_picked_and_keeps_to_it(corpus, tmp_path,
                                                                      monkeypatch):
    # Table 3's rows ask for --precision auto: bf16 on a CPU with bf16 instructions, fp32
    # on others. The file records which, and a machine that would pick the other refuses
    # to add rows to it (one table, one precision).
    import transformer.training.precision as precision_module
    settings = {k: v for k, v in TINY.items() if k != "precision"}
    out = tmp_path / "table"
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: False)
    data = run_table([], out, updates=3, corpus=str(corpus), device="cpu", **settings)
    assert ablation.TABLE_TRAIN["precision"] == "auto"
    assert data["provenance"]["shared"]["precision"] == "fp32"
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: True)
    with pytest.raises(TrainingError, match=r'results.json holds a table with other shared '
                                            r'settings \(.*"precision": "fp32"'):
        run_table([], out, updates=3, corpus=str(corpus), device="cpu", **settings)


def test_a_diverged_row_is_recorded_not_raised(corpus, tmp_path, monkeypatch):
    from transformer.tokenizer import Tokenizer
    from transformer.training.loop import Trainer

    def diverge(self, micro, n_tokens):
        raise LossDiverged("loss is nan at update 1: training stopped")

    monkeypatch.setattr(Trainer, "train_update", diverge)
    row = ROW_BY_NAME["norm-post-nowarmup"]
    cfg = ablation.row_config(row, tmp_path / "t", seed=1, updates=3, corpus=str(corpus),
                              **TINY)
    texts = [line for name in ("train.src", "train.tgt")
             for line in (corpus / name).read_text().splitlines()]
    tok = Tokenizer.train(texts, tmp_path / "spm.model", vocab_size=120)
    entry = run_row(row, cfg, tok)
    assert entry["diverged"] and entry["updates"] == 0 and "loss is nan" in entry["error"]
    assert "diverged" in ablation.format_entry(entry)


def test_budgets_share_their_settings_and_the_cpu_table_keeps_its_own():
    gpu = ablation.row_config(ROW_BY_NAME["A-h1"], Path("t"), seed=2, updates=4000,
                              budget="gpu")
    assert (gpu.max_tokens, gpu.update_tokens, gpu.max_updates, gpu.seed) == (8000, 8000, 4000, 2)
    assert gpu.model_overrides == {"n_heads": 1} and gpu.save_every == 1000
    assert ablation.BUDGETS["gpu"].updates == 4000 and ablation.BUDGETS["cpu"].updates == 400
    cpu = ablation.row_config(ROW_BY_NAME["base"], Path("t"), seed=1, updates=400)
    assert (cpu.max_tokens, cpu.warmup, cpu.lr_factor) == (2048, 150, 0.4)   # table3.json's
    smoke = ablation.row_config(ROW_BY_NAME["A-h1"], Path("t"), seed=1, updates=3,
                                budget="smoke")
    assert smoke.model_overrides["d_model"] == 32 and smoke.model_overrides["n_heads"] == 1
    with pytest.raises(ValueError, match="unknown budget 'tpu'"):
        ablation.budget_train("tpu")


def test_the_paper_rows_come_before_the_others_and_the_base_first():
    order = [r.name for r in ablation.paper_first(select_rows("norm-pre,A-h1,C-N6,C-N1,base"))]
    assert order == ["base", "A-h1", "C-N1", "norm-pre", "C-N6"]


def test_base_seeds_jobs_and_a_time_budget_that_stops_between_rows(corpus, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setattr(ablation, "TABLE_TRAIN", {**ablation.TABLE_TRAIN, "warmup": 5})
    out, lines = tmp_path / "table", []
    rows = select_rows("norm-pre,A-h1")
    settings = dict(corpus=str(corpus), bleu_sentences=3, log=lines.append, **TINY)
    # a budget of a millisecond: the first row starts, no other after it
    data = run_table(rows, out, updates=2, base_seeds=2, time_budget_s=0.001, **settings)
    assert [(r["row"], r["seed"]) for r in data["rows"]] == [("base", 1)]
    assert any("base seed 2: not started" in line for line in lines), lines
    # the same command without the budget goes on, two rows at once, base seed 2 first
    lines.clear()
    data = run_table(rows, out, updates=2, base_seeds=2, jobs=2, **settings)
    assert sorted((r["row"], r["seed"]) for r in data["rows"]) == [
        ("A-h1", 1), ("base", 1), ("base", 2), ("norm-pre", 1)]
    started = [line.split(":")[0] for line in lines if line.endswith("...")]
    assert started == ["base seed 2", "A-h1 seed 1", "norm-pre seed 1"]
    assert data["provenance"]["jobs"] == 2 and data["provenance"]["budget"] == "cpu"
    # a vocabulary that is not the rows' own is refused
    (out / "spm.model").write_bytes((out / "spm.model").read_bytes() + b"x")
    with pytest.raises(TrainingError, match="is not the vocabulary of the rows"):
        run_table(rows, out, updates=2, base_seeds=2, **settings)
    # and a recorded vocabulary that is not a fingerprint (the bare hex) is named, in a line
    written = json.loads((out / "results.json").read_text())
    written["provenance"]["vocabulary"] = written["provenance"]["vocabulary"][len("sha256:"):]
    (out / "results.json").write_text(json.dumps(written))
    with pytest.raises(TrainingError, match=r"results\.json: its provenance's 'vocabulary' is "
                                            r"'[0-9a-f]{64}', not a fingerprint") as refused:
        run_table(rows, out, updates=2, base_seeds=2, **settings)
    assert "\n" not in str(refused.value)
