"""pytest settings for the chapters run under nbval (`make test`, `make test-book`).

nbval starts one kernel per notebook and kernels inherit this process's environment:
* torch in each kernel runs on one thread (small shared CPUs thrash with more; see the
  Makefile's BOOK_ENV);
* the corpora come from $TRANSFORMER_DATA, else from ../shared/data beside the repository
  when it exists (as in tests/conftest.py), so plain `pytest book` works offline too.
"""
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
_shared = Path(__file__).resolve().parents[2] / "shared" / "data"
if "TRANSFORMER_DATA" not in os.environ and _shared.is_dir():
    os.environ["TRANSFORMER_DATA"] = str(_shared)
