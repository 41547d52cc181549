"""Export a trained model for the browser: ONNX graphs, the tokenizer and a manifest.

``python -m transformer export CHECKPOINT --out DIR`` writes

* ``encoder.onnx``: ``src`` (B, S) int64 -> ``memory`` (B, S, d_model) and
  ``encoder_attention`` (layers, B, heads, S, S);
* ``decoder.onnx``: one decoding step over the whole prefix. ``tgt_in`` (B, T) int64,
  ``memory`` and ``src`` (its padding is the cross-attention mask) -> ``logits`` (B, V) of
  the next token, ``self_attention`` (layers, B, heads, T, T) and ``cross_attention``
  (layers, B, heads, T, S);
* ``weights.bin``: the parameters of both graphs (ONNX external data), each tensor once:
  the shared embedding (section 3.4) is stored once although both graphs use it, so the
  download is the model's size, not the two graphs' sum. ``weights="fp32"`` stores 4 bytes
  a parameter; ``"fp16"`` 2 and ``"int8"`` about 1 (the weight matrices only, each row
  with its own scale; biases, norms and the positional table stay fp32). A smaller form
  is dequantised by the graph itself (``Cast``, and ``Mul`` by the scales), a constant
  expression that onnxruntime folds when it loads the graph: the arithmetic stays fp32,
  only the stored weights are rounded (``benchmarks/book/weight_forms.py`` measures what
  the rounding changes: greedy ids and BLEU against the fp32 graphs);
* ``spm.model``: the shared BPE vocabulary;
* ``manifest.json`` (:mod:`transformer.tools.manifest`, the one home of the format and
  the file list): the configuration, the special ids, the vocabulary's pieces and scores
  (the page's own BPE encoder merges by them), the search the page runs (``decoding``, a
  :class:`~transformer.decoding.Search` written by its ``to_dict``: section 6.1's unless
  the export is given another), and the part, size and SHA-256 of every file.

The graphs are the paper's plain form (:mod:`transformer.model`): no cache and no packing,
whose data-dependent shapes do not belong in a graph. The search loop (greedy, or beam 4
with the length penalty) runs outside, in the same algorithm as :mod:`transformer.decoding`:
:class:`~transformer.tools.onnx_model.OnnxModel` runs it in Python over onnxruntime
(tests/test_export.py checks the token ids against the torch model's), and the book's page
runs it in JavaScript.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import torch
from torch import nn

from ..decoding import PAPER_SEARCH, Search
from ..fast import plain_form
from ..recording import record_attention
from ..model import Transformer
from ..output import output_folder
from ..tokenizer import Tokenizer
from .manifest import FILES, ExportError, write_manifest
from .onnx_model import OnnxModel

__all__ = ["export_model", "export_checkpoint", "check_export", "rounded_model", "round_weights",
           "ExportError", "OnnxModel", "WEIGHT_FORMS"]
WEIGHT_FORMS = ("fp32", "fp16", "int8")


class EncoderGraph(nn.Module):
    """``src`` -> memory and every encoder layer's self-attention weights."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src):
        with record_attention(self.model) as rec:
            memory = self.model.encode(src, self.model.source_mask(src))
        return memory, rec.stacked("encoder.self")


class DecoderGraph(nn.Module):
    """One step over the prefix: the next token's logits and the decoder's attention."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, tgt_in, memory, src):
        with record_attention(self.model) as rec:
            states = self.model.decode(tgt_in, memory, self.model.source_mask(src))
        logits = self.model.project(states[:, -1])                       # (B, V)
        return logits, rec.stacked("decoder.self"), rec.stacked("decoder.cross")


def _require_onnx():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise ExportError(f"export needs the onnx and onnxruntime packages ({exc.name} is "
                          f"missing): pip install onnx onnxruntime") from None


WEIGHTS = FILES["weights"]
EXTERNAL_MIN_BYTES = 1024        # smaller tensors stay inside their graph


def _export(graph: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str],
            dynamic: dict, opset: int) -> None:
    # No constant folding: it would store a transposed copy of the tied embedding for the
    # output projection (8 MB more for the book's model); the Transpose runs at load.
    with warnings.catch_warnings():          # the TorchScript exporter warns about itself
        warnings.simplefilter("ignore")
        torch.onnx.export(graph.eval(), args, str(path), input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic, opset_version=opset,
                          dynamo=False, do_constant_folding=False)


def _round_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 of a matrix, one scale per row: (q int8, scale (rows, 1) fp32)."""
    w = w.detach().float()
    scale = w.abs().amax(dim=1, keepdim=True) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(w / scale).clamp(-127, 127).to(torch.int8), scale


def round_weights(w: torch.Tensor, form: str) -> torch.Tensor:
    """``w`` as the graphs of ``form`` compute with it: stored, then dequantised to fp32."""
    if form == "fp32":
        return w.detach().float()
    if form == "fp16":
        return w.detach().half().float()
    q, scale = _round_int8(w)
    return q.float() * scale


