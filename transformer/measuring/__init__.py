"""The measuring system: what the benchmarks, the book and the tests share to time the
package, keep what it measured and show it.

* :mod:`.timing`: the timers (``Stopwatch``, ``median_seconds``, ``best_seconds``; every
  one waits for a GPU's queued work);
* :mod:`.provenance`: where a record was measured (commit, command, CPU, torch, date),
  which every command that measures writes into its record (``write_record``);
* :mod:`.records`: the result records in ``book/results/``, loaded and checked;
* :mod:`.registry`: the benchmark scripts under ``benchmarks/``, one row each
  (``BENCHMARKS``), and where each script was before (``MOVED``);
* :mod:`.tables`: the records rendered as the docs' tables, never typed;
* :mod:`.blocks`: the generated blocks of ``README.md`` and ``benchmarks/README.md``,
  ``python -m transformer.measuring.blocks`` (``--check``);
* :mod:`.imports`: the package's import graph, read from its source (the run cache's key,
  :mod:`transformer.training.cache`, and ``tests/test_imports.py``).

It sits above the model's modules and below training: it imports none of
:mod:`transformer.training`, which imports it. The book's helpers import it; it imports
none of them (``tests/test_imports.py`` holds both).
"""
