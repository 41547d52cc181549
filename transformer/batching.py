"""Batches by token count, bucketed by length (section 5.1).

"Sentence pairs were batched together by approximate sequence length. Each training
batch contained a set of sentence pairs containing approximately 25000 source tokens
and 25000 target tokens."

:func:`token_batches` sorts the pairs by length and packs neighbours until a batch would
hold more than ``max_tokens`` slots (padding included) on either side, so sentences of
similar length share a batch and little compute is spent on padding. :class:`BatchIterator`
turns those index lists into padded tensors, epoch after epoch, and can resume
mid-epoch with exactly the batches an uninterrupted run would have seen.

This module is the one batcher of the package: the ids may be lists in memory or a
prepared corpus's memory-mapped arrays (:class:`~transformer.training.corpus_files.RaggedIds`),
and decoding packs and pads its sources with the same :func:`pack` and :func:`pad`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Iterator, Sequence

import numpy as np
import torch

from .config import BOS_ID, EOS_ID, PAD_ID
from .errors import InputError

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One padded batch of sentence pairs (rows are right-padded with PAD).

    ``src``: source ids + EOS, (B, S). ``tgt_in``: BOS + target ids, the decoder input,
    (B, T). ``tgt_out``: target ids + EOS, what the decoder must predict, (B, T).
    """
    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_src_tokens: int        # non-pad slots of src
    n_tgt_tokens: int        # non-pad slots of tgt_out: the tokens the loss is averaged over
    pad_id: int = PAD_ID

    def __len__(self) -> int:
        return self.src.size(0)

    def to(self, device, non_blocking: bool = False) -> "Batch":
        """A copy with the tensors on ``device``."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("src", "tgt_in", "tgt_out"):
            moved[name] = moved[name].to(device, non_blocking=non_blocking)
        return Batch(**moved)

    @property
    def padding_fraction(self) -> float:
        """Pad slots / all slots, over ``src`` and ``tgt_out`` together."""
        slots = self.src.numel() + self.tgt_out.numel()
        return 1.0 - (self.n_src_tokens + self.n_tgt_tokens) / slots if slots else 0.0


def pad(rows: Sequence[Sequence[int]], pad_id: int, first: int | None = None,
        last: int | None = None) -> torch.Tensor:
    """Rows of ids (lists or numpy arrays) as one (B, longest) long tensor, right-padded
    with ``pad_id``; ``first`` is put before each row and ``last`` after it."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    start = int(first is not None)
    out = np.full((len(rows), lengths.max(initial=0) + start + (last is not None)), pad_id,
                  dtype=np.int64)
    for i, row in enumerate(rows):
        if first is not None:
            out[i, 0] = first
        out[i, start:start + len(row)] = row
        if last is not None:
            out[i, start + len(row)] = last
    return torch.from_numpy(out)


def collate(src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
            pad_id: int = PAD_ID, bos_id: int = BOS_ID, eos_id: int = EOS_ID) -> Batch:
    """Pad tokenised pairs (no specials yet) into a :class:`Batch`.

    The source gets EOS appended (as in fairseq and tensor2tensor: the encoder sees where
    the sentence ends); the target is shifted: ``tgt_in = BOS + y``, ``tgt_out = y + EOS``.
    """
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"collate got {len(src_ids)} sources but {len(tgt_ids)} targets")
    if not len(src_ids):
        raise ValueError("collate got an empty batch")
    src = pad(src_ids, pad_id, last=eos_id)
    tgt_in = pad(tgt_ids, pad_id, first=bos_id)
    tgt_out = pad(tgt_ids, pad_id, last=eos_id)
    n_src = sum(map(len, src_ids)) + len(src_ids)             # with EOS
    n_tgt = sum(map(len, tgt_ids)) + len(tgt_ids)
    return Batch(src, tgt_in, tgt_out, int(n_src), int(n_tgt), pad_id=pad_id)


def pack(widths: Sequence[int], max_tokens: int | None,
         max_sentences: int | None = None) -> np.ndarray:
    """Batch boundaries for rows taken in order: a batch grows while ``its rows x its
    widest row <= max_tokens`` (and it holds at most ``max_sentences`` rows); a row wider
    than ``max_tokens`` gets a batch of its own. Returns ``bounds``: batch ``k`` is rows
    ``bounds[k]`` to ``bounds[k + 1] - 1``."""
    limit = max_tokens if max_tokens is not None else float("inf")
    most = max_sentences if max_sentences is not None else float("inf")
    widths = np.asarray(widths, dtype=np.int64)
    starts, count, widest = [0], 0, 0
    for first in range(0, len(widths), 1 << 20):         # bounded temporary lists
        for position, width in enumerate(widths[first:first + (1 << 20)].tolist(), first):
            if count and (count >= most or (count + 1) * max(widest, width) > limit):
                starts.append(position)
                count, widest = 0, 0
            count, widest = count + 1, max(widest, width)
    if count:
        starts.append(len(widths))
    return np.asarray(starts, dtype=np.int64)