def rounded_model(model: Transformer, form: str) -> Transformer:
    """A copy of ``model`` whose weight matrices are rounded as the export of ``form``
    stores them (:func:`round_weights`): the graphs must reproduce it, as ``model`` itself
    for fp32. Tied parameters stay tied."""
    import copy
    if form not in WEIGHT_FORMS:
        raise ExportError(f"unknown weight form {form!r}; choose one of {WEIGHT_FORMS}")
    copied = copy.deepcopy(model).eval()
    with torch.no_grad():
        for p in copied.parameters():          # each tensor once, tied ones included
            if p.dim() == 2:
                p.copy_(round_weights(p, form))
    return copied


def _store_rounded(path: Path, model: Transformer, form: str) -> None:
    """Store the graph's weight matrices (its initializers that are 2-D parameters of
    ``model``) in ``form``, each replaced by a stored tensor and the nodes that restore the
    fp32 values under the original name, so the rest of the graph is unchanged."""
    import onnx
    from onnx import helper, numpy_helper
    if form == "fp32":
        return
    matrices = {p.detach().float().numpy().tobytes() for p in model.parameters() if p.dim() == 2}
    graph = onnx.load(str(path))
    kept, restore = [], []
    for tensor in graph.graph.initializer:
        value = numpy_helper.to_array(tensor)
        if (tensor.data_type != onnx.TensorProto.FLOAT or value.ndim != 2
                or value.tobytes() not in matrices):
            kept.append(tensor)
            continue
        name = tensor.name
        if form == "fp16":
            kept.append(numpy_helper.from_array(value.astype("float16"), f"{name}.fp16"))
            restore.append(helper.make_node("Cast", [f"{name}.fp16"], [name],
                                            to=onnx.TensorProto.FLOAT, name=f"{name}.restore"))
        else:
            q, scale = _round_int8(torch.from_numpy(value.copy()))
            kept += [numpy_helper.from_array(q.numpy(), f"{name}.int8"),
                     numpy_helper.from_array(scale.numpy(), f"{name}.scale")]
            restore += [helper.make_node("Cast", [f"{name}.int8"], [f"{name}.float"],
                                         to=onnx.TensorProto.FLOAT, name=f"{name}.cast"),
                        helper.make_node("Mul", [f"{name}.float", f"{name}.scale"], [name],
                                         name=f"{name}.restore")]
    if not restore:
        raise ExportError(f"{path.name} holds none of the model's weight matrices: "
                          f"nothing to store in {form}")
    del graph.graph.initializer[:]
    graph.graph.initializer.extend(kept)
    nodes = restore + list(graph.graph.node)
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    onnx.save(graph, str(path))


def _share_weights(paths: list[Path], weights: Path) -> None:
    """Move the large initializers of the graphs at ``paths`` into one external-data file,
    storing tensors with equal bytes once (both graphs then point at the same offset)."""
    import onnx
    offsets: dict[bytes, tuple[int, int]] = {}
    with open(weights, "wb") as blob:
        for path in paths:
            model = onnx.load(str(path))
            for tensor in model.graph.initializer:
                raw = onnx.numpy_helper.to_array(tensor).tobytes()
                if len(raw) < EXTERNAL_MIN_BYTES:
                    continue
                digest = hashlib.sha256(raw).digest() + bytes([tensor.data_type])
                if digest not in offsets:
                    blob.write(b"\0" * (-blob.tell() % 64))       # aligned, as onnx does
                    offsets[digest] = (blob.tell(), len(raw))
                    blob.write(raw)
                offset, length = offsets[digest]
                tensor.ClearField("raw_data")
                for field in ("float_data", "int64_data", "int32_data", "double_data"):
                    tensor.ClearField(field)
                del tensor.external_data[:]
                for key, value in (("location", weights.name), ("offset", offset),
                                   ("length", length)):
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, str(value)
                tensor.data_location = onnx.TensorProto.EXTERNAL
            onnx.save(model, str(path))


def export_model(model: Transformer, tokenizer: Tokenizer, out: str | os.PathLike,
                 opset: int = 17, check: bool = True, source: str = "",
                 weights: str = "fp32", search: Search = PAPER_SEARCH) -> dict:
    """Write the graphs, ``spm.model`` and ``manifest.json`` of ``model`` into ``out``.

    ``search``: the search the page runs with the model (the manifest's ``decoding``); the
    page's search (``translator/search.js``) has the "count" stopping rule only.

    ``weights``: how ``weights.bin`` stores the weight matrices, ``"fp32"``, ``"fp16"`` or
    ``"int8"`` (see the module's notes). ``check``: run both graphs in onnxruntime on a
    sample batch and raise :class:`ExportError` unless logits, memory and attention agree
    within 1e-4 with torch's (with the weights rounded as stored: :func:`rounded_model`).
    Returns the manifest. The files are written into a temporary folder beside ``out``
    and moved into it when all are written and checked: a failure (a full disk) leaves
    ``out`` as it was.
    """
    _require_onnx()
    if not isinstance(search, Search):
        raise TypeError(f"search must be a transformer.decoding.Search, got "
                        f"{type(search).__name__}")
    if search.stopping != "count":
        raise ExportError(f"the page's search stops by the 'count' rule only, not by "
                          f"{search.stopping!r}: export with stopping='count'")
    if weights not in WEIGHT_FORMS:
        raise ExportError(f"unknown weight form {weights!r}; choose one of {WEIGHT_FORMS}")
    cfg = model.cfg
    if tokenizer.vocab_size != cfg.vocab_size:
        raise ExportError(f"the tokenizer has {tokenizer.vocab_size} pieces but the model "
                          f"{cfg.vocab_size} input ids: they do not belong together")
    with output_folder(out) as work:     # whole or not at all (transformer/output.py)
        return _write_export(model, tokenizer, work, opset, check, source, weights, search)


