"""The exported ONNX graphs compute what the torch model computes, for the
translator in the page, which runs them in the browser (book/_ext/static/translator)."""
import json
import subprocess
import sys

import pytest
import torch

pytest.importorskip("onnxruntime")

from transformer.data import load_corpus  # noqa: E402
from transformer.decoding import beam_search, build_source_batch, greedy_decode  # noqa: E402
from transformer.decoding import PAPER_SEARCH, Search  # noqa: E402
from transformer.tools.export import ExportError, export_model  # noqa: E402
from transformer.tools.manifest import FILES, FORMAT, page_files, read_manifest, search  # noqa: E402
from transformer.tools.onnx_model import OnnxModel  # noqa: E402
from transformer.fast import plain_form  # noqa: E402
from transformer.recording import record_attention  # noqa: E402
from transformer.inference import load_model  # noqa: E402
from transformer.training.recipes import recipe  # noqa: E402
from transformer.training.loop import Trainer  # noqa: E402


@pytest.fixture(scope="module")
def trained(shared_data, tmp_path_factory):
    """A small model trained for 150 updates on Multi30k, and its export."""
    out = tmp_path_factory.mktemp("export-run")
    cfg = recipe("quick", out_dir=str(out), data_root=str(shared_data), max_tokens=2048,
                 update_tokens=2048, max_updates=150, warmup=60, precision="fp32", threads=2,
                 save_every=150, keep_last=1)
    Trainer.from_config(cfg).fit()
    model, tokenizer = load_model(out / "average.pt")
    export_model(model, tokenizer, out / "web")
    return model, tokenizer, out


@pytest.fixture(scope="module")
def test_sources(trained, shared_data):
    _, tokenizer, _ = trained
    test = load_corpus("multi30k-en-de", "test", root=shared_data)
    return [tokenizer.encode(s) for s in test.src[:200]]


def batch(model, ids):
    return build_source_batch(ids, model.cfg.pad_id, model.cfg.eos_id, model.cfg.max_len)


def test_manifest_lists_the_files_the_vocabulary_and_the_decoding_settings(trained):
    model, tokenizer, out = trained
    manifest = json.loads((out / "web" / "manifest.json").read_text())
    assert set(manifest["files"]) == set(FILES.values()) and manifest["format"] == FORMAT
    assert {f["part"] for f in page_files(manifest).values()} == {"encoder", "decoder", "weights"}
    for name, entry in manifest["files"].items():              # what read_manifest checks
        assert entry["bytes"] == (out / "web" / name).stat().st_size
    assert read_manifest(out / "web")["decoding"] == manifest["decoding"]
    assert len(manifest["vocabulary"]) == tokenizer.vocab_size == model.cfg.vocab_size
    assert manifest["scores"] == [tokenizer.sp.get_score(i) for i in range(tokenizer.vocab_size)]
    assert manifest["special_ids"] == {"pad": 0, "bos": 1, "eos": 2, "unk": 3}
    assert manifest["decoding"] == PAPER_SEARCH.to_dict()          # the search, serialised
    assert set(manifest["decoding"]) == {"beam_size", "alpha", "max_extra", "stopping",
                                         "min_output_tokens"}     # the names search.js reads
    assert search(manifest) == PAPER_SEARCH
    assert manifest["config"]["d_model"] == 64


def test_both_graphs_share_one_copy_of_every_weight(trained):
    """The download is the model (4 bytes a parameter), not the sum of two graphs: the tied
    embedding, used by both graphs and as the output projection, is stored once."""
    model, _, out = trained
    weights = (out / "web" / "weights.bin").stat().st_size
    graphs = sum((out / "web" / f).stat().st_size for f in ("encoder.onnx", "decoder.onnx"))
    parameters = 4 * model.num_parameters()
    assert parameters <= weights + graphs <= 1.02 * parameters + 600_000, (weights, graphs)
    assert weights <= 1.01 * parameters


def test_logits_and_attention_match_torch_on_test_sentences(trained, test_sources):
    model, _, out = trained
    onnx = OnnxModel(out / "web")
    plain = plain_form(model).eval()
    src = batch(model, test_sources[:16])
    tgt_in = torch.cat([torch.full((16, 1), model.cfg.bos_id), src[:, :7].clamp(min=4)], 1)
    memory = onnx.encode(src)
    logits = onnx.decode(tgt_in, memory, onnx.source_mask(src))[:, 0]
    with torch.no_grad(), record_attention(plain) as rec:
        src_mask = plain.source_mask(src)
        expected_memory = plain.encode(src, src_mask)
        expected = plain.project(plain.decode(tgt_in, expected_memory, src_mask))[:, -1]
    assert (memory - expected_memory).abs().max() <= 1e-4
    assert (logits - expected).abs().max() <= 1e-4
    for kind in ("encoder.self", "decoder.self", "decoder.cross"):
        assert (onnx.attention[kind] - rec.stacked(kind)).abs().max() <= 1e-4, kind


