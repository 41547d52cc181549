"""``python -m transformer ...``: the command line, the same entry point as the
``transformer`` console script (:func:`transformer.tools.cli.run`)."""
from .tools.cli import run

run()
