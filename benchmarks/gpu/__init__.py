"""The GPU path: ``check.sh``, ``train.sh`` and ``table3.sh`` (``bash
benchmarks/gpu/<name>.sh --help``) and the Python steps they call (``python -m
benchmarks.gpu.<name>``)."""
