"""How well the tests hold the code: ``python -m benchmarks.quality.NAME --help``."""
