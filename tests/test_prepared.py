"""Large corpora: WMT14 read offline in the hub's format, a corpus prepared once into
memory-mapped token ids (transformer.training.prepare writes them, .corpus_files reads
them), read by two processes, and trained on with the same batches as the in-memory path."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import toy_run, write_pairs
from transformer.data import CorpusStream, load_corpus, load_wmt14
from transformer.training.config import TrainingError
from transformer.training.loop import Trainer
from transformer.corpora import CORPORA
from transformer.training.corpus_files import PreparedCorpus, RaggedIds
from transformer.training.prepare import _sample_pairs, prepare_corpus
from transformer.tools import cli

REPO = Path(__file__).resolve().parents[1]


def hf_datasets():
    """The `datasets` package, or the test is skipped (it is the optional wmt extra)."""
    return pytest.importorskip("datasets", reason="the WMT14 loader tests need `pip install "
                                                  "datasets` (the wmt extra)")

WMT_ROWS = {
    "train": [("A house.", "Ein Haus."), ("The cat sleeps.", "Die Katze schläft."),
              ("  Spaces around.  ", " Leerzeichen. "), ("", "Leer."),
              ("Two dogs run.", "Zwei Hunde rennen.")],
    "validation": [("Good morning.", "Guten Morgen."), ("Thank you.", "Danke.")],
    "test": [("Where is the station?", "Wo ist der Bahnhof?")],
}


def save_wmt14(folder):
    """A DatasetDict on disk in the format load_dataset("wmt14", "de-en") returns: train,
    validation and test, each one `translation` column of {"de", "en"} dicts."""
    datasets = hf_datasets()
    features = datasets.Features({"translation": datasets.Translation(languages=["de", "en"])})
    splits = {split: datasets.Dataset.from_dict(
        {"translation": [{"de": de, "en": en} for en, de in rows]}, features=features)
        for split, rows in WMT_ROWS.items()}
    datasets.DatasetDict(splits).save_to_disk(str(folder))
    return folder


@pytest.fixture
def wmt14(tmp_path, monkeypatch):
    folder = save_wmt14(tmp_path / "wmt14-saved")
    monkeypatch.setenv("TRANSFORMER_WMT14", str(folder))
    return folder


def test_wmt14_loader_reads_the_hub_format_offline(wmt14):
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        train = load_wmt14("train")
    assert train.src == ["A house.", "The cat sleeps.", "Spaces around.", "Two dogs run."]
    assert train.tgt == ["Ein Haus.", "Die Katze schläft.", "Leerzeichen.", "Zwei Hunde rennen."]
    assert load_wmt14("valid", "de-en").src == ["Guten Morgen.", "Danke."]
    assert load_corpus("wmt14", "test").tgt == ["Wo ist der Bahnhof?"]
    stream = CorpusStream("wmt14", "train", batch_rows=2)        # the prepare step's reader
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        assert list(stream) == list(zip(train.src, train.tgt))
    assert stream.dropped_empty == 1


def test_wmt14_loader_names_a_bad_copy(tmp_path, monkeypatch):
    datasets = hf_datasets()
    monkeypatch.setenv("TRANSFORMER_WMT14", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="TRANSFORMER_WMT14=.*missing"):
        load_wmt14("train")
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"translation": ["a"]})}) \
        .save_to_disk(str(tmp_path / "bad"))
    monkeypatch.setenv("TRANSFORMER_WMT14", str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="not 'validation'"):
        load_wmt14("valid")
    with pytest.raises(ValueError, match="wmt14/train: a row of the 'translation' column"):
        load_wmt14("train")


def test_corpus_stream_reads_what_load_corpus_reads(tmp_path):
    pairs = [("\ufeffOne.", "Eins."), ("Two. ", " Zwei."), ("", "Leer."), ("Three.", "Drei.")]
    write_pairs(tmp_path / "c", "train", pairs, gz=True)
    write_pairs(tmp_path / "d", "train", [("Four.", "Vier.")], gz=True)
    for name in (tmp_path / "c", f"{tmp_path / 'c'}*2+{tmp_path / 'd'}"):
        with pytest.warns(UserWarning):
            corpus = load_corpus(name, "train")
        with pytest.warns(UserWarning):
            assert list(CorpusStream(name, "train")) == list(zip(corpus.src, corpus.tgt))


def test_corpus_stream_refuses_unaligned_files(tmp_path):
    write_pairs(tmp_path / "c", "train", [("One.", "Eins."), ("Two.", "Zwei.")], gz=True)
    with gzip.open(tmp_path / "c" / "train.tgt.gz", "wt", encoding="utf-8") as f:
        f.write("Eins.\nZwei.\nDrei.\n")
    with pytest.raises(ValueError, match=r"train.src.gz has 2 lines but .*train.tgt.gz has 3"):
        list(CorpusStream(tmp_path / "c", "train"))


# ------------------------------------------------------------------ preparing
WORDS = {"the": "die", "cat": "Katze", "dog": "Hund", "sees": "sieht", "a": "eine",
         "house": "Haus", "big": "grosse", "small": "kleine", "red": "rote", "runs": "rennt",
         "and": "und", "sleeps": "schläft", "bird": "Vogel", "tree": "Baum"}


def synthetic_corpus(folder, pairs=400, seed=0):
    """A corpus folder of word-for-word 'translations' of random lengths (2-24 words)."""
    rng = np.random.default_rng(seed)
    vocab = list(WORDS)
    for split, n in (("train", pairs), ("valid", 40)):
        rows = []
        for _ in range(n):
            words = rng.choice(vocab, size=rng.integers(2, 25))
            rows.append((" ".join(words) + ".", " ".join(WORDS[w] for w in words) + "."))
        write_pairs(folder, split, rows, gz=True)
    return folder


def toy_settings(corpus, out, **overrides):
    """The toy run (helpers.toy_run) with 80 pieces, micro-batches of 200 tokens and
    sentences of at most 20 tokens (longer pairs skipped)."""
    return toy_run(corpus, out, **{"vocab": 80, "max_tokens": 200, "warmup": 2, "max_len": 20,
                                   "save_every": 100, "threads": 1, "seed": 3, **overrides})


def same_batch(a, b) -> bool:
    return all(torch.equal(getattr(a, k), getattr(b, k)) for k in ("src", "tgt_in", "tgt_out")) \
        and (a.n_src_tokens, a.n_tgt_tokens) == (b.n_src_tokens, b.n_tgt_tokens)


def test_a_prepared_folder_trains_exactly_as_the_corpus_in_memory(tmp_path):
    """Same vocabulary (the sample holds every pair), same batches epoch after epoch, same
    tensors, so the same losses: --corpus FOLDER and --corpus PREPARED are one run."""
    corpus = synthetic_corpus(tmp_path / "corpus")
    prepared = prepare_corpus(toy_settings(corpus, tmp_path / "unused"), tmp_path / "prepared",
                              workers=2, log=lambda line: None)
    memory = Trainer.from_config(toy_settings(corpus, tmp_path / "run-memory"))
    mapped = Trainer.from_config(toy_settings(prepared, tmp_path / "run-mapped"))
    assert isinstance(mapped.train_iter.src_ids, RaggedIds)          # memory-mapped ids
    assert mapped.tokenizer.serialized() == memory.tokenizer.serialized()
    assert mapped.train_iter.n_skipped == memory.train_iter.n_skipped > 0      # max_len 20
    for epoch in range(3):
        assert list(mapped.train_iter.batches(epoch)) == memory.train_iter.batches(epoch)
    assert mapped.train_iter.padding_fraction() == pytest.approx(
        memory.train_iter.padding_fraction())
    pairs = zip(iter(mapped.train_iter), iter(memory.train_iter))
    assert all(same_batch(a, b) for a, b in pairs)
    assert all(same_batch(mapped.valid_iter.collate(a), memory.valid_iter.collate(b))
               for a, b in zip(mapped.valid_iter.batches(0), memory.valid_iter.batches(0)))
    assert mapped.valid.src == memory.valid.src and mapped.valid.tgt == memory.valid.tgt
    mapped.train_iter.load_state_dict({"epoch": 0, "position": 0})
    memory.train_iter.load_state_dict({"epoch": 0, "position": 0})
    torch.manual_seed(11)                         # the same dropout for both
    a = mapped.fit()
    torch.manual_seed(11)
    b = memory.fit()
    assert a["valid_loss"] == b["valid_loss"]
    assert [r["loss"] for r in mapped.records if "loss" in r] == \
        [r["loss"] for r in memory.records if "loss" in r]
    # resuming the prepared run takes its vocabulary; a different --vocab-size is refused
    with pytest.raises(TrainingError, match="prepared with a vocabulary of 80 pieces but "
                                            "--vocab-size is 90"):
        Trainer.from_config(toy_settings(prepared, tmp_path / "run-other", vocab_size=90))


def test_the_bpe_sample_is_uniform_and_in_corpus_order():
    pairs = [(f"e{i}", f"d{i}") for i in range(50)]
    counts = np.zeros(50)
    for seed in range(2000):
        sample, n, _ = _sample_pairs(iter(pairs), 10, seed)
        assert n == 50 and len(sample) == 10 and sample == sorted(sample, key=lambda p: int(p[0][1:]))
        counts[[int(en[1:]) for en, _ in sample]] += 1
    assert counts.min() > 300 and counts.max() < 500          # each is drawn 400 times in 2000
    assert _sample_pairs(iter(pairs), 10, 7) == _sample_pairs(iter(pairs), 10, 7)
    assert _sample_pairs(iter(pairs), 60, 0)[0] == pairs       # all of them, in order


def test_prepare_command_on_wmt14_offline_samples_and_reuses(wmt14, tmp_path, capsys):
    out = tmp_path / "wmt14-prepared"
    args = ["prepare", "--corpus", "wmt14", "--out", str(out), "--vocab-size", "40",
            "--sample", "3", "--workers", "1"]
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        cli.main(args)
    manifest = json.loads((out / "prepared.json").read_text())
    assert manifest["bpe_pairs"] == 3 and manifest["splits"]["train"]["pairs"] == 4
    assert manifest["splits"]["train"]["dropped_empty"] == 1
    store = PreparedCorpus(out)
    tok = store.tokenizer()
    german = store.sentences("train", "de")
    assert tok.decode(german[1].tolist()) == "Die Katze schläft."
    assert store.valid_text("de-en").src == ["Guten Morgen.", "Danke."]
    assert "train: 4 pairs" in capsys.readouterr().out
    cli.main(args)                                                  # the same: kept as it is
    assert "with these settings already" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        cli.main([a if a != "40" else "41" for a in args])
    assert stop.value.code == 2
    assert "other settings (vocab_size: 40 there, 41 here)" in capsys.readouterr().err


def test_train_on_wmt14_prepares_it_once(wmt14, tmp_path):
    cfg = toy_settings("wmt14", tmp_path / "run", data_root=str(tmp_path / "data"), vocab_size=40,
                     max_updates=1, max_tokens=64, update_tokens=64)
    with pytest.warns(UserWarning, match="dropped 1 of 5"):
        trainer = Trainer.from_config(cfg)
    folder = CORPORA["wmt14"].prepared_folder(40, cfg.seed, cfg.data_root)
    assert PreparedCorpus(folder).pairs("train") == 4
    assert trainer.train_iter.src_ids.ids.filename == folder / "train.en.ids"   # mapped
    assert trainer.fit()["step"] == 1


def test_a_damaged_prepared_folder_is_named(tmp_path):
    corpus = synthetic_corpus(tmp_path / "corpus", pairs=50)
    out = prepare_corpus(toy_settings(corpus, tmp_path / "x"), tmp_path / "prepared", workers=1,
                         log=lambda line: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "prepared"]   # no temporary
    with open(out / "train.de.ids", "ab") as f:
        f.write(b"\0\0")
    with pytest.raises(ValueError, match=r"train.de.ids has [\d,]+ bytes; prepared.json says"):
        PreparedCorpus(out).sentences("train", "de")
    (out / "prepared.json").write_text('{"format": "transformer-prepared-corpus", "version": 9}')
    with pytest.raises(ValueError, match="prepared.json: not a transformer-prepared-corpus of "
                                         "version 1"):
        PreparedCorpus(out)
    with pytest.raises(ValueError, match="exists and is not a prepared corpus"):
        prepare_corpus(toy_settings(corpus, tmp_path / "x"), corpus, log=lambda line: None)


def test_a_folder_whose_vocabulary_is_not_a_fingerprint_is_refused_in_one_line(tmp_path):
    # the manifest's vocabulary is sha256:<hex> (tokenizer.vocabulary_fingerprint); the bare
    # hex, another key or a broken value is refused naming the file and the field
    from transformer.errors import InputError
    from transformer.tokenizer import Tokenizer, same_vocabulary
    corpus = synthetic_corpus(tmp_path / "corpus", pairs=50)
    cfg = toy_settings(corpus, tmp_path / "x")
    out = prepare_corpus(cfg, tmp_path / "prepared", workers=1, log=lambda line: None)
    manifest = json.loads((out / "prepared.json").read_text())
    vocabulary = manifest.pop("vocabulary")
    assert vocabulary.startswith("sha256:") and same_vocabulary(
        vocabulary, (out / "spm.model").read_bytes())
    original = {**manifest, "vocabulary": vocabulary}
    tokenizer = PreparedCorpus(out).tokenizer()
    assert tokenizer.fingerprint == vocabulary
    for spelling in ({"vocabulary": vocabulary.removeprefix("sha256:")},
                     {"tokenizer_sha256": vocabulary.removeprefix("sha256:")},
                     {"vocabulary": None}):
        (out / "prepared.json").write_text(json.dumps({**manifest, **spelling}))
        with pytest.raises(InputError, match=r"^\S*prepared\.json: its 'vocabulary' is .*, "
                                             r"not a fingerprint \(sha256:<hex>\)$") as caught:
            PreparedCorpus(out).tokenizer()
        assert "\n" not in str(caught.value)
    given = prepare_corpus(cfg, tmp_path / "given", workers=1, tokenizer=tokenizer,
                           log=lambda line: None)
    said = []
    assert prepare_corpus(cfg, given, workers=1, tokenizer=tokenizer, log=said.append) == given
    assert said and "prepared with these settings already" in said[0]
    settings = json.loads((given / "prepared.json").read_text())["settings"]
    settings["tokenizer"] = settings["tokenizer"].removeprefix("sha256:")   # the bare hex
    manifest = json.loads((given / "prepared.json").read_text())
    (given / "prepared.json").write_text(json.dumps({**manifest, "settings": settings}))
    with pytest.raises(InputError, match=r"prepared with other settings \(tokenizer: "):
        prepare_corpus(cfg, given, workers=1, tokenizer=tokenizer, log=lambda line: None)
    (out / "prepared.json").write_text(json.dumps(original))
    other = Tokenizer.train(["zebra quokka"] * 20, tmp_path / "other.model", vocab_size=20)
    (out / "spm.model").write_bytes(other.serialized())
    with pytest.raises(ValueError, match="is not the vocabulary the ids in .* were encoded"):
        PreparedCorpus(out).tokenizer()


# Each process maps the prepared folder, runs an epoch, reports what it saw and, while both
# still hold the mapping, how the ids' pages are counted in its memory (/proc/self/smaps).
READER = textwrap.dedent('''
    import hashlib, json, sys
    from transformer.training.corpus_files import PreparedCorpus
    store = PreparedCorpus(sys.argv[1])
    it = store.batch_iterator("train", "en-de", max_tokens=300, seed=5)
    digest = hashlib.sha256()
    for batch in it:
        digest.update(batch.src.numpy().tobytes() + batch.tgt_out.numpy().tobytes())
    print(json.dumps({"digest": digest.hexdigest(), "batches": len(it)}), flush=True)
    sys.stdin.readline()                     # both processes have read everything
    ids = str(store.folder / "train.de.ids")
    lines = open("/proc/self/smaps").read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(ids))
    fields = {}
    for line in lines[start + 1:]:
        if not line.split()[0].endswith(":") or line.startswith("VmFlags"):
            break
        fields[line.split()[0][:-1]] = int(line.split()[1])
    print(json.dumps(fields), flush=True)
    sys.stdin.readline()
''')


def test_two_processes_map_the_same_prepared_folder(tmp_path):
    corpus = synthetic_corpus(tmp_path / "corpus", pairs=3000)
    out = prepare_corpus(toy_settings(corpus, tmp_path / "x"), tmp_path / "prepared", workers=1,
                         log=lambda line: None)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", READER, str(out)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    try:
        seen = [json.loads(p.stdout.readline()) for p in procs]
        for p in procs:
            p.stdin.write("\n")
            p.stdin.flush()
        pages = [json.loads(p.stdout.readline()) for p in procs]
        for p in procs:
            p.stdin.write("\n")
            p.stdin.flush()
            assert p.wait(timeout=60) == 0
    finally:
        for p in procs:
            p.kill()
    assert seen[0] == seen[1] and seen[0]["batches"] > 10
    here = PreparedCorpus(out).batch_iterator("train", "en-de", max_tokens=300, seed=5)
    import hashlib
    digest = hashlib.sha256()
    for batch in here:
        digest.update(batch.src.numpy().tobytes() + batch.tgt_out.numpy().tobytes())
    assert seen[0]["digest"] == digest.hexdigest()
    size_kb = (out / "train.de.ids").stat().st_size / 1024
    for fields in pages:          # the ids are in both page tables, shared, none private
        assert fields["Shared_Clean"] >= size_kb // 4 * 4 and fields["Private_Dirty"] == 0
        assert fields["Anonymous"] == 0


def test_other_ranks_wait_for_rank_0_to_prepare_wmt14(wmt14, tmp_path, monkeypatch):
    """Under torchrun rank 0 prepares wmt14 (longer than a collective's timeout may allow);
    the others poll for its manifest, which appears only once the folder is whole."""
    import threading
    import types
    from transformer.training import run_data as module
    monkeypatch.setattr(module.time, "sleep", lambda s: threading.Event().wait(0.05))
    cfg = toy_settings("wmt14", tmp_path / "run", data_root=str(tmp_path / "data"), vocab_size=40)
    rank0 = threading.Timer(0.3, lambda: module.prepared_folder(cfg, types.SimpleNamespace(
        main=True, rank=0)))
    rank0.start()
    with pytest.warns(UserWarning, match="dropped 1"):
        folder = module.prepared_folder(cfg, types.SimpleNamespace(main=False, rank=1))
        rank0.join()
    assert folder == CORPORA["wmt14"].prepared_folder(40, cfg.seed, cfg.data_root)
    assert PreparedCorpus(folder).pairs("train") == 4
