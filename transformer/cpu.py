"""What the package asks of this CPU: the x86 instructions that multiply bf16 matrices
natively (``lscpu`` and torch spell them alike).

The package's lowest module, importing none of it: the trainer's choice of precision
(:mod:`transformer.training.precision`) and a record's provenance
(:mod:`transformer.measuring.provenance`, which names them in the CPU's description) both
read it, and neither imports the other.
"""
from __future__ import annotations

BF16_INSTRUCTIONS = ("avx512_bf16", "amx_bf16")