def _write_export(model, tokenizer, out: Path, opset, check, source, weights,
                  search: Search) -> dict:
    cfg = model.cfg
    plain = plain_form(model).eval()
    sample_src = torch.tensor([[5, 6, 7, cfg.eos_id], [8, 9, cfg.eos_id, cfg.pad_id]])
    sample_tgt = torch.tensor([[cfg.bos_id, 10, 11], [cfg.bos_id, 12, 13]])
    encoder, decoder = EncoderGraph(plain), DecoderGraph(plain)
    with torch.no_grad():
        memory, _ = encoder(sample_src)
    _export(encoder, (sample_src,), out / FILES["encoder"], ["src"],
            ["memory", "encoder_attention"],
            {"src": {0: "batch", 1: "src_len"}, "memory": {0: "batch", 1: "src_len"},
             "encoder_attention": {1: "batch", 3: "src_len", 4: "src_len"}}, opset)
    _export(decoder, (sample_tgt, memory, sample_src), out / FILES["decoder"],
            ["tgt_in", "memory", "src"], ["logits", "self_attention", "cross_attention"],
            {"tgt_in": {0: "batch", 1: "tgt_len"}, "memory": {0: "batch", 1: "src_len"},
             "src": {0: "batch", 1: "src_len"}, "logits": {0: "batch"},
             "self_attention": {1: "batch", 3: "tgt_len", 4: "tgt_len"},
             "cross_attention": {1: "batch", 3: "tgt_len", 4: "src_len"}}, opset)
    graphs = [out / FILES["encoder"], out / FILES["decoder"]]
    for path in graphs:
        _store_rounded(path, plain, weights)
    _share_weights(graphs, out / WEIGHTS)
    (out / FILES["tokenizer"]).write_bytes(tokenizer.serialized())
    if check:
        check_export(rounded_model(plain, weights), out)
    return write_manifest(out, {
        "source": source, "weights": weights, "config": cfg.to_dict(),
        "special_ids": {"pad": cfg.pad_id, "bos": cfg.bos_id, "eos": cfg.eos_id,
                        "unk": cfg.unk_id},
        "decoding": search.to_dict(),
        "vocabulary": [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)],
        "scores": [tokenizer.sp.get_score(i) for i in range(tokenizer.vocab_size)],
        "normalization": "nmt_nfkc, add_dummy_prefix, remove_extra_whitespaces"})


def export_checkpoint(path: str | os.PathLike, out: str | os.PathLike, **kwargs) -> dict:
    """:func:`export_model` of a checkpoint file (its model and tokenizer)."""
    from ..inference import load_model
    model, tokenizer = load_model(path)
    return export_model(model, tokenizer, out, source=Path(path).name, **kwargs)


def check_export(model: Transformer, folder: str | os.PathLike, atol: float = 1e-4) -> None:
    """Raise :class:`ExportError` unless onnxruntime reproduces ``model`` (plain form, eval)
    on a sample batch: memory, the next-token logits and every attention weight."""
    import onnxruntime as ort
    folder = Path(folder)
    cfg = model.cfg
    src = torch.tensor([[9, 8, 7, 6, 5, cfg.eos_id], [4, 5, cfg.eos_id] + [cfg.pad_id] * 3])
    tgt_in = torch.tensor([[cfg.bos_id, 4, 5, 6], [cfg.bos_id, 7, 8, 9]])
    with torch.no_grad():
        memory, enc_w = EncoderGraph(model)(src)
        logits, self_w, cross_w = DecoderGraph(model)(tgt_in, memory, src)
    encoder = ort.InferenceSession(str(folder / FILES["encoder"]))
    decoder = ort.InferenceSession(str(folder / FILES["decoder"]))
    got = dict(zip(["memory", "encoder_attention"], encoder.run(None, {"src": src.numpy()})))
    got.update(zip(["logits", "self_attention", "cross_attention"], decoder.run(
        None, {"tgt_in": tgt_in.numpy(), "memory": memory.numpy(), "src": src.numpy()})))
    expected = {"memory": memory, "encoder_attention": enc_w, "logits": logits,
                "self_attention": self_w, "cross_attention": cross_w}
    for name, value in expected.items():
        diff = (torch.from_numpy(got[name]) - value).abs().max().item()
        if not diff <= atol:
            raise ExportError(f"the exported {name} differs from torch's by {diff:.2e} "
                              f"(> {atol}): the graph in {folder} is wrong")
