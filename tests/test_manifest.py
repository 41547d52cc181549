"""The export's manifest (transformer/tools/manifest.py) without an export: a folder of
stand-in files, its manifest written, read back and refused in each way it can be wrong,
each figure worked out here (sizes, SHA-256 by hashlib, the page's three files)."""
import hashlib
import json

import pytest

from transformer.tools.manifest import (FILES, FORMAT, ExportError, page_files, part,
                                        read_manifest, write_manifest)


@pytest.fixture
def folder(tmp_path):
    """One file per part, each of its own size and bytes."""
    for size, (name_of_part, name) in enumerate(FILES.items(), start=3):
        (tmp_path / name).write_bytes(name_of_part.encode() * size)
    return tmp_path


def test_the_manifest_lists_each_file_its_part_size_checksum_and_page(folder):
    written = write_manifest(folder, {"config": {"d_model": 8}, "note": "Übersetzung"})
    text = (folder / "manifest.json").read_text(encoding="utf-8")
    assert json.loads(text) == written and written["format"] == FORMAT == 2
    assert "Übersetzung" in text and ", " not in text and '": ' not in text    # compact, UTF-8
    assert written["config"] == {"d_model": 8}
    files = {"encoder.onnx": ("encoder", 3), "decoder.onnx": ("decoder", 4),
             "weights.bin": ("weights", 5), "spm.model": ("tokenizer", 6)}
    assert set(written["files"]) == set(files)
    for name, (of_part, size) in files.items():
        data = of_part.encode() * size
        assert written["files"][name] == {"part": of_part, "bytes": len(data),
                                          "sha256": hashlib.sha256(data).hexdigest(),
                                          "page": of_part != "tokenizer"}, name
    assert list(page_files(written)) == ["encoder.onnx", "decoder.onnx", "weights.bin"]
    assert [part(written, p) for p in ("encoder", "decoder", "weights", "tokenizer")] == [
        "encoder.onnx", "decoder.onnx", "weights.bin", "spm.model"]
    assert read_manifest(folder) == written


def test_a_manifest_of_another_format_or_none_at_all_is_named(folder):
    with pytest.raises(ExportError, match=r"manifest.json cannot be read: "):
        read_manifest(folder)
    write_manifest(folder, {"config": {}})
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format": 1}))
    with pytest.raises(ExportError, match=r"has format 1, this package reads format 2: "):
        read_manifest(folder)
    (folder / "manifest.json").write_text(json.dumps({**manifest, "files": ["a"]}))
    with pytest.raises(ExportError, match=r"lacks its 'files' object \(it holds a list\)"):
        read_manifest(folder)
    (folder / "manifest.json").write_text(json.dumps({"format": 2, "files": {}}))
    with pytest.raises(ExportError) as caught:
        read_manifest(folder)
    assert str(caught.value) == (f"{folder / 'manifest.json'} lacks its 'config' object: "
                                 f"export the model again")


@pytest.mark.parametrize("damage", ["missing", "longer", "shorter"])
def test_a_listed_file_missing_or_of_another_size_is_refused(folder, damage):
    write_manifest(folder, {"config": {}})
    weights = folder / FILES["weights"]
    if damage == "missing":
        weights.unlink()
    else:
        weights.write_bytes(b"w" * (36 if damage == "longer" else 34))   # listed: 7 · 5 bytes
    with pytest.raises(ExportError, match=f"{weights} does not match manifest.json's checksum"):
        read_manifest(folder)
    if damage != "missing":
        assert read_manifest(folder, check=False)["files"][weights.name]["bytes"] == 7 * 5
