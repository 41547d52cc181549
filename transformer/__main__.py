"""``python -m transformer ...``: the command line, under jemalloc when it is installed."""
from .host_memory import exec_with_jemalloc

exec_with_jemalloc()            # host memory of long CPU runs grows far less (host_memory.py)

from .cli import main  # noqa: E402

main()
