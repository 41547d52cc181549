"""Strings in, strings out: the paper's search (:mod:`transformer.decoding`) behind a tokenizer.

* :func:`translate` translates a list of sentences and returns their translations in the
  input order;
* :func:`translations` hands them over one by one as they are done, each a
  :class:`Translation` that keeps the source's token ids and the output's, so that a reader
  (the command line's ``translate``, :func:`transformer.doubt.doubt`) needs no second
  tokenization.

Both take the search as one value, a :class:`~transformer.decoding.Search` (default: the
paper's, :data:`~transformer.decoding.PAPER_SEARCH`); keyword settings change it for one
call, as Hugging Face's ``generate(generation_config, **kwargs)`` does:
``translate(model, tokenizer, sentences, beam_size=1)`` is
``translate(model, tokenizer, sentences, PAPER_SEARCH.replace(beam_size=1))``.

Sentences are sorted by tokenized length so that each batch holds similar lengths; a batch
holds at most ``batch_size`` sentences and, if ``max_tokens`` is given, at most
``max_tokens`` padded source tokens (:func:`transformer.batching.pack`).
"""
from __future__ import annotations

import warnings
from typing import Iterator, NamedTuple

from .batching import pack
from .decoding import PAPER_SEARCH, Search, build_source_batch, decode
from .errors import InputError

__all__ = ["translate", "translations", "Translation"]


class Translation(NamedTuple):
    """One sentence's translation: its ``text``, the ``source`` token ids the search read
    (without EOS; empty for a blank sentence) and the output's token ``ids`` (without BOS
    and EOS)."""
    text: str
    source: list[int]
    ids: list[int]


def _check_translate_args(sentences, search, settings, batch_size, max_tokens):
    """The sentences as a list, and the search with ``settings`` applied; raises naming the
    argument that is wrong."""
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, got a single str "
                        "(wrap it in a list)")
    sentences = list(sentences)
    for i, s in enumerate(sentences):
        if not isinstance(s, str):
            raise TypeError(f"sentences[{i}] must be a str, got {type(s).__name__}")
    if not isinstance(search, Search):
        raise TypeError(f"search must be a transformer.decoding.Search, got "
                        f"{type(search).__name__} (a setting goes by its name: beam_size=...)")
    search = search.replace(**settings)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise InputError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
    return sentences, search


def translate(model, tokenizer, sentences: list[str], search: Search = PAPER_SEARCH, *,
              batch_size: int = 64, max_tokens: int | None = None, device=None,
              **settings) -> list[str]:
    """Translate strings with ``search`` (beam search; greedy when its ``beam_size`` is 1),
    its ``settings`` (``beam_size``, ``alpha``, ``max_extra``, ``stopping``) changed by the
    keywords given.

    The translations come back in the input order. ``device`` is where the inputs go
    (default: the model's). Sources longer than ``cfg.max_len`` are truncated with a
    warning. A blank sentence (empty or only white space) gives an empty translation:
    there is nothing to translate.
    """
    sentences, search = _check_translate_args(sentences, search, settings, batch_size,
                                              max_tokens)
    return [t.text for t in _translate(model, tokenizer, sentences, search, batch_size,
                                       max_tokens, device)]


def translations(model, tokenizer, sentences: list[str], search: Search = PAPER_SEARCH, *,
                 batch_size: int = 64, max_tokens: int | None = None, device=None,
                 **settings) -> Iterator[Translation]:
    """:func:`translate`'s translations one by one, in input order, as they are done (each
    a :class:`Translation`): the sentences go through it ``batch_size`` consecutive ones at
    a time, so a reader (the command line's ``translate``) can write each window's lines
    before the next is decoded and keep them when it is interrupted."""
    sentences, search = _check_translate_args(sentences, search, settings, batch_size,
                                              max_tokens)
    for start in range(0, len(sentences), batch_size):
        yield from _translate(model, tokenizer, sentences[start:start + batch_size], search,
                              batch_size, max_tokens, device)


def _device(model):
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return None


def _translate(model, tokenizer, sentences, search: Search, batch_size: int,
               max_tokens: int | None, device) -> list[Translation]:
    blank = [not s.strip() for s in sentences]
    if all(blank):
        return [Translation("", [], []) for _ in sentences]
    if any(blank):
        done = iter(_translate(model, tokenizer, [s for s, b in zip(sentences, blank) if not b],
                               search, batch_size, max_tokens, device))
        return [Translation("", [], []) if b else next(done) for b in blank]
    cfg = model.cfg
    device = device if device is not None else _device(model)
    ids = [list(x) for x in tokenizer.encode_batch(sentences)]
    if len(ids) != len(sentences):
        raise ValueError(f"tokenizer.encode_batch returned {len(ids)} sequences for "
                         f"{len(sentences)} sentences")
    too_long = [i for i, x in enumerate(ids) if len(x) + 1 > cfg.max_len]
    if too_long:
        warnings.warn(f"{len(too_long)} source sentence(s) (first: index {too_long[0]}) are "
                      f"longer than cfg.max_len={cfg.max_len} tokens and were truncated",
                      stacklevel=3)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
    widths = [min(len(ids[i]) + 1, cfg.max_len) for i in order]          # with EOS
    bounds = pack(widths, max_tokens, max_sentences=batch_size).tolist()
    outputs: list[list[int] | None] = [None] * len(ids)
    for start, end in zip(bounds[:-1], bounds[1:]):
        batch = [ids[i] for i in order[start:end]]
        src = build_source_batch(batch, cfg.pad_id, cfg.eos_id, cfg.max_len, device)
        for i, h in zip(order[start:end], decode(model, src, search)):
            outputs[i] = h
    texts = list(tokenizer.decode_batch(outputs))
    return [Translation(text, source[:cfg.max_len - 1], out)
            for text, source, out in zip(texts, ids, outputs)]
