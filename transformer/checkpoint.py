"""Checkpoints that survive crashes, load safely, and average (section 6.1).

* :func:`save_checkpoint` writes to a temporary file in the same folder, flushes it to
  disk and renames it into place: a crash leaves the old files and at worst a stray
  ``*.tmp``, never a half-written checkpoint under a real name.
* :func:`load_checkpoint` uses ``torch.load(..., weights_only=True)``: tensors and
  plain containers only, no code runs. A damaged file raises :class:`CheckpointError`
  naming it.
* :func:`average_checkpoints`: "For the base models, we used a single model obtained by
  averaging the last 5 checkpoints, which were written at 10-minute intervals."
"""
from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path

import torch


class CheckpointError(RuntimeError):
    pass


STEP_FILE = re.compile(r"^step_(\d+)\.pt$")


def save_checkpoint(state: dict, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getbuffer()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Test hook: slow writes let a test kill the process in the middle of one.
    delay = float(os.environ.get("TRANSFORMER_TEST_SAVE_DELAY", "0"))
    with open(tmp, "wb") as f:
        half = len(data) // 2
        f.write(data[:half])
        if delay:
            f.flush()
            print(f"writing checkpoint {path.name}", flush=True)
            time.sleep(delay)
        f.write(data[half:])
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:   # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    except OSError:
        pass
    return path


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, garbage bytes, disallowed pickle globals
        reason = (str(exc).strip().splitlines() or ["empty file"])[0][:200]
        raise CheckpointError(f"checkpoint {path} is corrupt or truncated, or holds objects "
                              f"that weights_only loading refuses; it cannot be loaded "
                              f"({type(exc).__name__}: {reason})") from None
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a transformer checkpoint (no 'model' entry)")
    return state


def step_checkpoints(folder: str | os.PathLike) -> list[Path]:
    """``step_*.pt`` files in ``folder``, oldest step first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := STEP_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def prune_checkpoints(folder: str | os.PathLike, keep_last: int) -> None:
    for path in step_checkpoints(folder)[:-keep_last]:
        path.unlink(missing_ok=True)
    for stray in Path(folder).glob(".*.tmp"):   # left by a crash during a save
        if str(os.getpid()) not in stray.name:
            stray.unlink(missing_ok=True)


def average_checkpoints(paths: list[str | os.PathLike]) -> dict:
    """Element-wise mean of the model weights of ``paths``; other entries from the last."""
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint")
    states = [load_checkpoint(p) for p in paths]
    keys = states[-1]["model"].keys()
    for p, s in zip(paths, states):
        if s["model"].keys() != keys:
            raise CheckpointError(f"{p} holds different parameters from {paths[-1]}: "
                                  f"they are not checkpoints of the same model")
    averaged = {}
    for key in keys:
        tensors = [s["model"][key] for s in states]
        if tensors[0].is_floating_point():
            averaged[key] = (torch.stack([t.double() for t in tensors]).mean(0)
                             .to(tensors[0].dtype))
        else:
            averaged[key] = tensors[-1]
    result = {k: v for k, v in states[-1].items() if k in ("model_config", "train_config",
                                                           "tokenizer", "step")}
    result["model"] = averaged
    result["averaged_from"] = [str(p) for p in paths]
    return result
