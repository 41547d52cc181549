"""The steps of benchmarks/gpu/train.sh that need more than one command, each writing a
result record with its provenance (transformer/measuring/provenance.py).

    python -m benchmarks.gpu.train_steps train-record RUN SCORE.json... --command CMD \
        --wall-s S --out OUT/train.json
    python -m benchmarks.gpu.train_steps torchrun --corpus C --work DIR --out OUT/torchrun.json
    python -m benchmarks.gpu.train_steps notebooks NB.ipynb... --out-dir OUT \
        --out OUT/notebooks.json

train-record: the base run's updates, target tokens per second, training and wall time,
final validation loss, parameters and settings, with the sacreBLEU scores (BLEU, chrF) of
each test set that ``python -m transformer evaluate --json`` wrote.

torchrun: ``torchrun --standalone --nproc_per_node 1 -m transformer train`` (DDP on NCCL
on a GPU, gloo on a CPU) is killed with SIGKILL once it has written a checkpoint and
trained past it; the same command then has to resume from that checkpoint and finish,
with one metrics record per update (none lost, none twice).

notebooks: executes notebooks through nbclient on a ``python3`` kernel, as Jupyter or
Colab runs them (kernel in the notebook's folder, cells in order, stop at the first
error), keeps each executed notebook in --out-dir and records its run time and its
slowest cells.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from transformer.checkpoint import step_file
from transformer.measuring.provenance import provenance, write_record
from transformer.measuring.timing import Stopwatch


def _device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def _records(run: Path) -> list[dict]:
    """``run``'s metrics records (a line torn by a kill left out)."""
    from transformer.training.run_folder import RunFolder
    return RunFolder(run).records()


# ----------------------------------------------------------------------- train-record
def train_record(args) -> dict:
    """The record of the base run in ``args.run`` and its scores."""
    import torch
    run = args.run
    records = _records(run)
    updates = [r for r in records if "loss" in r]
    final = next((r for r in reversed(records) if r.get("final")), {})
    speeds = [r["tokens_per_s"] for r in updates]
    settings = json.loads((run / "run.json").read_text())["train"]
    scores = {}
    for path in args.scores:
        score = json.loads(Path(path).read_text())
        name = Path(score["corpus"]).name
        scores[name] = {k: score[k] for k in ("split", "sentences", "beam", "alpha", "bleu",
                                              "chrf", "bleu_signature", "chrf_signature",
                                              "decode_seconds")}
        scores[name]["bleu"], scores[name]["chrf"] = (round(score["bleu"], 2),
                                                      round(score["chrf"], 2))
    newest = run / "checkpoints" / step_file(newest_checkpoint(run))
    last = torch.load(newest, map_location="cpu", weights_only=True)   # saved at the end
    step, train_s = last["step"], last["train_seconds"]
    params = sum(t.numel() for t in last["model"].values())
    return {
        "provenance": provenance(args.command, _device()),
        "what": "the paper's base model (Table 3) trained on Multi30k + Tatoeba for a fixed "
                "wall time, its last checkpoints averaged, beam search on each test split",
        "settings": settings, "parameters": params, "precision": last.get("precision"),
        "updates": step, "epochs": updates[-1]["epoch"] if updates else None,
        "train_seconds": round(train_s, 1) if train_s else None,
        "wall_seconds": args.wall_s,
        "updates_per_s": round(step / train_s, 3) if train_s else None,
        "tokens_per_s": {"median": round(statistics.median(speeds)) if speeds else None,
                         "mean": round(statistics.fmean(speeds)) if speeds else None},
        "final_loss": round(updates[-1]["loss"], 4) if updates else None,
        "valid_loss": round(final["valid_loss"], 4) if "valid_loss" in final else None,
        "valid_curve": sorted({r["step"]: round(r["valid_loss"], 4) for r in records
                               if "valid_loss" in r}.items()),
        "averaged_checkpoints": settings.get("keep_last"),
        "scores": scores,
    }


