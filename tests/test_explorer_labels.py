"""Chapter 9's attention explorer (book/transformer_book/viz.py): the rows of
encoder-decoder attention are labelled by the target token each row predicts (the
decoder's input shifted left by one), not by the decoder's input token, whose row
gathers what the decoder needs for the *next* token."""
from __future__ import annotations

import torch

from transformer_book import viz


def example():
    source = ["▁A", "▁dog", "▁runs", ".", "⟨/s⟩"]
    target = ["⟨s⟩", "▁Ein", "▁Hund", "▁läuft", "."]          # the decoder's input
    predicted = ["▁Ein", "▁Hund", "▁läuft", ".", "⟨/s⟩"]       # what each row predicts
    S, T = len(source), len(target)
    weights = {"encoder.self": torch.full((2, 2, S, S), 1 / S),
               "decoder.self": torch.tril(torch.ones(T, T)).div(torch.arange(1, T + 1)[:, None]).expand(2, 2, T, T),
               "decoder.cross": torch.full((2, 2, T, S), 1 / S)}
    return {"name": "s", "source": source, "target": target, "predicted": predicted, "weights": weights}


def test_cross_attention_rows_are_the_predicted_tokens():
    ex = example()
    fig = viz.attention_explorer([ex])
    buttons = {b.label: b for b in fig.layout.updatemenus[0].buttons}
    cross = buttons["s: encoder-decoder attention"]
    self_ = buttons["s: decoder self-attention (masked)"]
    rows = lambda button: [label.split(":", 1)[1] for label in button.args[0]["y"][0]]
    assert rows(cross) == ex["predicted"]
    assert rows(self_) == ex["target"]
    assert rows(cross)[:-1] == rows(self_)[1:]                 # the input, one to the left
    assert "predicts" in cross.args[1]["yaxis.title.text"]
    assert "predicts" not in self_.args[1]["yaxis.title.text"]


def test_pieces_are_found_by_their_word():
    pieces = ["▁The", "▁L", "aw", "▁will", ",", "▁its", ".", "⟨/s⟩"]
    assert viz.piece_words(pieces) == ["The", "Law", "Law", "will", ",", "its", ".", "⟨/s⟩"]

