"""A stand-in model for the page's search loops (tests/helpers.py's ``StandInModel``): its
next-token logits are a fixed function of the prefix and the source, written the same way
in tests/js/search.test.js. The ids
``greedy_decode`` and ``beam_search`` give on it are tests/js/fixtures/search.json, which
the Node tests hold the page's search.js to (tests/test_page_code.py keeps the file equal
to what the package's search gives now)."""
from __future__ import annotations

import math

import torch

from helpers import StandInModel
from transformer.decoding import beam_search, build_source_batch, greedy_decode

V, MAX_LEN = 9, 12
SOURCES = [[4, 5, 6], [7], [8, 8, 4, 5], [5, 6, 7, 8, 4], [6, 4], [8], [4, 4, 4, 4, 4, 4]]
SEARCHES = [("greedy", None, None, 50), ("beam", 4, 0.6, 50), ("beam", 2, 1.0, 50),
            ("beam", 4, 0.0, 3), ("beam", 3, 0.6, 1), ("beam", 4, 3.0, 50), ("beam", 5, 2.0, 50)]


def logits(prefix: list[int], source: list[int]) -> list[float]:
    """The next token's logits after ``prefix`` (BOS first) for ``source`` (EOS last)."""
    t, last, total = len(prefix), prefix[-1], sum(source)
    return [2.5 * math.sin(1.3 * v + 0.7 * t + 0.37 * last + 0.11 * total) + (0.12 * t * t - 1.0 if v == 2 else 0.0)
            for v in range(V)]


def expected() -> dict:
    model = StandInModel(logits, V, MAX_LEN, dtype=torch.float64)
    src = build_source_batch(SOURCES, model.cfg.pad_id, model.cfg.eos_id, MAX_LEN)
    cases = []
    for name, k, alpha, extra in SEARCHES:
        ids = (greedy_decode(model, src, max_extra=extra) if name == "greedy"
               else beam_search(model, src, beam_size=k, alpha=alpha, max_extra=extra))
        cases.append({"search": name, "beam_size": k, "alpha": alpha, "max_extra": extra,
                      "ids": ids})
    return {"vocab": V, "max_len": MAX_LEN, "sources": SOURCES, "cases": cases}


if __name__ == "__main__":
    import json
    print(json.dumps(expected()))
