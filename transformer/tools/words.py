"""What a training run says at a terminal: its records and its result in sentences.

The records themselves stay JSON, in the run's ``metrics.jsonl`` (and on stdout behind
``--json``, for scripts); a person at a terminal reads lines such as::

    step 5/30: loss 6.66, learning rate 0.0070, 1,174 tokens/s

:func:`say` prints a line above a progress bar (tqdm's) when one is shown, so the two do
not tear each other.
"""
from __future__ import annotations

import sys


def learning_rate(lr: float) -> str:
    """A learning rate as a person reads it: four decimals, or two figures when smaller."""
    return f"{lr:.4f}" if lr >= 1e-3 else f"{lr:.2g}"


def _validation(record: dict) -> str:
    parts = [f"loss {record['valid_loss']:.3f}"]
    if "valid_ppl" in record:
        parts.append(f"perplexity {record['valid_ppl']:.2f}")
    if "valid_bleu" in record:
        parts.append(f"BLEU {record['valid_bleu']:.1f}")
    text = ", ".join(parts)
    if record.get("valid_tokens"):
        text += f" (over {record['valid_tokens']:,} target tokens)"
    return text


def record_sentence(record: dict, total: int | None = None) -> str | None:
    """One line for a record of ``metrics.jsonl`` (``total``: the run's last update, shown
    as ``step N/total``), or None for one a person need not read (the final record, which
    :func:`result_sentence` says)."""
    if record.get("final"):
        return None
    step = f"step {record['step']}" + (f"/{total}" if total else "")
    if "loss" in record:
        line = f"{step}: loss {record['loss']:.2f}, learning rate {learning_rate(record['lr'])}"
        if record.get("tokens_per_s") is not None:
            line += f", {record['tokens_per_s']:,.0f} tokens/s"
        return line
    if "threads" in record:
        n = record["threads"]
        return f"{step}: training on {n} thread{'s' * (n != 1)} (other work shares the cores)"
    if record.get("skipped_overflow"):
        return (f"{step}: an fp16 gradient overflowed, the update was skipped (loss scale "
                f"now {record.get('loss_scale')})")
    if "valid_loss" in record:
        return f"{step}: validation {_validation(record)}"
    return None


def result_sentence(result: dict) -> str:
    """One line for what ``Trainer.fit`` returns."""
    line = (f"{result['step']:,} update{'s' * (result['step'] != 1)} in "
            f"{result['train_seconds']:.1f} s of training ({result['precision']})")
    if "valid_loss" in result:
        line += f"; validation {_validation(result)}"
    return line


def say(line: str) -> None:
    """Print ``line`` on stdout, above any progress bar shown."""
    from tqdm.auto import tqdm
    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()
