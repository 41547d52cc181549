"""Batches by token count, bucketed by length (section 5.1).

"Sentence pairs were batched together by approximate sequence length. Each training
batch contained a set of sentence pairs containing approximately 25000 source tokens
and 25000 target tokens."

:func:`token_batches` sorts the pairs by length and packs neighbours until a batch would
hold more than ``max_tokens`` slots (padding included) on either side, so sentences of
similar length share a batch and little compute is spent on padding. :class:`BatchIterator`
turns those index lists into padded tensors, epoch after epoch, and can resume
mid-epoch with exactly the batches an uninterrupted run would have seen.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Iterator, Sequence

import numpy as np
import torch

from .config import BOS_ID, EOS_ID, PAD_ID

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


def _pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows), default=0)), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.as_tensor(row, dtype=torch.long)
    return out


def collate(src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
            pad_id: int = PAD_ID, bos_id: int = BOS_ID, eos_id: int = EOS_ID) -> Batch:
    """Pad tokenised pairs (no specials yet) into a :class:`Batch`.

    The source gets EOS appended (as in fairseq and tensor2tensor: the encoder sees where
    the sentence ends); the target is shifted: ``tgt_in = BOS + y``, ``tgt_out = y + EOS``.
    """
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"collate got {len(src_ids)} sources but {len(tgt_ids)} targets")
    if not src_ids:
        raise ValueError("collate got an empty batch")
    src = [list(s) + [eos_id] for s in src_ids]
    tgt_in = [[bos_id] + list(t) for t in tgt_ids]
    tgt_out = [list(t) + [eos_id] for t in tgt_ids]
    return Batch(_pad(src, pad_id), _pad(tgt_in, pad_id), _pad(tgt_out, pad_id),
                 n_src_tokens=sum(map(len, src)), n_tgt_tokens=sum(map(len, tgt_out)),
                 pad_id=pad_id)


class BatchPlan(Sequence):
    """The batches of :func:`token_batches` held as three numpy arrays rather than lists of
    Python ints: ``order`` (example indices in packing order), ``bounds`` (batch ``k`` of
    the packing is ``order[bounds[k]:bounds[k + 1]]``) and ``sequence`` (the packing's
    batch numbers in the order they are handed out). ``plan[j]`` is the list of example
    indices of the ``j``-th batch; a 4.5M-pair epoch takes some 40 MB instead of several
    hundred as lists."""

    def __init__(self, order: np.ndarray, bounds: np.ndarray, sequence: np.ndarray):
        self.order, self.bounds, self.sequence = order, bounds, sequence

    def __len__(self) -> int:
        return len(self.sequence)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        k = self.sequence[j]
        return self.order[self.bounds[k]:self.bounds[k + 1]].tolist()

    def sizes(self) -> np.ndarray:
        """The number of examples in each batch, in hand-out order."""
        return np.diff(self.bounds)[self.sequence]


def _pack(longest_side: np.ndarray, max_tokens: int, chunk: int = 1 << 20) -> np.ndarray:
    """Batch boundaries for examples taken in order: a batch grows while
    ``batch_size * max(longest side so far) <= max_tokens``; one longer than ``max_tokens``
    gets a batch of its own. Returns ``bounds`` (batch ``k`` is ``[bounds[k], bounds[k+1])``)."""
    starts, count, longest, position = [0], 0, 0, 0
    for first in range(0, len(longest_side), chunk):       # bounded temporary lists
        for x in longest_side[first:first + chunk].tolist():
            new_longest = longest if longest > x else x
            if count and (count + 1) * new_longest > max_tokens:
                starts.append(position)
                count, new_longest = 0, x
            count += 1
            longest = new_longest
            position += 1
    if position:
        starts.append(position)
    return np.asarray(starts, dtype=np.int64)


def token_batch_plan(src_lengths, tgt_lengths, max_tokens: int, shuffle: bool = True,
                     seed: int = 0, epoch: int = 0, max_len: int | None = None,
                     bucket: bool = True) -> BatchPlan:
    """:func:`token_batches` as a :class:`BatchPlan` (the same batches, in the same order),
    for corpora of millions of pairs; the lengths may be numpy arrays."""
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"token_batches got {len(src_lengths)} source lengths but "
                         f"{len(tgt_lengths)} target lengths")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
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
        noise = rng.random(len(keep)) if shuffle else np.arange(len(keep))
        order = keep[np.lexsort((noise, src_len[keep], tgt_len[keep]))]
        del noise
    bounds = _pack(np.maximum(src_len[order], tgt_len[order]), max_tokens)
    n_batches = len(bounds) - 1
    sequence = rng.permutation(n_batches) if shuffle else np.arange(n_batches)
    return BatchPlan(order, bounds, sequence)


def token_batches(src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int,
                  shuffle: bool = True, seed: int = 0, epoch: int = 0,
                  max_len: int | None = None, bucket: bool = True) -> list[list[int]]:
    """Group example indices into batches of at most ``max_tokens`` slots per side.

    Lengths are those of the padded tensors (for :func:`collate`: tokens + 1). Examples are
    sorted by (target length, source length), ties broken at random, and consecutive
    examples are packed while ``batch_size * max(longest src, longest tgt) <= max_tokens``;
    an example longer than ``max_tokens`` gets a batch of its own. The batch order is then
    shuffled. The result depends only on (lengths, max_tokens, seed, epoch).

    ``max_len``: pairs with a side longer than this are skipped (and the count logged).
    ``shuffle=False``: ties keep their index order and batches stay sorted by length.
    ``bucket=False``: pack in random order instead of by length (the baseline that
    bucketing is measured against). :func:`token_batch_plan` gives the same batches as
    arrays.
    """
    return list(token_batch_plan(src_lengths, tgt_lengths, max_tokens, shuffle=shuffle,
                                 seed=seed, epoch=epoch, max_len=max_len, bucket=bucket))


def padding_fraction(batches: list[list[int]], src_lengths: Sequence[int],
                     tgt_lengths: Sequence[int]) -> float:
    """Pad slots / all slots of ``batches`` once padded, over source and target together."""
    pads = slots = 0
    for batch in batches:
        for lengths in (src_lengths, tgt_lengths):
            lens = [lengths[i] for i in batch]
            slots += len(lens) * max(lens)
            pads += len(lens) * max(lens) - sum(lens)
    return pads / slots if slots else 0.0


class BatchIterator:
    """Epochs of :class:`Batch` es over tokenised pairs, resumable mid-epoch.

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
        self.src_lengths = [len(s) + 1 for s in src_ids]
        self.tgt_lengths = [len(t) + 1 for t in tgt_ids]
        self.n_skipped = 0 if max_len is None else sum(
            s > max_len or t > max_len for s, t in zip(self.src_lengths, self.tgt_lengths))
        self.epoch = 0
        self.position = 0          # index of the next batch in the current epoch
        self._cache: tuple[int, list[list[int]]] | None = None

    def batches(self, epoch: int | None = None) -> list[list[int]]:
        """The example indices of every batch of ``epoch`` (default: the current one)."""
        epoch = self.epoch if epoch is None else epoch
        if self._cache is None or self._cache[0] != epoch:
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
                raise ValueError(f"BatchIterator state has {key}={state[key]} but this "
                                 f"iterator has {key}={getattr(self, key)}: resuming would "
                                 f"give different batches")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])

    def padding_fraction(self, epoch: int | None = None) -> float:
        """Pad slots / all slots over one epoch's batches (source and target together)."""
        return padding_fraction(self.batches(epoch), self.src_lengths, self.tgt_lengths)
