"""Can the page's model be stored smaller? The exported graphs with int8 and fp16 weights
against the fp32 ones (``transformer.tools.export.compare_forms``), on both test splits.

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

AGREEMENT, BLEU_CHANGE = 0.95, 0.3        # issue #35: what a smaller form must keep


def passes(entry: dict) -> bool:
    return entry["greedy_agreement"] >= AGREEMENT and abs(entry["bleu_change"]) <= BLEU_CHANGE


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
    from transformer.tools.export import compare_forms
    from transformer.inference import load_model
    from transformer.provenance import provenance, write_record
    torch.set_num_threads(args.threads)
    checkpoint = args.checkpoint
    if checkpoint is None:
        from transformer_book.runs import book_run_config, cached_run
        checkpoint = cached_run(book_run_config()) / "average.pt"
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
