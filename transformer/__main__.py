"""``python -m transformer ...``: the command line, the same entry point as the
``transformer`` console script (:func:`transformer.cli.run`)."""
from .cli import run

run()
