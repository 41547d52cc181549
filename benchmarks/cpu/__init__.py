"""The model and its training on a CPU: ``python -m benchmarks.cpu.NAME --help``."""
