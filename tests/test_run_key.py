"""A cached run (the book's) is keyed by what changes its weights: the settings, the data and
the code training runs; not docstrings, comments or the command-line tools."""
import dataclasses
import gzip
import shutil

import pytest

from transformer.training.config import TrainConfig
from transformer.measuring import imports
from transformer.training import cache


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A copy of the package that the key reads instead of the installed one."""
    copy = tmp_path / "transformer"
    shutil.copytree(imports.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(imports, "PACKAGE", copy)
    return copy


@pytest.fixture
def cfg(tmp_path):
    corpus = tmp_path / "toy-en-de"
    corpus.mkdir()
    for split in ("train", "valid"):
        for side, text in (("src", "a house\n"), ("tgt", "ein Haus\n")):
            (corpus / f"{split}.{side}.gz").write_bytes(gzip.compress(text.encode()))
    return TrainConfig(corpus=str(corpus), out_dir="x")


def edit(path, old: str, new: str):
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_the_training_code_is_what_the_trainer_imports(package):
    files = {p.relative_to(package).as_posix() for p in cache.training_modules()}
    assert {"training/loop.py", "loss.py", "fast/loss.py", "model.py", "batching.py",
            "tokenizer.py", "training/muon.py", "data.py"} <= files
    assert not any(f.startswith("tools/") for f in files)        # the command line, export


def test_a_docstring_or_a_comment_keeps_the_key(package, cfg):
    key = cache.run_key(cfg)
    edit(package / "loss.py", '"""The distribution q\' as a dense', '"""The smoothed q\' as a dense')
    edit(package / "training" / "loop.py", "import contextlib\n", "import contextlib  # note\n")
    with open(package / "tools" / "cli.py", "a") as f:
        f.write("X = 1\n")                                       # not training code
    (package / "fast" / "unused.py").write_text("X = 1\n")        # a module nobody imports
    assert cache.run_key(cfg) == key


def test_a_one_character_change_to_the_loss_changes_the_key(package, cfg):
    key = cache.run_key(cfg)
    edit(package / "loss.py", "torch.full_like(q[..., :1], 1 - smoothing)",
         "torch.full_like(q[..., :1], 2 - smoothing)")
    assert cache.run_key(cfg) != key


def test_the_settings_data_and_precision_change_the_key(package, cfg, monkeypatch):
    key = cache.run_key(cfg)
    assert cache.run_key(dataclasses.replace(cfg, out_dir="y", progress=False)) == key
    assert cache.run_key(dataclasses.replace(cfg, max_updates=7)) != key
    assert cache.run_key(dataclasses.replace(cfg, vocab_size=7000)) != key
    (cache.Path(cfg.corpus) / "train.tgt.gz").write_bytes(gzip.compress(b"das Haus\n"))
    assert cache.run_key(cfg) != key
    import transformer.training.precision as precision_module     # what --precision auto picks here
    on_cpu = dataclasses.replace(cfg, device="cpu")
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: True)
    bf16_key = cache.run_key(on_cpu)
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: False)
    assert cache.run_key(on_cpu) != bf16_key
