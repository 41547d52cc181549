"""transformer.tokenizer: shared BPE vocabulary, determinism, round trip, special ids."""
import random

import pytest
import torch

from transformer.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID, ModelConfig
from transformer.data import load_corpus
from transformer.tokenizer import Tokenizer

from corpus_host import OFFLINE as REAL_DATA, needs_corpora  # noqa: E402  (the offline copy)
# skipped only where the corpora's hosts cannot be reached; under CI (CI=true) it fails
needs_multi30k = needs_corpora()

WORDS = ("the a dog cat man woman runs sits on in under green red house tree "
         "der die das Hund Katze Mann Frau läuft sitzt auf im unter grünen roten Haus Baum").split()


def synthetic_sentences(n=600, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "."
            for _ in range(n)]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "spm.model"
    return Tokenizer.train(synthetic_sentences(), path, vocab_size=120)


@pytest.fixture(scope="module")
def multi30k():
    return load_corpus("multi30k-en-de", "train", root=REAL_DATA)


@pytest.fixture(scope="module")
def real(tmp_path_factory, multi30k):
    path = tmp_path_factory.mktemp("real") / "spm.model"
    return Tokenizer.train(multi30k.src[:5000] + multi30k.tgt[:5000], path, vocab_size=2000)


def test_special_ids_match_model_config(toy):
    config = ModelConfig()
    assert (toy.pad_id, toy.bos_id, toy.eos_id, toy.unk_id) == (PAD_ID, BOS_ID, EOS_ID, UNK_ID)
    assert (toy.pad_id, toy.bos_id, toy.eos_id, toy.unk_id) == (
        config.pad_id, config.bos_id, config.eos_id, config.unk_id)
    assert [toy.id_to_piece(i) for i in range(4)] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert toy.vocab_size == len(toy) == 120


def test_encode_adds_no_specials_and_decode_skips_them(toy):
    ids = toy.encode("the dog runs.")
    assert ids and not set(ids) & {PAD_ID, BOS_ID, EOS_ID}
    padded = [BOS_ID] + ids + [EOS_ID, PAD_ID, PAD_ID]
    assert toy.decode(padded) == "the dog runs."
    assert toy.decode(torch.tensor(padded)) == "the dog runs."
    assert toy.encode_batch(["the dog runs.", "die Katze."]) == [ids, toy.encode("die Katze.")]
    cat = [BOS_ID] + toy.encode("die Katze.") + [EOS_ID]
    rows = torch.full((2, max(len(cat), len(padded))), PAD_ID)
    rows[0, :len(cat)], rows[1, :len(padded)] = torch.tensor(cat), torch.tensor(padded)
    assert toy.decode_batch(rows) == ["die Katze.", "the dog runs."]


def test_unknown_characters_map_to_unk(toy):
    assert UNK_ID in toy.encode("the 猫 runs")


def test_pieces_concatenate_to_the_text(toy):
    pieces = toy.pieces("the green house")
    assert pieces[0].startswith("▁")
    assert "".join(pieces).replace("▁", " ").strip() == "the green house"
    assert len(pieces) == len(toy.encode("the green house"))


def test_training_is_deterministic(tmp_path):
    texts = synthetic_sentences(seed=1)
    a = Tokenizer.train(texts, tmp_path / "a" / "spm.model", vocab_size=100, seed=3)
    b = Tokenizer.train(iter(texts), tmp_path / "b" / "spm.model", vocab_size=100, seed=3)
    model_a, model_b = tmp_path / "a" / "spm.model", tmp_path / "b" / "spm.model"
    assert model_a.read_bytes() == model_b.read_bytes()
    assert a.path == model_a and a.encode(texts[0]) == b.encode(texts[0])
    c = Tokenizer.train(texts, tmp_path / "c.model", vocab_size=90, seed=3)
    assert (tmp_path / "c.model").read_bytes() != (tmp_path / "a" / "spm.model").read_bytes()
    assert c.vocab_size == 90


def test_load_round_trips_and_reports_bad_files(toy, tmp_path):
    again = Tokenizer.load(toy.path)
    assert again.encode("der Mann sitzt.") == toy.encode("der Mann sitzt.")
    with pytest.raises(FileNotFoundError, match="not found") as err:
        Tokenizer.load(tmp_path / "missing.model")
    assert str(tmp_path / "missing.model") in str(err.value)
    corrupt = tmp_path / "corrupt.model"
    corrupt.write_bytes(b"this is not a protobuf")
    with pytest.raises(ValueError, match="not a valid SentencePiece model") as err:
        Tokenizer.load(corrupt)
    assert str(corrupt) in str(err.value)