# --------------------------------------------------------------------------- torchrun
def newest_checkpoint(run: Path) -> int:
    """The update of the newest checkpoint in ``run`` (0 when there is none)."""
    steps = [int(p.stem.split("_")[1]) for p in (run / "checkpoints").glob("step_*.pt")]
    return max(steps, default=0)


def descendants(pid: int) -> list[int]:
    """The processes under ``pid``, read from /proc (torchrun starts each worker in a
    session of its own, so killing torchrun's process group leaves the workers running)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_all(pid: int) -> list[int]:
    """SIGKILL ``pid`` and every process under it at once, as a machine that dies would;
    wait (10 s at most) until they are gone; return the processes killed."""
    victims = [pid, *descendants(pid)]
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while any(alive(v) for v in victims[1:]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return victims


def torchrun_check(args) -> dict:
    """Start, SIGKILL mid-run, start again: the run must resume and finish."""
    run = args.work / "torchrun"
    if run.exists():
        import shutil
        shutil.rmtree(run)
    run.parent.mkdir(parents=True, exist_ok=True)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node", "1"]
    train = ["-m", "transformer", "train", "--corpus", str(args.corpus), "--out", str(run),
             "--save-every", str(args.save_every), "--keep-last", "3", "--log-every", "1",
             "--eval-bleu-sentences", "0", "--no-progress", *args.train_args]
    log = open(args.work / "torchrun.log", "w")
    kill_after = 2 * args.save_every        # a checkpoint to resume from, and updates past it
    with Stopwatch() as first_run:
        first = subprocess.Popen(launcher + train + ["--max-updates", "1000000"], stdout=log,
                                 stderr=subprocess.STDOUT)
        deadline = time.monotonic() + args.timeout_s
        try:
            while first.poll() is None and time.monotonic() < deadline:
                logged = [r["step"] for r in _records(run) if "loss" in r]
                if newest_checkpoint(run) >= kill_after and logged and \
                        logged[-1] > newest_checkpoint(run):
                    break
                time.sleep(0.05)
        finally:
            running = first.poll() is None
            killed = kill_all(first.pid) if running else []   # torchrun and its worker, at once
            first.wait()
    first_s = first_run.seconds
    logged = [r["step"] for r in _records(run) if "loss" in r]
    resume_from = newest_checkpoint(run)
    target = resume_from + args.more
    with Stopwatch() as second_run:
        second = subprocess.run(launcher + train + ["--max-updates", str(target)], stdout=log,
                                stderr=subprocess.STDOUT, timeout=args.timeout_s)
    second_s = second_run.seconds
    log.close()
    text = (args.work / "torchrun.log").read_text()
    steps = [r["step"] for r in _records(run) if "loss" in r]
    backend = "nccl" if "(1 process(es), nccl)" in text else \
        "gloo" if "(1 process(es), gloo)" in text else None
    checks = {
        "killed_while_training": running and first.returncode == -signal.SIGKILL
                                 and len(killed) >= 2 and not any(map(alive, killed)),
        "checkpoint_before_kill": resume_from >= kill_after,
        "resumed_from_it": f"resumed from {run / 'checkpoints' / step_file(resume_from)}"
                           in text,
        "finished": second.returncode == 0 and steps[-1:] == [target],
        "one_record_per_update": steps == list(range(1, target + 1)),
        "ddp_backend": backend == ("nccl" if _device() == "cuda" else "gloo"),
    }
    return {
        "provenance": provenance(shlex.join(["torchrun", *launcher[3:], *train]), _device()),
        "what": "torchrun --nproc_per_node 1: DistributedDataParallel on one process, killed "
                "with SIGKILL after a checkpoint, then the same command resumed",
        "backend": backend, "kill_after_checkpoint": kill_after,
        "killed_at_update": logged[-1] if logged else 0, "resumed_from": resume_from,
        "finished_at": steps[-1] if steps else 0,
        "first_seconds": round(first_s, 1), "second_seconds": round(second_s, 1),
        "checks": checks, "ok": all(checks.values()),
        "log_tail": text.splitlines()[-12:],
    }


# -------------------------------------------------------------------------- notebooks
def run_notebook(path: Path, out_dir: Path, timeout: int, cwd: Path | None = None) -> dict:
    """Execute ``path`` as Jupyter does (nbclient, ``python3`` kernel, in its folder or
    ``cwd``); write the executed copy into ``out_dir``; return its run time, outcome and
    slowest cells."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout or None, kernel_name="python3",   # 0: none
                            record_timing=True,
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    error = None
    with Stopwatch() as watch:
        try:
            client.execute()
        except (CellExecutionError, CellTimeoutError) as exc:
            error = str(exc).strip().splitlines()[-1][:500]
    seconds = watch.seconds
    nbformat.write(nb, out_dir / path.name)
    timed = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        begin, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if cell.cell_type == "code" and begin and end:
            from datetime import datetime
            span = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                    - datetime.fromisoformat(begin.replace("Z", "+00:00"))).total_seconds()
            timed.append((round(span, 2), index, cell.source.splitlines()[0][:80]))
    ran = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    return {"notebook": path.name, "ok": error is None, "error": error,
            "seconds": round(seconds, 1), "code_cells": sum(c.cell_type == "code"
                                                            for c in nb.cells),
            "cells_run": len(ran),
            "slowest_cells": [{"cell": i, "seconds": s, "first_line": line}
                              for s, i, line in sorted(timed, reverse=True)[:5]]}


