"""``python -m transformer ...``: the command line, under jemalloc when it is installed."""
import warnings

from .host_memory import exec_with_jemalloc

exec_with_jemalloc()            # host memory of long CPU runs grows far less (host_memory.py)

from .cli import main  # noqa: E402

# Warnings about the user's input or machine: one line each, as the errors are (cli.main).
warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\n"
main()
