"""The generated blocks of ``README.md`` and ``benchmarks/README.md``: what stands between
``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` is a table of :mod:`.tables`,
rendered from the records, never typed.

    python -m transformer.measuring.blocks            # rewrite the generated blocks
    python -m transformer.measuring.blocks --check    # exit 1 if a block differs from the records

(``tests/test_results.py`` runs the check.)
"""
from __future__ import annotations

import re
import sys

from . import tables
from .records import REPO
from .registry import GROUPS

# The generated blocks of each file: block name -> the table (a function of the records).
BLOCKS = {"README.md": {"headline": tables.headline, "first-build": tables.first_build},
          "benchmarks/README.md": {f"benchmarks-{group}":
                                   (lambda group=group: tables.benchmarks(group))
                                   for group in GROUPS}}


def render(text: str, blocks: dict) -> str:
    """``text`` with each marked block replaced by its generated content."""
    for name, make in blocks.items():
        pattern = re.compile(rf"(<!-- results:{name} -->\n).*?(<!-- /results:{name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- results:{name} --> block")
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for rel, blocks in BLOCKS.items():
        path = REPO / rel
        old = path.read_text()
        new = render(old, blocks)
        if new != old:
            stale.append(rel)
            if not check:
                path.write_text(new)
    verb = "out of date" if check else "rewritten"
    for rel in stale:
        print(f"{rel}: generated blocks {verb}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
