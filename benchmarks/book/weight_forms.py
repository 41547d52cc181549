"""Can the page's model be stored smaller? The exported graphs with int8 and fp16 weights
against the fp32 ones (:func:`compare_forms`), on both test splits.

For each form: the download (the graphs and weights.bin), the share of the first
``--sentences`` test sentences of each split whose greedy token ids equal the fp32
graphs', and the BLEU of beam 4 (the page's search) on each whole split, fp32 beside it.
The form passes when the ids agree on at least 95% of the sentences and the BLEU moves by
at most 0.3 on every split (issue #35). Writes the record with its provenance:

    python -m benchmarks.book.weight_forms --checkpoint runs/tiny/average.pt
    python -m benchmarks.book.weight_forms --record book/results/weight_forms.json  # the book's

Without ``--checkpoint`` it takes the book's model (trained first if the run cache lacks
it). ``--bleu-sentences N`` scores only the first N sentences of each split (a quick look;
the record says so).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.record import add_option
from transformer.decoding import PAPER_SEARCH, build_source_batch, greedy_decode

AGREEMENT, BLEU_CHANGE = 0.95, 0.3        # issue #35: what a smaller form must keep


def passes(entry: dict) -> bool:
    return entry["greedy_agreement"] >= AGREEMENT and abs(entry["bleu_change"]) <= BLEU_CHANGE


def _greedy_ids(model, tokenizer, sentences: list[str], batch_size: int = 32) -> list[list[int]]:
    cfg, out = model.cfg, []
    for start in range(0, len(sentences), batch_size):
        ids = [tokenizer.encode(s) for s in sentences[start:start + batch_size]]
        out += greedy_decode(model, build_source_batch(ids, cfg.pad_id, cfg.eos_id, cfg.max_len))
    return out


def compare_forms(model, tokenizer, forms=("int8", "fp16"),
                  splits=(("multi30k-en-de", "test"), ("tatoeba-en-de", "test")),
                  agreement_sentences: int = 200, bleu_sentences: int = 0, beam_size: int | None = None,
                  data_root=None, folder=None) -> dict:
    """What storing the weights in a smaller form changes, measured on the exported graphs
    in onnxruntime (the page's arithmetic): for each form and each split, the share of the
    first ``agreement_sentences`` test sentences whose greedy token ids equal the fp32
    graphs' (and the first that differs), and the BLEU of both with beam ``beam_size``
    (the page's search) on the first ``bleu_sentences`` (0: the whole split). The graphs
    are exported into ``folder`` (a temporary one by default). Returns the record's body."""
    import tempfile
    from transformer.data import load_corpus
    from transformer.evaluate import score
    from transformer.tools.export import export_model
    from transformer.tools.manifest import page_files
    from transformer.tools.onnx_model import OnnxModel
    from transformer.translation import translate
    beam_size = beam_size or PAPER_SEARCH.beam_size
    if agreement_sentences < 1 or bleu_sentences < 0:
        raise ValueError(f"agreement_sentences must be >= 1 and bleu_sentences >= 0 (0: all), "
                         f"got {agreement_sentences} and {bleu_sentences}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(folder or tmp)
        graphs, sizes = {}, {}
        for form in ("fp32",) + tuple(f for f in forms if f != "fp32"):
            manifest = export_model(model, tokenizer, root / form, weights=form)
            graphs[form] = OnnxModel(root / form)
            sizes[form] = sum(f["bytes"] for f in page_files(manifest).values())
        result = {"model_bytes": sizes, "beam_size": beam_size, "splits": {}}
        for corpus, split in splits:
            data = load_corpus(corpus, split, root=data_root)
            chosen = data.src[:agreement_sentences]
            n_bleu = min(bleu_sentences or len(data.src), len(data.src))
            greedy = {f: _greedy_ids(g, tokenizer, chosen) for f, g in graphs.items()}
            bleu = {f: score(translate(g, tokenizer, data.src[:n_bleu], beam_size=beam_size),
                             data.tgt[:n_bleu])["bleu"] for f, g in graphs.items()}
            entry = {"agreement_sentences": len(chosen), "bleu_sentences": n_bleu,
                     "bleu": {"fp32": bleu["fp32"]}, "forms": {}}
            for form in graphs:
                if form == "fp32":
                    continue
                same = [a == b for a, b in zip(greedy[form], greedy["fp32"])]
                first = next((i for i, s in enumerate(same) if not s), None)
                entry["forms"][form] = {
                    "greedy_agreement": sum(same) / len(same), "bleu": bleu[form],
                    "bleu_change": bleu[form] - bleu["fp32"],
                    "first_difference": None if first is None else {
                        "sentence": chosen[first],
                        form: tokenizer.decode(greedy[form][first]),
                        "fp32": tokenizer.decode(greedy["fp32"][first])}}
            result["splits"][f"{corpus}/{split}"] = entry
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="default: the book's cached model")
    parser.add_argument("--forms", nargs="+", default=["int8", "fp16"],
                        choices=["int8", "fp16"])
    parser.add_argument("--sentences", type=int, default=200,
                        help="test sentences of each split for the greedy-id agreement")
    parser.add_argument("--bleu-sentences", type=int, default=0,
                        help="sentences of each split to score (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    add_option(parser, "weight_forms")
    args = parser.parse_args()
    import torch
    from transformer.inference import load_model
    from transformer.measuring.provenance import provenance, write_record
    torch.set_num_threads(args.threads)
    checkpoint = args.checkpoint
    if checkpoint is None:
        from transformer.training.cache import cached_run
        from transformer.training.recipes import recipe
        checkpoint = cached_run(recipe("book")) / "average.pt"     # the book's run
    model, tokenizer = load_model(checkpoint)
    body = compare_forms(model, tokenizer, forms=args.forms,
                         agreement_sentences=args.sentences, bleu_sentences=args.bleu_sentences)
    verdict = {form: all(passes(s["forms"][form]) for s in body["splits"].values())
               for form in args.forms}
    record = {"provenance": provenance(), "checkpoint": str(checkpoint),
              "parameters": sum(p.numel() for p in model.parameters()),
              "criteria": {"greedy_agreement_at_least": AGREEMENT,
                           "bleu_change_at_most": BLEU_CHANGE},
              **body, "passes": verdict}
    if args.record:
        write_record(args.record, record)
    for split, s in body["splits"].items():
        for form, e in s["forms"].items():
            print(f"{split} {form}: greedy ids as fp32 on {e['greedy_agreement']:.1%} of "
                  f"{s['agreement_sentences']}; BLEU {e['bleu']:.2f} (fp32 "
                  f"{s['bleu']['fp32']:.2f}, {e['bleu_change']:+.2f}) on {s['bleu_sentences']}")
    sizes = ", ".join(f"{f} {b / 2**20:.2f} MiB" for f, b in body["model_bytes"].items())
    print(f"download: {sizes}; passes: {verdict}"
          + (f"; wrote {args.record}" if args.record else ""))


if __name__ == "__main__":
    main()
