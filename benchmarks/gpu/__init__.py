"""The GPU path: ``check.sh``, ``train.sh`` and ``table3.sh`` (``bash benchmarks/gpu/NAME.sh
--help``) and the Python steps they call (``python -m benchmarks.gpu.NAME``)."""
