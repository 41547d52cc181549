"""What each update of a run trained on, rank by rank (tests/test_ddp_accounting.py).

``python tests/ddp_probe.py CONFIG TOKENIZER OUT`` (one process) or the same under
``torchrun --nproc_per_node N`` trains the run of ``CONFIG`` (a TrainConfig as JSON) with
the vocabulary ``TOKENIZER`` through :meth:`Trainer.from_config` and :meth:`Trainer.fit`,
as ``python -m transformer train`` does, and writes ``OUT/rank{R}.json``: for every update
the example indices and target tokens of each micro-batch this rank trained on, the
update's token count and loss, the squared norm of the gradient the optimizer stepped
with; and ``OUT/model{R}.pt``, the weights at the end. Only recording is added: the
batches' indices (a tag on each :class:`~transformer.batching.Batch`) and a hook before
each optimizer step; and ``PROBE_HEAD_START=S`` starts rank 1's clock of training time at
S seconds (a rank whose clock runs ahead, for ``--time-limit-min``).
"""
import json
import os
import sys
from pathlib import Path

import torch

from transformer.tokenizer import Tokenizer
from transformer.training.config import TrainConfig
from transformer.training.loop import Trainer


def main(config: str, tokenizer: str, out: str) -> None:
    cfg = TrainConfig(**json.loads(Path(config).read_text()))
    trainer = Trainer.from_config(cfg, Tokenizer.load(tokenizer))
    updates, grads = [], []

    collate = trainer.train_iter.collate

    def tagged(indices):
        batch = collate(indices)
        batch.indices = [int(i) for i in indices]
        return batch

    train_update = trainer.train_update

    def recorded(micro_batches, n_tokens_global):
        loss = train_update(micro_batches, n_tokens_global)
        updates.append({"batches": [b.indices for b in micro_batches],
                        "tokens": [b.n_tgt_tokens for b in micro_batches],
                        "n_tokens_global": n_tokens_global, "loss": loss,
                        "grad_sq": grads.pop()})
        return loss

    def before_step(optimizer, args, kwargs):
        grads.append(sum(float(p.grad.double().pow(2).sum())
                         for g in optimizer.param_groups for p in g["params"]
                         if p.grad is not None))

    trainer.train_iter.collate = tagged
    trainer.train_update = recorded
    trainer.optimizer.register_step_pre_hook(before_step)
    epochs = [len(trainer.train_iter.batches(e)) for e in range(cfg.max_epochs or 1)]
    if trainer.dist.rank == 1:       # its clock ahead of rank 0's (PROBE_HEAD_START seconds)
        trainer.train_seconds += float(os.environ.get("PROBE_HEAD_START", "0"))
    result = trainer.fit()
    rank = trainer.dist.rank
    Path(out, f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "world": trainer.dist.world, "accum": trainer.accum,
        "epoch_batches": epochs, "step": result["step"], "updates": updates}))
    torch.save(trainer.model.state_dict(), Path(out, f"model{rank}.pt"))


if __name__ == "__main__":
    main(*sys.argv[1:])
