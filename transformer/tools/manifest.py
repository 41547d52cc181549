"""The contract between an export and its readers: ``manifest.json``.

The export (:mod:`transformer.tools.export`) writes it; the ONNX-runtime adapter
(:mod:`transformer.tools.onnx_model`), the book's Sphinx extension (which lists what the
page downloads), the page (``book/_ext/static/translator/manifest.js``) and the tests read
it. It holds the format version, the model's configuration and special ids, the search the
page runs (``decoding``: a :class:`transformer.decoding.Search` as its ``to_dict`` writes
it, read back by :func:`search`; section 6.1's unless the export was given another), the
vocabulary's pieces and scores (the page's BPE encoder merges by them), and each file of
the export with its part, size, SHA-256 and whether the page downloads it. Nothing else
lists these files or this version.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..decoding import Search
from ..errors import InputError

FORMAT = 2
MANIFEST = "manifest.json"
# each file of an export by its part
FILES = {"encoder": "encoder.onnx", "decoder": "decoder.onnx", "weights": "weights.bin",
         "tokenizer": "spm.model"}
# what the page downloads besides the manifest (the BPE's pieces are in the manifest)
PAGE_PARTS = ("encoder", "decoder", "weights")


class ExportError(InputError):
    """An export cannot be written as asked, or its folder does not hold what its manifest
    says; the message names the problem."""


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_entries(folder: Path) -> dict:
    """``files`` of the manifest of the export in ``folder``: name -> part, size, SHA-256
    and whether the page downloads it."""
    return {name: {"part": part, "bytes": (folder / name).stat().st_size,
                   "sha256": sha256(folder / name), "page": part in PAGE_PARTS}
            for part, name in FILES.items()}


def write_manifest(folder: Path, body: dict) -> dict:
    """``body`` with the format and the files of ``folder``, written as its manifest
    (compact: the page downloads it)."""
    manifest = {"format": FORMAT, **body, "files": file_entries(folder)}
    (folder / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False,
                                              separators=(",", ":")), encoding="utf-8")
    return manifest


def read_manifest(folder: str | os.PathLike, check: bool = True) -> dict:
    """The manifest of the export in ``folder``; with ``check``, each file it lists is
    there with its size and SHA-256. Raises :class:`ExportError` naming what is wrong."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{folder / MANIFEST} cannot be read: {exc}") from None
    where = folder / MANIFEST
    if not isinstance(manifest, dict):
        raise ExportError(f"{where} holds a JSON {type(manifest).__name__}, not the object "
                          f"of an export's manifest: export the model again")
    if manifest.get("format") != FORMAT:
        raise ExportError(f"{where} has format {manifest.get('format')!r}, this "
                            f"package reads format {FORMAT}: export the model again")
    for key, kind in (("files", dict), ("config", dict)):
        if not isinstance(manifest.get(key), kind):
            raise ExportError(f"{where} lacks its {key!r} object"
                              + (f" (it holds a {type(manifest[key]).__name__})"
                                 if key in manifest else "") + ": export the model again")
    for name, entry in manifest["files"].items():
        if not isinstance(entry, dict) or not all(
                k in entry for k in ("part", "bytes", "sha256", "page")):
            raise ExportError(f"{where}: the entry of file {name!r} lacks its part, bytes, "
                              f"sha256 or page: export the model again")
    for name, entry in manifest["files"].items() if check else ():
        path = folder / name
        if not path.is_file() or path.stat().st_size != entry["bytes"] or sha256(path) != entry["sha256"]:
            raise ExportError(f"{path} does not match manifest.json's checksum")
    return manifest


def search(manifest: dict) -> Search:
    """The search the page runs with the exported model (the manifest's ``decoding``);
    :class:`ExportError` names what is wrong with it."""
    try:
        return Search.from_dict(manifest["decoding"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportError(f"manifest.json's decoding settings are not a search ({exc}): "
                          f"export the model again") from None


def part(manifest: dict, name: str) -> str:
    """The file of part ``name`` (``"encoder"``, ...) in ``manifest``."""
    return next(f for f, entry in manifest["files"].items() if entry["part"] == name)


def page_files(manifest: dict) -> dict:
    """The files the page downloads besides the manifest: name -> entry."""
    return {name: entry for name, entry in manifest["files"].items() if entry["page"]}
