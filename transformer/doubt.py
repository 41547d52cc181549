"""Why a translation should not be trusted: a display heuristic, not part of the paper.

The command line's ``translate`` names the lines it doubts on stderr, and the in-page
translator (``book/_ext/static/translator/doubt.js``, the same rule, held equal by
tests/test_page_code.py on the cases of tests/js/fixtures/doubt.json) shows a note under
them.
"""
from __future__ import annotations

import re
from typing import Sequence

__all__ = ["doubt", "cross_attention", "coverage", "numbers", "COVERED"]

WORD_START = "\u2581"                       # SentencePiece's mark of a word's first piece
PUNCTUATION = ".,;:!?\"'«»„“”"

# number words, English and German, and their values; a German compound ("fünfundzwanzig")
# reads as its parts (5 and 20), as does an English one with a hyphen ("twenty-five"), and
# a German word that begins with a number word counts as it too ("dreimal": 3). English
# "one" is no number here ("no one", "one of them": German says "niemand", "einer").
ENGLISH_NUMBERS = {w: i for i, w in enumerate(
    "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split()) if w != "_"}
ENGLISH_NUMBERS.update({"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
                        "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
                        "thousand": 1000})
GERMAN_NUMBERS = {w: i for i, w in enumerate(
    "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn "
    "fünfzehn sechzehn siebzehn achtzehn neunzehn".split())}
GERMAN_NUMBERS.update({"zwanzig": 20, "dreißig": 30, "vierzig": 40, "fünfzig": 50,
                       "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90,
                       "hundert": 100, "tausend": 1000, "zwo": 2, "beiden": 2,
                       "ein": 1, "eine": 1, "einen": 1, "einem": 1, "einer": 1, "eines": 1})
# capitalised words that are no names: German writes them otherwise ("sonntags", "Französisch")
NOT_NAMES = set("Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February "
                "March April May June July August September October November December English "
                "French German Spanish Italian Japanese Chinese Russian".split())
# the attention a word's pieces must gather over the whole translation (see coverage) for
# it to count as read: chosen on the development set of the corpora's valid splits
# (benchmarks/book/doubt_dev.json; its figures are book/results/doubt.json's "dev"), never
# on the test set, as the largest round value that flags few (under a tenth) of its good
# translations; the average over all layers was chosen there over the last layer's alone
COVERED = 0.4
SHORTEST_COVERED = 4  # letters: shorter words ("a", "is", "the") may go untranslated


def _loop(items: Sequence[str], longest: int) -> list[str] | None:
    """The first run of ``n`` items repeated back to back, ``n <= longest``: an item or a
    pair three times, three or more items twice."""
    for n in range(1, min(longest, len(items) // 2) + 1):
        times = 3 if n <= 2 else 2
        for start in range(len(items) - n * times + 1):
            gram = list(items[start:start + n])
            if all(list(items[start + k * n:start + (k + 1) * n]) == gram
                   for k in range(1, times)):
                return gram
    return None


def _words(text: str) -> list[str]:
    return [w for w in (w.strip(PUNCTUATION) for w in text.split()) if w]


def numbers(text: str, table: dict[str, int], prefix: bool = False) -> list[tuple[str, int]]:
    """The numbers ``text`` names: (the word, its value) for each run of digits and each
    number word of ``table`` (compounds read as their parts; with ``prefix``, a word that
    begins with a number word, the longest, counts as it too)."""
    found = []
    for word in _words(text):
        for digits in re.findall(r"[0-9]+", word):
            found.append((digits, int(digits)))
        for part in re.split(r"-|und(?=\w)", word.lower()):
            if part in table:
                found.append((word, table[part]))
            elif prefix:
                starts = [w for w in table if part.startswith(w)]
                if starts:
                    found.append((word, table[max(starts, key=len)]))
    return found


def _names(source: str) -> list[str]:
    """The source's capitalised words inside a sentence (not its first word, nor "I")."""
    names, first = [], True
    for raw in source.split():
        word = raw.strip(PUNCTUATION)
        if word.endswith(("'s", "’s")):
            word = word[:-2]
        if word and not first and word[0].isupper() and word.isalpha() \
                and word != "I" and word.rstrip("s") not in NOT_NAMES:
            names.append(word)
        first = raw.rstrip("\"'»“”)").endswith((".", "!", "?", ":")) or (first and not word)
    return names


def coverage(cross, n: int) -> list[float]:
    """The attention each of the first ``n`` source pieces gathered over the whole
    translation (coverage, Tu et al., 2016): at each step, the weight the encoder-decoder
    heads give it, averaged over the heads of all layers, summed over the steps.
    ``cross``: {"dims": [layers, heads, q, k], "data": the weights, flat}."""
    layers, heads, q_len, k_len = cross["dims"]
    data = cross["data"]
    total = [0.0] * min(n, k_len)
    for block in range(layers * heads):
        for q in range(q_len):
            row = (block * q_len + q) * k_len
            for k in range(len(total)):
                total[k] += data[row + k]
    return [t / (layers * heads) for t in total]


def _unread(source_pieces: Sequence[str], cross) -> str | None:
    """The first source word of SHORTEST_COVERED letters or more whose pieces gathered
    less than COVERED of the attention over the whole translation (see :func:`coverage`);
    ``cross``: {"dims": [layers, heads, q, k], "data": the weights, flat}, k covering the
    source pieces (EOS after them)."""
    gathered = coverage(cross, len(source_pieces))
    word, weight = "", 0.0
    for k, piece in enumerate(list(source_pieces) + [WORD_START]):
        if piece.startswith(WORD_START) or k == len(source_pieces):
            letters = sum(c.isalpha() for c in word)
            if letters >= SHORTEST_COVERED and weight < COVERED:
                return word
            word, weight = "", 0.0
        if k < len(source_pieces):
            word += piece.lstrip(WORD_START)
            weight += gathered[k] if k < len(gathered) else 0.0
    return None


def doubt(source_ids: Sequence[int], unk_id: int, translation: str,
          pieces: Sequence[str] = (), *, source: str = "", source_pieces: Sequence[str] = (),
          cross=None) -> str | None:
    """Why a translation should not be trusted, or None: the first of these signs that the
    model is out of its depth.

    * most of the input is unknown to it: at least half of the source pieces (without EOS)
      are ``<unk>`` (emoji, another script);
    * the translation loops: a run of words repeats back to back, a word or a pair of words
      three times ("Hund Hund Hund"), three or more words twice ("über den Kreis über den
      Kreis"); or, given the translation's sub-word ``pieces``, a piece or a pair of pieces
      three times back to back inside one word ("Werb|end|end|end|en"). Sound sentences of
      the book's corpora do not repeat a word thrice in a row;
    * given the ``source`` text, a number of it is missing or changed: each number the
      source names (digits, or an English number word but "one") has its value in the
      translation (digits, or a German number word, alone, in a compound or beginning a
      word: "dreimal"): "two hours" → "drei Stunden" lacks 2;
    * a name of the source is missing: the first three letters of each capitalised word
      inside a source sentence (not its first word, "I", a weekday, a month or a
      language, which German writes otherwise) lie in a word of the translation, ignoring
      case ("Mary's" → "Maria", "Festival" → "Renaissancefestival");
    * given the ``source_pieces`` (without EOS) and ``cross``, the encoder-decoder
      attention of one teacher-forced pass over the translation ({"dims": [layers, heads,
      q, k], "data": flat}, see :func:`cross_attention`), a source word was hardly read
      (coverage, Tu et al., 2016): the attention its pieces gathered over all steps
      (:func:`coverage`: averaged over the heads of all layers, summed over the steps and
      over the word's pieces) is under ``COVERED`` (0.4; a word read fully at one step
      gathers 1). Words of fewer than four letters do not count ("a", "is", "the": German
      often has no word for them).
    """
    if source_ids:
        unknown = sum(1 for i in source_ids if i == unk_id)
        if 2 * unknown >= len(source_ids):
            return f"most of the input is unknown to the model ({unknown} of " \
                   f"{len(source_ids)} pieces)"
    words = _words(translation)
    gram = _loop(words, len(words))
    if gram:
        return f"the translation repeats \"{' '.join(gram)}\" (a loop)"
    word: list[str] = []
    for piece in list(pieces) + [WORD_START]:
        if piece.startswith(WORD_START):
            gram = _loop([p.lstrip(WORD_START) for p in word], 2)
            if gram:
                return f"the translation repeats \"{''.join(gram)}\" inside " \
                       f"\"{''.join(word).lstrip(WORD_START)}\" (a loop)"
            word = []
        word.append(piece)
    found = {value for _, value in numbers(translation, GERMAN_NUMBERS, prefix=True)}
    for name, value in numbers(source, ENGLISH_NUMBERS):
        if value not in found:
            return f"the source's \"{name}\" is not in the translation (a number dropped " \
                   f"or changed)"
    lower = [w.lower() for w in words]
    for name in _names(source):
        if not any(name[:3].lower() in w for w in lower):
            return f"the name \"{name}\" is not in the translation (dropped or changed)"
    if cross is not None and source_pieces:
        unread = _unread(source_pieces, cross)
        if unread:
            return f"the attention hardly read \"{unread}\" (a word dropped?)"
    return None


def cross_attention(model, source_ids: Sequence[int], ids: Sequence[int]) -> dict:
    """The encoder-decoder attention of one teacher-forced pass of ``model`` over the
    source (``source_ids``, EOS added) and ``[BOS] + ids``, as :func:`doubt` reads it and
    the page's translator computes it for its map: {"dims": [layers, heads, q, k], "data":
    the weights, flat}; None for a model without attention layers (a stand-in)."""
    import torch

    from .attention import MultiHeadAttention
    from .recording import record_attention
    if not any(isinstance(m, MultiHeadAttention) for m in model.modules()):
        return None
    device = next(model.parameters()).device
    src = torch.tensor([list(source_ids) + [model.cfg.eos_id]], device=device)
    tgt = torch.tensor([[model.cfg.bos_id] + list(ids)], device=device)
    with torch.no_grad(), record_attention(model) as rec:
        model(src, tgt)
    weights = rec.stacked("decoder.cross")[:, 0].float().cpu()          # (L, h, q, k)
    return {"dims": list(weights.shape), "data": weights.flatten().tolist()}
