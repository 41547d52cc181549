"""How well does the translator's doubt note (transformer/doubt.py, the page's doubt.js)
pick out the wrong translations? On a labelled set of held-out test sentences, the share
of the wrong translations it flags and the share of the good ones it flags too.

The set (``benchmarks/book/doubt_set.json``) is made once from a checkpoint, then labelled
by hand, then measured whenever the rule changes:

    python -m benchmarks.book.doubt_quality --make-set --checkpoint RUN/average.pt
    (read each translation beside its reference; set "label" to "good" or "wrong")
    python -m benchmarks.book.doubt_quality --record book/results/doubt.json

The development set (``--make-set --split valid --set benchmarks/book/doubt_dev.json``,
labelled the same way) is where the coverage rule's form and threshold were chosen; the
record gives its figures too, under "dev", beside the test set's.

``--make-set`` translates every ``--every``-th line of the held-out test splits of
Tatoeba and Multi30k (none of them written for this check; ``--split valid`` takes their
valid splits instead: the development set ``doubt_dev.json`` on which the coverage rule's
threshold was chosen) with the page's search (beam 4) and keeps, beside each source,
reference and translation, everything doubt reads of the model: the source's and the
translation's pieces and, for coverage, the attention each source piece gathered over
all steps (all that the coverage rule reads of the attention, see
:func:`transformer.doubt.coverage`), so that measuring needs no checkpoint. Measuring runs
:func:`transformer.doubt.doubt` on each labelled line; a line with no label is skipped.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.record import add_option, save

SET = Path(__file__).with_name("doubt_set.json")
DEV = Path(__file__).with_name("doubt_dev.json")
CORPORA = ("tatoeba-en-de", "multi30k-en-de")
LABELS = ("good", "wrong")


def make_set(checkpoint: Path, every: int, per_split: int, data_root=None,
             split: str = "test") -> dict:
    """The unlabelled set: every ``every``-th line of the ``split`` of CORPORA,
    ``per_split`` of each, translated by ``checkpoint`` with the page's search."""
    from transformer.data import load_corpus
    from transformer.doubt import coverage, cross_attention
    from transformer.inference import load_model
    from transformer.translation import translations
    model, tokenizer = load_model(checkpoint)
    items = []
    for corpus in CORPORA:
        pairs = load_corpus(corpus, split, root=data_root)
        lines = list(range(0, len(pairs.src), every))[:per_split]
        sources = [pairs.src[i] for i in lines]
        for line, done in zip(lines, translations(model, tokenizer, sources, beam_size=4)):
            read = coverage(cross_attention(model, done.source, done.ids), len(done.source))
            items.append({"origin": f"{corpus} {split} line {line + 1}",
                          "source": pairs.src[line], "reference": pairs.tgt[line],
                          "translation": done.text, "label": None,
                          "source_ids": done.source,
                          "source_pieces": [tokenizer.id_to_piece(i) for i in done.source],
                          "pieces": [tokenizer.id_to_piece(i) for i in done.ids],
                          "coverage": [round(w, 4) for w in read]})
    return {"checkpoint": str(checkpoint), "unk_id": model.cfg.unk_id, "search": "beam 4",
            "labelling": None, "items": items}


def note(item: dict, unk_id: int) -> str | None:
    """What doubt says of one line of the set (the attention as one step that gives each
    source piece the coverage it gathered, which is all the coverage rule reads)."""
    from transformer.doubt import doubt
    cross = {"dims": [1, 1, 1, len(item["coverage"])], "data": item["coverage"]}
    return doubt(item["source_ids"], unk_id, item["translation"], item["pieces"],
                 source=item["source"], source_pieces=item["source_pieces"], cross=cross)


def measure(labelled: dict) -> dict:
    """Flagged wrong / all wrong and flagged good / all good, and each line's note."""
    items = [i for i in labelled["items"] if i["label"] in LABELS]
    notes = [note(i, labelled["unk_id"]) for i in items]
    count = {label: sum(i["label"] == label for i in items) for label in LABELS}
    flagged = {label: sum(i["label"] == label and n is not None for i, n in zip(items, notes))
               for label in LABELS}
    kinds: dict[str, dict[str, int]] = {}
    for i, n in zip(items, notes):
        if n:
            kind = next((k for k, words in KINDS.items() if words in n), "other")
            kinds.setdefault(kind, {"good": 0, "wrong": 0})[i["label"]] += 1
    return {"wrong": count["wrong"], "good": count["good"],
            "flagged_wrong": flagged["wrong"], "flagged_good": flagged["good"],
            "flagged_wrong_share": round(flagged["wrong"] / max(1, count["wrong"]), 3),
            "flagged_good_share": round(flagged["good"] / max(1, count["good"]), 3),
            "by_kind": kinds,
            "lines": [{"origin": i["origin"], "label": i["label"], "note": n}
                      for i, n in zip(items, notes)]}


KINDS = {"unknown": "unknown to the model", "loop": "(a loop)",
         "number": "(a number dropped or changed)", "name": "(dropped or changed)",
         "unread": "(a word dropped?)"}


def _shown(path: Path) -> str:
    return str(path.relative_to(Path.cwd()) if path.is_absolute() and
               path.is_relative_to(Path.cwd()) else path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET, help=f"the labelled set (default {SET})")
    parser.add_argument("--dev", type=Path, default=DEV,
                        help=f"the labelled development set, measured too (default {DEV})")
    parser.add_argument("--make-set", action="store_true",
                        help="translate the --split's lines and write the set, unlabelled")
    parser.add_argument("--split", default="test", choices=("test", "valid"),
                        help="--make-set: the corpora's split (default test; valid: the dev set)")
    parser.add_argument("--checkpoint", type=Path, help="the model --make-set translates with")
    parser.add_argument("--every", type=int, default=40, help="--make-set: every N-th line")
    parser.add_argument("--per-split", type=int, default=30, help="--make-set: lines of each split")
    parser.add_argument("--data-root", help="--make-set: the corpora's folder (default: "
                                            "$TRANSFORMER_DATA, else ~/.cache/transformer/data)")
    add_option(parser, "doubt")
    args = parser.parse_args()
    if args.make_set:
        if args.checkpoint is None:
            parser.error("--make-set needs --checkpoint")
        made = make_set(args.checkpoint, args.every, args.per_split, args.data_root,
                        args.split)
        args.set.write_text(json.dumps(made, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{len(made['items'])} lines written to {args.set}: label each 'good' or 'wrong'")
        return
    labelled = json.loads(args.set.read_text(encoding="utf-8"))
    figures = measure(labelled)
    dev = measure(json.loads(args.dev.read_text(encoding="utf-8")))
    for name, got in (("test", figures), ("dev", dev)):
        print(f"{name}: flagged {got['flagged_wrong']} of {got['wrong']} wrong translations "
              f"and {got['flagged_good']} of {got['good']} good ones")
    figures["dev"] = {"set": _shown(args.dev), **{k: v for k, v in dev.items() if k != "lines"}}
    save(args.record, "the doubt note on a labelled set of held-out test translations: "
         "flagged wrong / all wrong, flagged good / all good (and under \"dev\" the same on "
         "the development set of valid lines the coverage threshold was chosen on)", figures,
         set=_shown(args.set),
         checkpoint=labelled["checkpoint"], labelling=labelled["labelling"])


if __name__ == "__main__":
    main()
