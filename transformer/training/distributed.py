"""One process, or one of several under ``torchrun`` (DistributedDataParallel).

``torchrun --nproc_per_node N -m transformer train ...`` starts N processes with
``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK`` and the rendezvous (``MASTER_ADDR``,
``MASTER_PORT``) set; each takes its local GPU (NCCL), or the CPU (gloo) when there is
none. Rank 0 writes the run folder; the others read it. Under a launcher every process
joins the process group and trains through DistributedDataParallel, ``N = 1`` included,
so that one GPU runs the multi-GPU path (NCCL) as it is; a plain ``python`` process
trains alone.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from ..inference import resolve_device


# What torchrun (and any env:// launcher) sets for init_process_group to meet the others
LAUNCHER_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


def launched() -> bool:
    """Whether a launcher (torchrun) started this process: the env:// rendezvous is set."""
    return all(name in os.environ for name in LAUNCHER_VARIABLES)


class Distributed:
    """What this process is under torchrun (or a single process): rank, world, device,
    and ``backend`` (``"nccl"``, ``"gloo"``, or ``None`` for a process alone)."""

    def __init__(self, device_name: str = "auto"):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.backend = None
        if self.world > 1 or launched():
            local = int(os.environ.get("LOCAL_RANK", "0"))
            if torch.cuda.is_available() and device_name in ("auto", "cuda"):
                torch.cuda.set_device(local)
                self.device = torch.device("cuda", local)
                backend = "nccl"
            else:
                self.device = torch.device("cpu")
                backend = "gloo"
            if not dist.is_initialized():
                dist.init_process_group(backend)
            self.backend = dist.get_backend()
        else:
            self.device = resolve_device(device_name)

    @classmethod
    def single(cls, device: str | torch.device = "cpu") -> "Distributed":
        """One process on ``device``, whatever the environment says."""
        self = cls.__new__(cls)
        self.world, self.rank, self.device = 1, 0, resolve_device(device)
        self.backend = None
        return self

    @property
    def distributed(self) -> bool:
        """Whether this process is in a process group (under torchrun, one process too)."""
        return self.backend is not None

    @property
    def main(self) -> bool:
        """Whether this is rank 0, the process that writes files and prints."""
        return self.rank == 0

    def sum(self, value: float) -> float:
        """``value`` summed over all processes."""
        if not self.distributed:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.item()

    def barrier(self):
        """Wait until every process gets here."""
        if self.distributed:
            dist.barrier()
