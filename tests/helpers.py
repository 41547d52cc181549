"""What several test files share: small corpora written to disk, the arguments of a toy
training run, the command line run in process with its exit status and output, and the
GPU scripts rehearsed on the CPU."""
from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys
from pathlib import Path

from transformer.tools import cli

BOOK = Path(__file__).resolve().parents[1] / "book"
# The chapters a reader opens (each with its Colab install cell): the learning path's
# numbered chapters and the optional part's "Under the hood" chapters.
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb")) + sorted(BOOK.glob("hood_*.ipynb"))

EN = "the a dog cat man woman runs sits on in under green red house tree big small".split()
DE = "der die das Hund Katze Mann Frau läuft sitzt auf im unter grünen roten Haus Baum".split()


def write_pairs(folder: Path, split: str, pairs, gz: bool = False) -> Path:
    """``split`` of a corpus folder: ``{split}.src`` (English) and ``{split}.tgt`` (German),
    one sentence a line, gzip-compressed when ``gz``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for side, i in (("src", 0), ("tgt", 1)):
        text = "".join(p[i] + "\n" for p in pairs)
        if gz:
            with gzip.open(folder / f"{split}.{side}.gz", "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (folder / f"{split}.{side}").write_text(text, encoding="utf-8")
    return folder


def write_corpus(folder: Path, n_train=300, n_valid=20, seed=0) -> Path:
    """A toy English-German corpus (train, valid and test) of random 3-9 word sentences."""
    rng = random.Random(seed)
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_valid)):
        pairs = []
        for _ in range(n):
            k = rng.randint(3, 9)
            pairs.append((" ".join(rng.choice(EN) for _ in range(k)) + ".",
                          " ".join(rng.choice(DE) for _ in range(k)) + "."))
        write_pairs(folder, split, pairs)
    return Path(folder)


def train_args(corpus, out, updates=3, vocab=120, d_model=16):
    """``train`` of a tiny model for a few updates on ``corpus`` (a toy run)."""
    return ["train", "--corpus", str(corpus), "--out", str(out), "--vocab-size", str(vocab),
            "--max-tokens", "400", "--update-tokens", "400", "--max-updates", str(updates),
            "--save-every", "2", "--keep-last", "2", "--warmup", "10", "--precision", "fp32",
            "--log-every", "1", "--eval-bleu-sentences", "0", "--no-progress",
            "--model", f"d_model={d_model}", "--model", f"d_ff={2 * d_model}",
            "--model", "n_heads=2", "--model", "n_encoder_layers=1",
            "--model", "n_decoder_layers=1"]


def run_cli(capsys, argv) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``python -m transformer *argv``, run in process (a
    bug in the package: status 1, its traceback and a line asking for a report)."""
    try:
        cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The one ``error:`` line of ``err``, which holds no traceback."""
    lines = [line for line in err.splitlines() if line.startswith("error:")
             or ": error:" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def gpu_dry_run(script: str, out: Path, data: Path, *options: str, timeout: int = 600):
    """``bash benchmarks/gpu/SCRIPT --dry-run OPTIONS`` on this CPU, writing into ``out``,
    corpora from ``data``: the completed process and its log (``out/log.txt``)."""
    env = {**os.environ, "OUT": str(out), "PY": sys.executable,
           "TRANSFORMER_DATA": str(data), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(["bash", f"benchmarks/gpu/{script}", "--dry-run", *options],
                            cwd=Path(__file__).resolve().parents[1], env=env,
                            capture_output=True, text=True, timeout=timeout)
    log = (out / "log.txt").read_text() if (out / "log.txt").is_file() else result.stderr
    return result, log
