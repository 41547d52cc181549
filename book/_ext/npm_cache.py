"""Files of an npm package, fetched once with ``npm pack`` into ``.cache/`` (git-ignored).

Shared by the book's extensions (MathJax in ``book_figures``, onnxruntime-web in
``book_translator``, TensorFlow.js in ``book_training``): nothing the site serves comes from
a CDN. Each extension copies a package's files into its folder staged by
:func:`page_code.stage`, whence Sphinx copies them into ``_static``.
"""
from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def npm_package(srcdir: Path, name: str, version: str, keep, ready) -> Path | None:
    """The unpacked ``package`` folder of ``name@version`` under ``.cache/<name>/<version>``.

    ``keep(member_name)`` chooses the tarball's files to unpack; ``ready(folder)`` says
    whether a cached folder has what is needed. ``None`` without npm or when it fails
    (with a warning naming the package)."""
    cache = srcdir / ".cache" / name / version
    package = cache / "package"
    if ready(package):
        return package
    npm = shutil.which("npm")
    if npm is None:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run([npm, "pack", f"{name}@{version}", "--silent", "--pack-destination",
                            tmp], check=True, capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as err:
            logger.warning(f"npm pack {name}@{version} failed: {err}")
            return None
        tgz = next(Path(tmp).glob("*.tgz"))
        with tarfile.open(tgz) as tar:
            tar.extractall(cache, members=[m for m in tar.getmembers() if keep(m.name)],
                           filter="data")
    return package if ready(package) else None