class BatchPlan(Sequence):
    """The batches of :func:`token_batches` held as three numpy arrays rather than lists of
    Python ints: ``order`` (example indices in packing order), ``bounds`` (batch ``k`` of
    the packing is ``order[bounds[k]:bounds[k + 1]]``) and ``sequence`` (the packing's
    batch numbers in the order they are handed out). ``plan[j]`` is the list of example
    indices of the ``j``-th batch; a 4.5M-pair epoch takes some 40 MB instead of several
    hundred as lists."""

    def __init__(self, order: np.ndarray, bounds: np.ndarray, sequence: np.ndarray):
        self.order, self.bounds, self.sequence = order, bounds, sequence

    @classmethod
    def of(cls, batches: Sequence[Sequence[int]]) -> "BatchPlan":
        """The plan of batches given as lists of indices (in their order)."""
        if isinstance(batches, BatchPlan):
            return batches
        sizes = np.fromiter(map(len, batches), dtype=np.int64, count=len(batches))
        order = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]) \
            if len(batches) else np.zeros(0, dtype=np.int64)
        return cls(order, np.concatenate([[0], np.cumsum(sizes)]), np.arange(len(batches)))

    def __len__(self) -> int:
        return len(self.sequence)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        k = self.sequence[j]
        return self.order[self.bounds[k]:self.bounds[k + 1]].tolist()

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and \
            all(a == list(b) for a, b in zip(self, other))

    def sizes(self) -> np.ndarray:
        """The number of examples in each batch, in hand-out order."""
        return np.diff(self.bounds)[self.sequence]


def token_batches(src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int,
                  shuffle: bool = True, seed: int = 0, epoch: int = 0,
                  max_len: int | None = None, bucket: bool = True) -> BatchPlan:
    """Group example indices into batches of at most ``max_tokens`` slots per side.

    Lengths are those of the padded tensors (for :func:`collate`: tokens + 1). Examples are
    sorted by (target length, source length), ties broken at random, and consecutive
    examples are packed (:func:`pack`) while ``batch_size * max(longest src, longest tgt)
    <= max_tokens``. The batch order is then shuffled. The result depends only on
    (lengths, max_tokens, seed, epoch); ``plan[j]`` is the ``j``-th batch's indices.

    ``max_len``: pairs with a side longer than this are skipped (and the count logged).
    ``shuffle=False``: ties keep their index order and batches stay sorted by length.
    ``bucket=False``: pack in random order instead of by length (the baseline that
    bucketing is measured against).
    """
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"token_batches got {len(src_lengths)} source lengths but "
                         f"{len(tgt_lengths)} target lengths")
    if max_tokens < 1:
        raise InputError(f"max_tokens must be positive, got {max_tokens}")
    src_len = np.asarray(src_lengths, dtype=np.int64)
    tgt_len = np.asarray(tgt_lengths, dtype=np.int64)
    rng = np.random.default_rng([seed, epoch])
    keep = np.arange(len(src_len))
    if max_len is not None:
        keep = np.flatnonzero((src_len <= max_len) & (tgt_len <= max_len))
        if len(keep) < len(src_len):
            log.warning("token_batches: skipped %d of %d pairs longer than max_len=%d",
                        len(src_len) - len(keep), len(src_len), max_len)
    if not bucket:
        order = rng.permutation(keep)
    else:
        ties = rng.random(len(keep)) if shuffle else np.arange(len(keep))
        order = keep[np.lexsort((ties, src_len[keep], tgt_len[keep]))]
        del ties
    bounds = pack(np.maximum(src_len[order], tgt_len[order]), max_tokens)
    n_batches = len(bounds) - 1
    sequence = rng.permutation(n_batches) if shuffle else np.arange(n_batches)
    return BatchPlan(order, bounds, sequence)


def padding_fraction(batches: Sequence[Sequence[int]], src_lengths: Sequence[int],
                     tgt_lengths: Sequence[int]) -> float:
    """Pad slots / all slots of ``batches`` once padded, over source and target together."""
    plan = BatchPlan.of(batches)
    if len(plan) == 0:
        return 0.0
    sizes, starts = np.diff(plan.bounds), plan.bounds[:-1]
    slots = pads = 0
    for lengths in (src_lengths, tgt_lengths):
        ordered = np.asarray(lengths, dtype=np.int64)[plan.order]
        longest = np.maximum.reduceat(ordered, starts)
        slots += int((sizes * longest).sum())
        pads += int((sizes * longest).sum() - ordered.sum())
    return pads / slots if slots else 0.0


