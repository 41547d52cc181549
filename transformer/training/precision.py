"""Mixed precision: which one a run trains in, on which hardware (sections 5.2-5.3 train
in fp32 on GPUs; bf16 and fp16 are this project's speed-ups).

:func:`resolve_precision` decides ``TrainConfig.precision="auto"`` for a device, reading
the CPU's instructions (:func:`cpu_flags`, :func:`cpu_has_native_bf16`) or the GPU's
compute capability (:func:`cuda_has_native_bf16`); :func:`autocast` is the forward pass's
context in that precision. fp16 trains with loss scaling (``torch.amp.GradScaler``, in
the trainer), on a GPU or, for study and tests, on a CPU.
"""
from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import torch

from ..cpu import BF16_INSTRUCTIONS

CPUINFO = Path("/proc/cpuinfo")


def cpu_flags() -> set[str] | None:
    """The instruction-set flags of this CPU, lower case (``avx2``, ``avx512_bf16``, ...):
    torch's own view (``torch.cpu.get_capabilities``, whose other entries, such as cache
    sizes, are not flags), or on a torch too old to say the ``flags`` line of
    :data:`CPUINFO`; None when neither can be read."""
    if hasattr(torch.cpu, "get_capabilities"):
        return {name for name, present in torch.cpu.get_capabilities().items()
                if present is True}
    try:
        text = CPUINFO.read_text()
    except OSError:
        return None
    return set(next((line.split(":", 1)[1] for line in text.splitlines()
                     if line.startswith("flags")), "").split())


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 matrix instructions (x86's AVX512-BF16 or AMX-BF16,
    :data:`~transformer.cpu.BF16_INSTRUCTIONS`).

    Without them PyTorch multiplies bf16 matrices on a slow generic path, far slower than
    fp32 (the record ``book/results/bf16_without_instructions.json``, on the Results page:
    a matrix product and an update of ``make train-tiny``, in bf16 and in fp32). When the
    flags cannot be read at all (:func:`cpu_flags` is None) the answer is yes: a CPU that
    cannot be asked is not taken for a slow one.
    """
    flags = cpu_flags()
    return True if flags is None else bool(set(BF16_INSTRUCTIONS) & flags)


def cuda_has_native_bf16(device: torch.device) -> bool:
    """Whether the GPU ``device`` multiplies bf16 on its tensor cores: compute capability
    8.0 (Ampere) and up. A T4 (7.5) or a V100 (7.0) has none; there
    ``torch.cuda.is_bf16_supported()`` still answers True, since by default it counts
    emulation, which is slower than fp16."""
    return torch.cuda.get_device_capability(device) >= (8, 0)


_warned_slow_bf16 = False


def resolve_precision(precision: str, device: torch.device) -> str:
    """``precision`` with ``"auto"`` decided for ``device``: on a GPU bf16 where it has
    native bf16 (:func:`cuda_has_native_bf16`), else fp16 with loss scaling (Colab's T4);
    on a CPU bf16 where it has bf16 instructions (:func:`cpu_has_native_bf16`), else fp32.
    An explicit bf16 on a CPU without bf16 instructions runs, with a warning (once a
    process); an explicit fp16 runs anywhere."""
    global _warned_slow_bf16
    if precision != "auto":
        if precision == "bf16" and device.type == "cpu" and not _warned_slow_bf16 \
                and not cpu_has_native_bf16():
            _warned_slow_bf16 = True
            warnings.warn("--precision bf16 on a CPU without AVX512-BF16 or AMX: bf16 matrix "
                          "products run on a slow generic path here, many times slower than "
                          "fp32; --precision auto picks fp32 on this CPU",
                          RuntimeWarning)
        return precision
    if device.type == "cuda":
        return "bf16" if cuda_has_native_bf16(device) else "fp16"
    return "bf16" if cpu_has_native_bf16() else "fp32"


@contextlib.contextmanager
def autocast(device: torch.device, precision: str):
    """Mixed precision for the forward pass (master weights stay fp32), and on a CPU
    PyTorch's "math" attention kernel.

    At sentence lengths the math kernel's forward and backward are faster on a CPU than
    the fused ("flash") CPU kernel, in bf16 and in fp32 (the fused kernel wins only on
    much longer sentences), and so is a whole update of ``make train-tiny``: records
    ``train_throughput.json`` and ``attention_kernel.json`` on the Results page. So it is
    chosen in every precision.
    """
    with contextlib.ExitStack() as stack:
        if precision != "fp32":
            dtype = torch.bfloat16 if precision == "bf16" else torch.float16
            stack.enter_context(torch.autocast(device.type, dtype=dtype))
        if device.type == "cpu":
            from torch.nn.attention import SDPBackend, sdpa_kernel
            stack.enter_context(sdpa_kernel(SDPBackend.MATH))
        yield