def test_serialized_model_round_trips(toy):
    blob = toy.serialized()
    assert blob == toy.path.read_bytes()
    copy = Tokenizer.from_serialized(blob)
    assert copy.path is None and copy.encode("die Frau sitzt.") == toy.encode("die Frau sitzt.")
    with pytest.raises(ValueError, match="not a valid SentencePiece model"):
        Tokenizer.from_serialized(b"junk")


def test_wrong_special_ids_are_rejected(tmp_path):
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(sentence_iterator=iter(synthetic_sentences()),
                                   model_prefix=str(tmp_path / "default"), vocab_size=100,
                                   model_type="bpe", minloglevel=2)   # unk=0, bos=1, eos=2
    with pytest.raises(ValueError, match="special ids"):
        Tokenizer.load(tmp_path / "default.model")


@needs_multi30k
def test_real_round_trip_and_shared_vocabulary(real):
    valid = load_corpus("multi30k-en-de", "valid", root=REAL_DATA)
    sentences = valid.src[:300] + valid.tgt[:300]
    assert [real.decode(real.encode(s)) for s in sentences] == sentences
    # one vocabulary for both languages: German and English words are both single pieces
    assert len(real.pieces("dog")) == 1 and len(real.pieces("Hund")) == 1
    lengths = [len(ids) for ids in real.encode_batch(sentences)]
    words = [len(s.split()) for s in sentences]
    assert sum(words) < sum(lengths) < 2 * sum(words)   # subwords: a few splits per sentence


@needs_multi30k
def test_full_multi30k_vocabulary_trains_in_one_pass_and_deterministically(tmp_path, multi30k,
                                                                           monkeypatch):
    """What keeps the full vocabulary's training at seconds, checked structurally (its time
    is benchmarks/cpu/vocab_speed.py's): SentencePiece reads every sentence once, as it
    comes (no sampling: it draws no random numbers, and no sampled copy is made), on one
    thread, and two trainings give byte-identical models."""
    from transformer import tokenizer as module
    texts = multi30k.src + multi30k.tgt
    calls = []
    train = module.spm.SentencePieceTrainer.train

    def spy(sentence_iterator, **settings):
        read = []
        calls.append((read, settings))
        return train(sentence_iterator=(read.append(1) or s for s in sentence_iterator),
                     **settings)

    monkeypatch.setattr(module.spm.SentencePieceTrainer, "train", spy)
    Tokenizer.train(texts, tmp_path / "a.model", vocab_size=8000, seed=0)
    Tokenizer.train(texts, tmp_path / "b.model", vocab_size=8000, seed=0)
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()
    sentences = sum(1 for t in texts if t and t.strip())
    for read, settings in calls:
        assert len(read) == sentences                      # each sentence read once
        assert settings["input_sentence_size"] == 0 and not settings["shuffle_input_sentence"]
        assert settings["num_threads"] == 1
    assert len(calls) == 2


def test_one_fingerprint_decides_whether_two_vocabularies_are_the_same(toy, tmp_path):
    import hashlib
    from pathlib import Path
    from transformer.tokenizer import same_vocabulary, vocabulary_fingerprint
    other = Tokenizer.train(synthetic_sentences(seed=1), tmp_path / "o.model", vocab_size=120)
    digest = hashlib.sha256(toy.serialized()).hexdigest()    # worked out here
    assert toy.fingerprint == vocabulary_fingerprint(toy.serialized()) == f"sha256:{digest}"
    assert same_vocabulary(toy, (toy.path).read_bytes()) and same_vocabulary(toy.fingerprint, toy)
    assert other.vocab_size == toy.vocab_size and not same_vocabulary(toy, other)
    for bad in (digest, "md5:" + digest[:32], "sha256:xyz", "sha256:" + digest.upper(), ""):
        with pytest.raises(ValueError, match="not a vocabulary fingerprint"):
            same_vocabulary(bad, toy)
    # and nothing else in the package decides it: no comparison of a model's bytes, no
    # hash of them outside the tokenizer module
    package = Path(__file__).resolve().parents[1] / "transformer"
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "tokenizer.py":
            for needle in (".serialized() ==", ".serialized() !=", "sha256(tokenizer",
                           "sha256(spm", '"sha256:"'):
                assert needle not in text, f"{path.relative_to(package)}: {needle}"