def _lengths(ids) -> np.ndarray:
    """Tokens of each sentence of ``ids`` (lists, or memory-mapped ids with ``lengths()``)."""
    if hasattr(ids, "lengths"):
        return np.asarray(ids.lengths(), dtype=np.int64)
    return np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))


class BatchIterator:
    """Epochs of :class:`Batch` es over tokenised pairs, resumable mid-epoch.

    ``src_ids`` and ``tgt_ids``: one sequence of ids per sentence (lists of ints, or
    memory-mapped ids whose ``lengths()`` gives every sentence's length at once).

    ``for batch in it`` runs the rest of the current epoch, then moves to the next one;
    ``state_dict()`` taken at any point (say, with a checkpoint after a step) and given to
    ``load_state_dict`` on a new iterator over the same data continues with exactly the
    batches the uninterrupted run would have produced next. Epoch ``e`` is a pure
    function of (data, max_tokens, seed, e).
    """

    def __init__(self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
                 max_tokens: int, seed: int = 0, shuffle: bool = True,
                 max_len: int | None = None, pad_id: int = PAD_ID, bos_id: int = BOS_ID,
                 eos_id: int = EOS_ID):
        if len(src_ids) != len(tgt_ids):
            raise ValueError(f"BatchIterator got {len(src_ids)} sources but "
                             f"{len(tgt_ids)} targets")
        self.src_ids, self.tgt_ids = src_ids, tgt_ids
        self.max_tokens, self.seed, self.shuffle, self.max_len = max_tokens, seed, shuffle, max_len
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        # tensor lengths: source + EOS, BOS + target (= target + EOS)
        self.src_lengths = _lengths(src_ids) + 1
        self.tgt_lengths = _lengths(tgt_ids) + 1
        self.n_skipped = 0 if max_len is None else int(np.count_nonzero(
            (self.src_lengths > max_len) | (self.tgt_lengths > max_len)))
        self.epoch = 0
        self.position = 0          # index of the next batch in the current epoch
        self._cache: tuple[int, BatchPlan] | None = None

    def batches(self, epoch: int | None = None) -> BatchPlan:
        """The example indices of every batch of ``epoch`` (default: the current one)."""
        epoch = self.epoch if epoch is None else epoch
        if self._cache is None or self._cache[0] != epoch:
            self._cache = None                              # free the old plan first
            self._cache = (epoch, token_batches(
                self.src_lengths, self.tgt_lengths, self.max_tokens, shuffle=self.shuffle,
                seed=self.seed, epoch=epoch, max_len=self.max_len))
        return self._cache[1]

    def __len__(self) -> int:
        """Number of batches in the current epoch."""
        return len(self.batches())

    def collate(self, indices: list[int]) -> Batch:
        """The :class:`Batch` of the sentence pairs ``indices``."""
        return collate([self.src_ids[i] for i in indices], [self.tgt_ids[i] for i in indices],
                       self.pad_id, self.bos_id, self.eos_id)

    def _roll_over(self) -> None:
        if self.position >= len(self.batches()):   # every batch of the epoch handed out
            self.epoch, self.position = self.epoch + 1, 0

    def __iter__(self) -> Iterator[Batch]:
        self._roll_over()
        epoch, batches = self.epoch, self.batches()
        while self.epoch == epoch and self.position < len(batches):
            indices = batches[self.position]
            self.position += 1                      # counted as consumed once handed out
            yield self.collate(indices)
        self._roll_over()

    def state_dict(self) -> dict:
        """Where the next batch comes from; after an epoch's last batch: (epoch + 1, 0)."""
        self._roll_over()
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed,
                "max_tokens": self.max_tokens}

    def load_state_dict(self, state: dict) -> None:
        for key in ("seed", "max_tokens"):
            if key in state and state[key] != getattr(self, key):
                raise InputError(f"BatchIterator state has {key}={state[key]} but this "
                                 f"iterator has {key}={getattr(self, key)}: resuming would "
                                 f"give different batches")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])

    def padding_fraction(self, epoch: int | None = None) -> float:
        """Pad slots / all slots over one epoch's batches (source and target together)."""
        return padding_fraction(self.batches(epoch), self.src_lengths, self.tgt_lengths)
