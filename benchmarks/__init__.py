"""The project's measurements, one script each, grouped by what they measure:

* ``benchmarks.cpu``: the model and its training on a CPU (throughput, precision, kernels,
  memory, decoding, data preparation);
* ``benchmarks.book``: the book and its page (the build, the book's model, the model in
  the reader's browser);
* ``benchmarks.gpu``: the GPU path (shell scripts with a ``--dry-run`` the tests run on a
  CPU, and the Python steps they call).

Run each from the repository root as a module, e.g. ``python -m
benchmarks.cpu.train_throughput --help``; ``--record PATH`` writes its result record
(:mod:`benchmarks.record`). Timing goes through the package's timing harness
(:mod:`transformer.measuring.timing`), and each script has its row in
``transformer.measuring.registry.BENCHMARKS``, which makes its row in
``benchmarks/README.md``. None imports the book's helpers (``book/transformer_book/``); a
page's own run that one measures is the package's, as the capstone's
(``transformer.your_turn.capstone_run``) (``tests/test_imports.py``).
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]     # the repository root
