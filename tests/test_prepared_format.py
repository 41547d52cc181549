"""Every branch of the prepared corpus's on-disk format round-trips exactly.

``python -m transformer prepare`` stores token ids as uint16 when the vocabulary has at most
65,536 pieces and as int32 above (transformer/training/corpus_files.py); the ids are encoded in
this process or in worker processes; a split may hold no pairs; a side is read as source or
target by the direction. A vocabulary of more than 65,536 pieces is a real SentencePiece
model here, built directly (a word-level model whose pieces are ``w4``, ``w5``, ...), so
that the workers load it as they load a trained one; the sentences use the ids at the
edges of each dtype.
"""
from __future__ import annotations

import numpy as np
import pytest
from sentencepiece import sentencepiece_model_pb2 as spm_pb

from transformer.batching import BatchIterator
from transformer.tokenizer import Tokenizer
from transformer.training.config import TrainConfig
from transformer.training.corpus_files import PreparedCorpus
from transformer.training.prepare import prepare_corpus

UINT16_PIECES = 1 << 16               # the most pieces uint16 ids can number (0 .. 65,535)


def word_vocabulary(pieces: int) -> Tokenizer:
    """A SentencePiece word model of ``pieces`` pieces: the project's four specials, then
    ``w4`` ... ``w{pieces - 1}``, each word its own id."""
    model = spm_pb.ModelProto()
    spec = model.trainer_spec
    spec.model_type, spec.vocab_size = spm_pb.TrainerSpec.WORD, pieces
    spec.pad_id, spec.bos_id, spec.eos_id, spec.unk_id = 0, 1, 2, 3
    model.normalizer_spec.name, model.normalizer_spec.add_dummy_prefix = "identity", True
    kinds = spm_pb.ModelProto.SentencePiece.Type
    for text, kind in (("<pad>", kinds.CONTROL), ("<s>", kinds.CONTROL),
                       ("</s>", kinds.CONTROL), ("<unk>", kinds.UNKNOWN)):
        piece = model.pieces.add()
        piece.piece, piece.type = text, kind
    for i in range(4, pieces):
        piece = model.pieces.add()
        piece.piece, piece.type = f"\u2581w{i}", kinds.NORMAL
    return Tokenizer.from_serialized(model.SerializeToString())


def edge_sentences(pieces: int, n: int, seed: int) -> list[str]:
    """``n`` sentences of 1 to 12 words whose ids include the largest of the vocabulary, the
    smallest non-special one and those around 255/256 and 65,535/65,536 that it has."""
    rng = np.random.default_rng(seed)
    edges = [i for i in (4, 5, 255, 256, 257, 32767, 32768, 65534, 65535, 65536, 65537,
                         pieces - 2, pieces - 1) if 4 <= i < pieces]
    rows = []
    for k in range(n):
        ids = rng.integers(4, pieces, size=rng.integers(1, 13)).tolist()
        ids[rng.integers(len(ids))] = edges[k % len(edges)]
        rows.append(" ".join(f"w{i}" for i in ids))
    return rows


def write_split(folder, split, en, de):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}.src").write_text("".join(s + "\n" for s in en), encoding="utf-8")
    (folder / f"{split}.tgt").write_text("".join(s + "\n" for s in de), encoding="utf-8")


def prepared(tmp_path, pieces: int, workers: int, valid_pairs: int = 30):
    """A corpus of edge sentences prepared with the vocabulary of ``pieces`` pieces; the
    tokenizer, the texts by split and side, and the folder opened."""
    tok = word_vocabulary(pieces)
    corpus = tmp_path / "corpus"
    text = {}
    for split, n, seed in (("train", 300, 1), ("valid", valid_pairs, 2)):
        en, de = edge_sentences(pieces, n, seed), edge_sentences(pieces, n, seed + 10)
        write_split(corpus, split, en, de)
        text[split] = {"en": en, "de": de}
    cfg = TrainConfig(corpus=str(corpus), out_dir=str(tmp_path / "run"), vocab_size=pieces)
    out = prepare_corpus(cfg, tmp_path / "prepared", workers=workers, tokenizer=tok,
                         log=lambda line: None)
    return tok, text, PreparedCorpus(out)


@pytest.mark.parametrize("pieces, dtype", [
    (100, "uint16"), (UINT16_PIECES, "uint16"),          # ids up to 65,535
    (UINT16_PIECES + 1, "int32"), (70_000, "int32"),      # ids from 65,536 on
])
@pytest.mark.parametrize("workers", [1, 2])                # in this process; in a pool
def test_token_ids_round_trip_in_each_dtype(tmp_path, pieces, dtype, workers):
    tok, text, store = prepared(tmp_path, pieces, workers)
    assert store.manifest["dtype"] == dtype and store.vocab_size == pieces
    assert store.tokenizer().serialized() == tok.serialized()
    for split, sides in text.items():
        for side, sentences in sides.items():
            ids = store.sentences(split, side)
            expected = tok.encode_batch(sentences)
            assert max(map(max, expected)) == pieces - 1        # the top id is there
            assert len(ids) == len(expected) == store.pairs(split)
            assert [ids[i].tolist() for i in range(len(ids))] == expected, (split, side)
            assert ids.ids.dtype == np.dtype(dtype)
            size = (store.folder / f"{split}.{side}.ids").stat().st_size
            assert size == sum(map(len, expected)) * np.dtype(dtype).itemsize


@pytest.mark.parametrize("pieces", [UINT16_PIECES, UINT16_PIECES + 1])
@pytest.mark.parametrize("direction", ["en-de", "de-en"])
def test_the_prepared_batches_are_the_in_memory_ones_in_each_dtype_and_direction(
        tmp_path, pieces, direction):
    """What training reads: the memory-mapped batches equal those the in-memory iterator
    builds from the same ids, tensor for tensor, the direction choosing the source side."""
    tok, text, store = prepared(tmp_path, pieces, workers=1)
    src, tgt = direction.split("-")
    mapped = store.batch_iterator("train", direction, max_tokens=120, seed=3, tokenizer=tok)
    memory = BatchIterator(tok.encode_batch(text["train"][src]),
                           tok.encode_batch(text["train"][tgt]), max_tokens=120, seed=3)
    assert list(mapped.batches(0)) == memory.batches(0)
    top = 0
    for a, b in zip(iter(mapped), iter(memory), strict=True):
        for name in ("src", "tgt_in", "tgt_out"):
            assert getattr(a, name).equal(getattr(b, name)), name
        assert (a.n_src_tokens, a.n_tgt_tokens) == (b.n_src_tokens, b.n_tgt_tokens)
        top = max(top, int(a.src.max()), int(a.tgt_out.max()))
    assert top == pieces - 1                      # the largest id came through whole


def test_a_split_without_pairs_round_trips_as_empty(tmp_path):
    """No valid pairs: offsets of one zero and an empty ids file, read back as no sentences."""
    tok, _, store = prepared(tmp_path, UINT16_PIECES + 1, workers=1, valid_pairs=0)
    assert store.pairs("valid") == 0
    for side in ("en", "de"):
        ids = store.sentences("valid", side)
        assert len(ids) == 0 and ids.ids.dtype == np.dtype("int32")
        assert (store.folder / f"valid.{side}.ids").stat().st_size == 0
        assert (store.folder / f"valid.{side}.offsets").stat().st_size == 8
    assert len(store.valid_text("en-de")) == 0