def notebooks(args) -> dict:
    args.out_dir.mkdir(parents=True, exist_ok=True)
    results = [run_notebook(Path(p), args.out_dir, args.timeout, args.kernel_cwd)
               for p in args.notebooks]
    return {"provenance": provenance(None, _device()),
            "what": "chapters executed through nbclient on a python3 kernel (as on Colab: "
                    "the chapter's own cells choose the GPU; full form, BOOK_QUICK unset)",
            "quick": os.environ.get("BOOK_QUICK", ""), "notebooks": results,
            "ok": all(r["ok"] for r in results)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    s = sub.add_parser("train-record", help="the base run's record")
    s.add_argument("run", type=Path, help="the run folder")
    s.add_argument("scores", nargs="*", help="JSON files of `evaluate --json`")
    s.add_argument("--command", required=True, help="the training command, for provenance")
    s.add_argument("--wall-s", type=int, default=None, help="the training step's wall time")
    s.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("torchrun", help="kill and resume under torchrun")
    s.add_argument("--corpus", required=True)
    s.add_argument("--work", type=Path, required=True, help="scratch folder for the run")
    s.add_argument("--save-every", type=int, default=10)
    s.add_argument("--more", type=int, default=10, help="updates after the resume")
    s.add_argument("--timeout-s", type=int, default=180)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("train_args", nargs=argparse.REMAINDER,
                   help="after --: more `train` options (model size, precision)")
    s = sub.add_parser("notebooks", help="execute notebooks through nbclient")
    s.add_argument("notebooks", nargs="+")
    s.add_argument("--out-dir", type=Path, required=True)
    s.add_argument("--timeout", type=int, default=0,
                   help="seconds a cell may run (default 0: no limit; train.sh --limit-min "
                        "limits the whole step)")
    s.add_argument("--kernel-cwd", type=Path, default=None,
                   help="the kernel's folder (default: the notebook's)")
    s.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if getattr(args, "train_args", None) and args.train_args[0] == "--":
        args.train_args = args.train_args[1:]
    record = {"train-record": train_record, "torchrun": torchrun_check,
              "notebooks": notebooks}[args.step](args)
    write_record(args.out, record)
    summary = {k: v for k, v in record.items() if k not in ("provenance", "settings",
                                                            "valid_curve", "log_tail")}
    print(json.dumps(summary)[:2000])
    return 0 if record.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
