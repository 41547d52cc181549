"""pytest settings for the chapters run under nbval (`make test`, `make test-book`).

nbval starts one kernel per notebook and kernels inherit this process's environment:
* torch in each kernel runs on one thread (small shared CPUs thrash with more; see the
  Makefile's BOOK_ENV);
* the corpora are fetched on first use into an empty data root, from local hosts that
  stand in for the corpora's own (tests/corpus_host.py), as on a reader's machine.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from corpus_host import rehearse_a_fresh_machine  # noqa: E402

rehearse_a_fresh_machine()
