"""The boundaries of ``transformer.doubt``, and the rule at work
behind every search the reader can choose on the command line.

The rule: the input is mostly unknown when at least half of its pieces are ``<unk>``; the
translation loops when a word or a pair of words comes three times back to back, or a run
of three or more words twice. Each case below sits just inside or just outside one of those
thresholds, for single words, pairs and longer runs. ``translate`` names on stderr the lines
the model is unsure of whatever its ``--beam`` and ``--alpha``: a stand-in model that copies
its input makes each search output the line itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers import toy_config
from transformer.doubt import doubt
from transformer.tools import cli

PAD, BOS, EOS, UNK = 0, 1, 2, 3
LOOP, UNKNOWN = "loop", "unknown"


def words(*ids: int) -> str:
    return " ".join(f"w{i}" for i in ids)


# (translation, what doubt says: LOOP, or None)
LOOPS = [
    # one word: twice is a sentence ("sehr, sehr"), three times a loop
    (words(5, 5), None),
    (words(5, 5, 5), LOOP),
    (words(4, 5, 5, 6, 5), None),                        # three times, not back to back
    (words(5, 5, 5, 4, 6), LOOP), (words(4, 6, 5, 5, 5), LOOP), (words(4, 5, 5, 5, 6), LOOP),
    # a pair: twice is a sentence, three times a loop
    (words(5, 6, 5, 6), None),
    (words(5, 6, 5, 6, 5), None),                        # two and a half times
    (words(4, 5, 6, 5, 6, 7), None),
    (words(5, 6, 5, 6, 5, 6), LOOP),
    (words(4, 5, 6, 5, 6, 5, 6, 7), LOOP),
    # three words or more: once and a part is a sentence, twice a loop
    (words(5, 6, 7, 5, 6), None),
    (words(5, 6, 7, 5, 6, 8), None),
    (words(5, 6, 7, 5, 6, 7), LOOP),
    (words(4, 5, 6, 7, 5, 6, 7, 8), LOOP),
    (words(5, 6, 7, 8, 5, 6, 7, 9), None),
    (words(5, 6, 7, 8, 5, 6, 7, 8), LOOP),
    (words(*range(5, 11), *range(5, 10), 12), None),     # six words, then five of them
    (words(*range(5, 11), *range(5, 11)), LOOP),         # six words twice
    (words(*range(5, 12), *range(5, 12)), LOOP),         # seven words twice: half the text
    # punctuation does not hide a repeat; words alone do not make one
    ("Hund. Hund! Hund?", LOOP), ("Hund, Hund.", None),
    ("über den Kreis über den Kreis.", LOOP), ("über den Kreis über den Berg.", None),
    ("", None), ("Ein Mann und eine Frau und ein Kind gehen.", None),
]

# (source ids, what doubt says about the input: UNKNOWN, or None)
INPUTS = [
    ([UNK, 900], UNKNOWN),                    # one half
    ([UNK, 900, 901], None),                  # one third
    ([UNK, UNK, 900, 901], UNKNOWN),          # two of four
    ([UNK, UNK, 900, 901, 902], None),        # two of five: just under half
    ([UNK, UNK, UNK, 900, 901], UNKNOWN),     # three of five
    ([UNK], UNKNOWN), ([900], None), ([], None),
]


def verdict(reason: str | None) -> str | None:
    if reason is None:
        return None
    return UNKNOWN if "unknown" in reason else LOOP if "(a loop)" in reason else reason


@pytest.mark.parametrize("translation, expected", LOOPS)
def test_a_repeat_is_a_loop_just_past_its_threshold(translation, expected):
    assert verdict(doubt([900, 901], UNK, translation)) == expected


@pytest.mark.parametrize("source, expected", INPUTS)
def test_the_input_is_unknown_from_half_its_pieces(source, expected):
    assert verdict(doubt(source, UNK, "Ein Hund läuft.")) == expected


# (the translation's sub-word pieces, what doubt says): a loop inside one word
PIECES = [
    (["▁beim", "▁Wer", "b", "end", "end", "end", "end", "en", "keb", "en", "▁helfen", "?"], LOOP),
    (["▁Wer", "b", "end", "end", "en"], None),                 # twice is a word
    (["▁ha", "ha", "ha"], LOOP),                                # the word's first piece too
    (["▁Pa", "pa", "gei"], None),
    (["▁a", "b", "a", "b", "a", "b"], LOOP),                    # a pair three times
    (["▁a", "b", "a", "b", "a"], None),
    (["▁end", "▁end", "▁end"], None),                           # words: the words' rule
    (["▁Mann", "▁Mann", "▁Mann"], None),                        # ... which reads the text
    (["▁x", "y", "z", "x", "y", "z"], None),                    # three pieces: not inside a word
]


@pytest.mark.parametrize("pieces, expected", PIECES)
def test_a_sub_word_piece_repeated_inside_a_word_is_a_loop(pieces, expected):
    text = "".join(pieces).replace("\u2581", " ").strip()
    words_loop = verdict(doubt([900], UNK, text))
    assert verdict(doubt([900], UNK, text, pieces)) == (expected or words_loop)
    if expected:
        assert words_loop is None                                # the words alone miss it


def test_a_loop_is_named_by_its_repeated_words():
    assert '"w5"' in doubt([900], UNK, words(4, 5, 5, 5))
    assert '"w5 w6"' in doubt([900], UNK, words(5, 6, 5, 6, 5, 6))
    assert '"w5 w6 w7"' in doubt([900], UNK, words(4, 5, 6, 7, 5, 6, 7))
    assert "2 of 4 pieces" in doubt([UNK, UNK, 900, 901], UNK, words(5, 5, 5))  # input first
    # inside a word: the repeated pieces joined as they are written, in the word without its mark
    assert doubt([900], UNK, "ababab", ["\u2581a", "b", "a", "b", "a", "b"]) == \
        'the translation repeats "ab" inside "ababab" (a loop)'


# ------------------------------------------------------------ behind every search
class CopyModel(torch.nn.Module):
    """A stand-in translator whose next token is the source's token at the same position
    (EOS after the source's last), all but certainly: greedy and beam search of any width
    and length penalty output the source itself."""

    def __init__(self):
        super().__init__()
        self.cfg = toy_config(vocab_size=64, max_len=64)      # its ids and length only
        self.anchor = torch.nn.Parameter(torch.zeros(1))     # where the model "lives"

    def source_mask(self, src):
        return (src != PAD)[:, None, None, :]

    def encode(self, src, src_mask):
        return src[..., None].float()                         # (B, S, 1): the source ids

    def decode(self, tgt_in, memory, src_mask):
        position = tgt_in.size(1) - 1
        logits = torch.full((tgt_in.size(0), tgt_in.size(1), self.cfg.vocab_size), -30.0)
        for b in range(tgt_in.size(0)):
            token = int(memory[b, position, 0]) if position < memory.size(1) else EOS
            logits[b, -1, token if token != PAD else EOS] = 0.0
        return logits

    def project(self, states):
        return states


class WordTokenizer:
    """``w{i}`` is id i; any other word is <unk>."""

    def encode(self, text):
        return [int(w[1:]) if w[:1] == "w" and w[1:].isdigit() else UNK for w in text.split()]

    def encode_batch(self, texts):
        return [self.encode(t) for t in texts]

    def decode_batch(self, rows):
        return [" ".join(f"w{i}" for i in row) for row in rows]

    def id_to_piece(self, i):
        return f"\u2581w{i}"


SEARCHES = [("1", "0.6"), ("2", "0.6"), ("4", "0.6"), ("4", "0.0"), ("4", "1.5")]


@pytest.mark.parametrize("beam, alpha", SEARCHES, ids=lambda v: v)
def test_translate_names_the_unsure_lines_whichever_search_it_runs(
        beam, alpha, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_load", lambda args: (CopyModel(), WordTokenizer()))
    lines = [text for text, _ in LOOPS if text.startswith("w")]
    lines += ["w5 x y", "w5 w6 x"]                       # two thirds, one third unknown
    expected = [verdict for text, verdict in LOOPS if text.startswith("w")] + [UNKNOWN, None]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert cli.main(["translate", "model.pt", "--input", str(source), "--beam", beam,
                     "--alpha", alpha]) in (None, 0)
    out, err = capsys.readouterr()
    copied = out.splitlines()
    assert copied[:-2] == lines[:-2]                     # each search output the line itself
    unsure = {int(line.split(":")[0].split()[1]): line for line in err.splitlines()
              if ": the model is unsure: " in line}
    got = [verdict(unsure[i + 1].split("unsure: ", 1)[1]) if i + 1 in unsure else None
           for i in range(len(lines))]
    assert got == expected


# ------------------------------------------------------------ the cases the page shares
FIXTURE = json.loads((Path(__file__).parent / "js" / "fixtures" / "doubt.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["note"])
def test_each_shared_case_gets_its_kind_of_note(case):
    """tests/js/fixtures/doubt.json, the cases the page's doubt.js is held to as well
    (tests/js/doubt.test.js; tests/test_page_code.py compares the two word for word)."""
    note = doubt(case["ids"], FIXTURE["unk"], case["text"], case["pieces"], **case.get("options", {}))
    if case["expect"] is None:
        assert note is None
    else:
        assert note and FIXTURE["kinds"][case["expect"]] in note, note
        assert note == case["says"]                     # the note, word for word


def test_the_cross_attention_is_the_models_over_source_and_translation():
    """cross_attention gives doubt the decoder's attention over the source pieces and EOS,
    one row for BOS and each output token, each row a distribution."""
    from transformer.doubt import cross_attention
    from transformer.model import Transformer
    cfg = toy_config(vocab_size=64, max_len=32)
    model = Transformer(cfg).eval()
    got = cross_attention(model, [5, 6, 7], [8, 9])
    layers, heads, q_len, k_len = got["dims"]
    assert (layers, heads, q_len, k_len) == (cfg.n_decoder_layers, cfg.n_heads, 3, 4)
    rows = torch.tensor(got["data"]).view(-1, k_len).sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


def test_the_doubt_benchmark_counts_the_flagged_lines_and_reads_the_attention_as_doubt():
    """benchmarks/book/doubt_quality.py: what its set keeps of the attention (the coverage
    each source piece gathered) gives doubt's note of the whole attention, and its
    measure counts flagged wrong and flagged good lines, skipping unlabelled ones."""
    from benchmarks.book.doubt_quality import measure, note
    from transformer.doubt import coverage
    with_cross = [c for c in FIXTURE["cases"] if "cross" in c.get("options", {})]
    assert len(with_cross) >= 5
    for c in with_cross:
        o = c["options"]
        item = {"source_ids": c["ids"], "translation": c["text"], "pieces": c["pieces"],
                "source": o["source"], "source_pieces": o.get("source_pieces", []),
                "coverage": coverage(o["cross"], len(o.get("source_pieces", [])))}
        assert note(item, FIXTURE["unk"]) == doubt(c["ids"], FIXTURE["unk"], c["text"], c["pieces"], **o)
    line = lambda source, translation, label: {  # noqa: E731
        "origin": source, "source": source, "translation": translation, "label": label,
        "source_ids": [5, 6], "source_pieces": [], "pieces": [], "coverage": []}
    got = measure({"unk_id": FIXTURE["unk"], "items": [
        line("I waited two hours.", "Ich habe drei Stunden gewartet.", "wrong"),   # flagged
        line("I saw Mary.", "Ich sah sie.", "wrong"),                              # flagged
        line("A dog runs.", "Eine Katze läuft.", "wrong"),                         # missed
        line("Two dogs run.", "Zwei Hunde laufen.", "good"),
        line("I saw Tom.", "Ich sah ihn.", "good"),                                # a false alarm
        line("Four cats.", "Fünf Katzen.", None)]})                                # unlabelled
    assert (got["flagged_wrong"], got["wrong"], got["flagged_good"], got["good"]) == (2, 3, 1, 2)
    assert got["by_kind"] == {"number": {"good": 0, "wrong": 1}, "name": {"good": 1, "wrong": 1}}


def test_translate_gives_doubt_the_line_its_pieces_without_eos_and_the_attention(
        tmp_path, monkeypatch, capsys):
    """The command line's doubt reads what the page's does: the typed line, its pieces
    without EOS, and the encoder-decoder attention of the translation (one row for BOS and
    each output token, one column for each source piece and EOS)."""
    from transformer.model import Transformer
    model = Transformer(toy_config(vocab_size=64, max_len=64)).eval()
    monkeypatch.setattr(cli, "_load", lambda args: (model, WordTokenizer()))
    seen = []
    monkeypatch.setattr(cli, "doubt", lambda *a, **k: seen.append((a, k)))
    source = tmp_path / "in.txt"
    source.write_text("w5 w6 w7\nw8 w9\n", encoding="utf-8")
    assert cli.main(["translate", "model.pt", "--input", str(source), "--beam", "1"]) in (None, 0)
    capsys.readouterr()
    assert [k["source"] for _, k in seen] == ["w5 w6 w7", "w8 w9"]
    for (ids, _, _, pieces), k in seen:
        assert k["source_pieces"] == [f"\u2581w{i}" for i in ids] and EOS not in ids
        layers, heads, q_len, k_len = k["cross"]["dims"]
        assert (layers, heads) == (model.cfg.n_decoder_layers, model.cfg.n_heads)
        assert k_len == len(ids) + 1 and q_len == len(pieces) + 1


# ------------------------------------------------------------ names, worked out by hand
@pytest.mark.parametrize("source, translation, named", [
    # a possessive is the name without its 's, straight or curly: "Mary", not "Ma" nor "Mar"
    ("I saw Mary's dog.", "Ich sah den Hund.", "Mary"),
    ("I saw Mary’s dog.", "Ich sah den Hund.", "Mary"),
    ("I saw Mary’s dog.", "Ich sah den Mann.", "Mary"),         # "ma" is in "mann", "mar" not
    ("I saw Mary’s dog.", "Ich sah Marias Hund.", None),
    # "I" inside a sentence is no name, even where the translation has no "i" in it
    ("Yesterday I ran.", "Gestern rannte er.", None),
    # a plural weekday is no name either ("sun" is not in "sonntags")
    ("We rest on Sundays.", "Wir ruhen sonntags.", None),
    # ... but only the weekday, the month or its plural: a word that begins with one is a name
    ("The MayX team won.", "Das Team gewann.", "MayX"),
    # a sentence ends at its mark, behind a closing quote too: its next word is its first
    ('Tom said "no." Then he left.', "Tom sagte „nein.“ Dann ging er.", None),
    ("Tom ran! Then he left.", "Tom rannte! Dann ging er.", None),
    ("Tom ran? Then he left.", "Tom rannte? Dann ging er.", None),
    ("Tom said: Then he left.", "Tom sagte: Dann ging er.", None),
    # ... and not at a letter after a dot: "2.X" ends no sentence, so Python is a name
    ("We use version 2.X Python today.", "Wir nutzen heute Version 2.X.", "Python"),
])
def test_a_name_is_a_capitalised_word_inside_a_sentence(source, translation, named):
    note = doubt([900], UNK, translation, source=source)
    if named is None:
        assert note is None
    else:
        assert note == f'the name "{named}" is not in the translation (dropped or changed)'


def test_an_english_number_word_counts_whole_not_as_a_prefix():
    # "tent" begins with "ten", "seventy" is no "seven": the source's words are read whole
    assert doubt([900], UNK, "Das Zelt ist grün.", source="The tent is green.") is None
    assert doubt([900], UNK, "Sie ist siebzig.", source="She is seventy.") is None


# ------------------------------------------------------------ coverage, worked out by hand
def one_head(*weights: float) -> dict:
    """One layer, one head, one decoder step giving the source pieces (and EOS, last)
    ``weights``: each piece's coverage is its weight."""
    return {"dims": [1, 1, 1, len(weights)], "data": list(weights)}


@pytest.mark.parametrize("pieces, weights, unread", [
    # a word of exactly four letters counts; its note names it without the word mark
    (["▁Das", "▁Haus", "▁steht"], (0.35, 0.1, 0.5, 0.05), "Haus"),
    (["▁Das", "▁Haus", "▁steht"], (0.05, 0.4, 0.5, 0.05), None),      # 0.4 is read
    (["▁Das", "▁Haus", "▁steht"], (0.05, 0.39, 0.5, 0.06), "Haus"),   # just under it
    (["▁Der", "▁Hund"], (0.1, 0.2, 0.7), "Hund"),                     # the last word, too
    # a word of two short pieces is one word of six letters, its pieces' weights summed
    (["▁Hau", "ses", "▁Tür"], (0.1, 0.1, 0.75, 0.05), "Hauses"),
    (["▁Hau", "ses", "▁Tür"], (0.2, 0.2, 0.55, 0.05), None),          # 0.2 + 0.2 = 0.4
    # a first piece without the word mark still begins a word that must be read
    (["Wasser", "▁ist"], (0.1, 0.85, 0.05), "Wasser"),
])
def test_a_word_no_head_reads_is_named(pieces, weights, unread):
    note = doubt([900], UNK, "x", source="", source_pieces=pieces, cross=one_head(*weights))
    assert note == (None if unread is None else f'the attention hardly read "{unread}" (a word dropped?)')
