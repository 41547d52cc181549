"""Why a translation should not be trusted: a display heuristic, not part of the paper.

The command line's ``translate`` names the lines it doubts on stderr, and the in-page
translator (``book/_ext/static/translator/doubt.js``, the same rule, held equal by
tests/test_doubt.py) shows a note under them.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["doubt"]

WORD_START = "\u2581"                       # SentencePiece's mark of a word's first piece
PUNCTUATION = ".,;:!?\"'«»„“”"


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


def doubt(source_ids: Sequence[int], unk_id: int, translation: str,
          pieces: Sequence[str] = ()) -> str | None:
    """Why a translation should not be trusted, or None.

    Two signs the model is out of its depth:

    * most of the input is unknown to it: at least half of the source pieces are ``<unk>``
      (emoji, another script);
    * the translation loops: a run of words repeats back to back, a word or a pair of words
      three times ("Hund Hund Hund"), three or more words twice ("über den Kreis über den
      Kreis"); or, given the translation's sub-word ``pieces``, a piece or a pair of pieces
      three times back to back inside one word ("Werb|end|end|end|en"). Sound sentences of
      the book's corpora do not repeat a word thrice in a row.
    """
    if source_ids:
        unknown = sum(1 for i in source_ids if i == unk_id)
        if 2 * unknown >= len(source_ids):
            return f"most of the input is unknown to the model ({unknown} of " \
                   f"{len(source_ids)} pieces)"
    words = [w.strip(PUNCTUATION) for w in translation.split()]
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
    return None