def test_greedy_and_beam_4_give_the_torch_models_token_ids(trained, test_sources):
    model, _, out = trained
    onnx = OnnxModel(out / "web")
    for lo in range(0, 200, 50):
        src = batch(model, test_sources[lo:lo + 50])
        assert greedy_decode(onnx, src) == greedy_decode(model, src), lo
        assert beam_search(onnx, src, 4, 0.6) == beam_search(model, src, 4, 0.6), lo


def test_export_command_and_its_errors(trained, tmp_path):
    _, _, out = trained
    run = subprocess.run([sys.executable, "-m", "transformer", "export",
                          str(out / "average.pt"), "--out", str(tmp_path / "web"),
                          "--beam", "2", "--alpha", "1.0"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "checked against torch" in run.stdout and (tmp_path / "web" / "decoder.onnx").is_file()
    # the command line's one Search is the search the page runs
    assert search(read_manifest(tmp_path / "web")) == Search(beam_size=2, alpha=1.0)
    missing = subprocess.run([sys.executable, "-m", "transformer", "export",
                              str(tmp_path / "nope.pt"), "--out", str(tmp_path / "x")],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "nope.pt" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "web" / "encoder.onnx").write_bytes(b"tampered")
    with pytest.raises(ExportError, match="checksum"):
        OnnxModel(tmp_path / "web")


def test_a_mismatched_tokenizer_is_refused(trained, tmp_path):
    model, tokenizer, out = trained
    from transformer import FastTransformer, ModelConfig
    other = FastTransformer(ModelConfig(**{**model.cfg.to_dict(), "vocab_size": 1200,
                                           "tgt_vocab_size": 1200}))
    with pytest.raises(ExportError, match="do not belong together"):
        export_model(other, tokenizer, tmp_path / "web")
    assert not (tmp_path / "web" / "encoder.onnx").exists()           # nothing written


@pytest.mark.parametrize("form, most", [("fp16", 0.55), ("int8", 0.3)])
def test_a_smaller_weight_form_stores_rounded_weights_the_graphs_restore(trained, test_sources,
                                                                         tmp_path, form, most):
    """weights="fp16"/"int8": weights.bin shrinks to about a half / a quarter, and the graphs
    compute what the model computes with its weights rounded as stored (rounded_model):
    the same greedy ids on test sentences; the rounding itself changes the weights."""
    from transformer.tools.export import rounded_model
    model, tokenizer, out = trained
    manifest = export_model(model, tokenizer, tmp_path / form, weights=form)
    full = json.loads((out / "web" / "manifest.json").read_text())
    assert manifest["weights"] == form and full["weights"] == "fp32"
    ratio = manifest["files"]["weights.bin"]["bytes"] / full["files"]["weights.bin"]["bytes"]
    assert ratio <= most, ratio
    rounded = rounded_model(model, form)
    changed = [name for (name, p), q in zip(model.named_parameters(), rounded.parameters())
               if not torch.equal(p, q)]
    assert changed and all(p.dim() == 2 for name, p in model.named_parameters() if name in changed)
    src = batch(model, test_sources[:50])
    assert greedy_decode(OnnxModel(tmp_path / form), src) == greedy_decode(rounded, src)


def test_compare_forms_measures_each_form_against_the_fp32_graphs(trained, shared_data,
                                                                   tmp_path):
    """What benchmarks/book/weight_forms.py records: per split and form, the greedy-id agreement
    with the fp32 graphs and the BLEU change (here on a few sentences)."""
    from benchmarks.book.weight_forms import compare_forms
    model, tokenizer, _ = trained
    body = compare_forms(model, tokenizer, forms=("fp16",), agreement_sentences=8,
                         bleu_sentences=8, data_root=shared_data, folder=tmp_path)
    assert set(body["model_bytes"]) == {"fp32", "fp16"}
    assert body["model_bytes"]["fp16"] < body["model_bytes"]["fp32"]      # graphs included
    for split in ("multi30k-en-de/test", "tatoeba-en-de/test"):
        entry = body["splits"][split]
        assert entry["agreement_sentences"] == entry["bleu_sentences"] == 8
        fp16 = entry["forms"]["fp16"]
        assert 0.0 <= fp16["greedy_agreement"] <= 1.0
        assert fp16["bleu_change"] == pytest.approx(fp16["bleu"] - entry["bleu"]["fp32"])


def test_an_unknown_weight_form_is_refused(trained, tmp_path):
    model, tokenizer, _ = trained
    with pytest.raises(ExportError, match="unknown weight form"):
        export_model(model, tokenizer, tmp_path, weights="int4")
    with pytest.raises(ExportError, match="'count' rule only"):     # the page's search's
        export_model(model, tokenizer, tmp_path, search=Search(stopping="bound"))


def test_int8_rounds_each_weight_to_the_nearest_step_of_its_rows_scale():
    """The property itself, with the scale worked out here (not by the code under test):
    each row's step is max|w| / 127, and every stored weight is the nearest multiple of
    it, |q * step - w| <= step / 2 (truncating toward zero errs by up to a whole step)."""
    from transformer.tools.export import round_weights
    g = torch.Generator().manual_seed(0)
    w = torch.randn(64, 48, generator=g) * torch.logspace(-4, 1, 64).unsqueeze(1)
    w[5] = 0.0                                             # a row of zeros stays zeros
    rounded = round_weights(w, "int8")
    step = (w.abs().amax(dim=1, keepdim=True) / 127).double()
    error = (rounded.double() - w.double()).abs()
    nonzero = step.squeeze(1) > 0
    assert torch.all(error[nonzero] <= step[nonzero] / 2 * (1 + 1e-5)), \
        float((error[nonzero] / step[nonzero]).max())
    levels = rounded.double()[nonzero] / step[nonzero]
    assert torch.allclose(levels, levels.round(), atol=1e-3)   # on the row's grid
    assert levels.abs().max() <= 127 + 1e-3
    assert torch.all(rounded[5] == 0)
    assert torch.equal(round_weights(w, "fp16"), w.half().float())
    assert torch.equal(round_weights(w, "fp32"), w)


@pytest.mark.parametrize("body, problem", [
    ([1, 2], "holds a JSON list, not the object of an export's manifest"),
    ({"format": FORMAT, "config": {}}, "lacks its 'files' object"),
    ({"format": FORMAT, "files": {}}, "lacks its 'config' object"),
    ({"format": FORMAT, "files": {"spm.model": {"part": "tokenizer"}}, "config": {}},
     "the entry of file 'spm.model' lacks its part, bytes, sha256 or page")])
def test_a_manifest_of_the_wrong_shape_is_one_error_naming_it(tmp_path, body, problem):
    """A list, or an object without ``files`` or ``config``: an ExportError (one line, exit
    status 2 on the command line) naming the manifest, not an AttributeError or KeyError."""
    (tmp_path / "manifest.json").write_text(json.dumps(body))
    with pytest.raises(ExportError) as caught:
        read_manifest(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'manifest.json'}")
    assert problem in message
    with pytest.raises(ExportError, match="manifest.json"):
        OnnxModel(tmp_path)


def test_a_damaged_file_of_the_same_size_is_refused(tmp_path):
    """The manifest checks each file's SHA-256, not only its size: one flipped byte in
    weights.bin (the same number of bytes) is refused, naming the file."""
    from transformer.tools.manifest import write_manifest
    for part, name in FILES.items():
        (tmp_path / name).write_bytes(bytes(range(256)) * 4 + part.encode())
    write_manifest(tmp_path, {"config": {}})
    assert read_manifest(tmp_path)["files"]                         # whole: read
    weights = tmp_path / FILES["weights"]
    data = bytearray(weights.read_bytes())
    data[100] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert weights.stat().st_size == len(data)                      # the size it was listed at
    assert json.loads((tmp_path / "manifest.json").read_text())["files"][weights.name][
        "bytes"] == len(data)
    with pytest.raises(ExportError, match=f"{weights}.*checksum"):
        read_manifest(tmp_path)
    read_manifest(tmp_path, check=False)                            # unchecked: read as asked



def _code_of_revision(rev, served):
    """benchmarks/book/browser_speed.py's code_of_revision, keeping the warning filters that
    the Sphinx extension it reads sets."""
    import warnings
    from benchmarks.book.browser_speed import code_of_revision
    with warnings.catch_warnings():
        code_of_revision(rev, served)


def test_the_speed_benchmark_serves_the_page_modules_of_a_revision_and_refuses_older_code(
        tmp_path):
    """benchmarks/book/browser_speed.py's ``--code-from REV``: the page's modules (lib/ and
    translator/) as committed at REV replace this tree's; a revision from before the page's
    ES modules (classic scripts) is refused in one line naming it."""
    from pathlib import Path
    from benchmarks.book.browser_speed import REPO
    served = tmp_path / "book"
    (served / "translator").mkdir(parents=True)
    (served / "translator" / "stale.js").write_text("// this tree's, not the revision's\n")
    _code_of_revision("HEAD", served)
    committed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD",
                                "book/_ext/static/lib", "book/_ext/static/translator"],
                               cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert committed and sorted(p.relative_to(served).as_posix() for p in served.rglob("*")
                                if p.is_file()) == sorted(
        Path(name).relative_to("book/_ext/static").as_posix() for name in committed)
    widget = subprocess.run(["git", "show", "HEAD:book/_ext/static/translator/widget.js"],
                            cwd=REPO, capture_output=True, check=True).stdout
    assert (served / "translator" / "widget.js").read_bytes() == widget
    classic = subprocess.run(["git", "log", "--format=%H", "-1", "--diff-filter=D", "--",
                              "book/_ext/static/translator.js"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.strip()
    with pytest.raises(SystemExit, match=r"^--code-from \w+\^: that revision has no "
                                         r"book/_ext/static/translator/widget.js") as refused:
        _code_of_revision(classic + "^", served)
    assert "\n" not in str(refused.value)
