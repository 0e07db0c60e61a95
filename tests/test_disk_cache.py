"""The disk cache proves its entries or recompiles them: swapped, empty, truncated,
foreign, corrupt and directory entries are misses with a warning, never a wrong
kernel, a crash or an uncaught error; writes are atomic."""

from __future__ import annotations

import json

import pytest

from mlirc.backends import disk_cache
from mlirc.backends.gpu.compiler import TritonKernel, ttir_file
from mlirc.config import config


def test_text_entry_round_trip(tmp_path):
    path = tmp_path / "k.ttir"
    assert disk_cache.text_file(path, "module A") == path
    assert path.read_text() == "module A"
    assert disk_cache.text_file(path, "module A") == path  # a hit: no warning
    assert [p.name for p in tmp_path.iterdir()] == ["k.ttir"]  # no temporary file left


@pytest.mark.parametrize("bad", ["", "module A trunc", "module B"])
def test_text_entry_with_other_text_is_rewritten(tmp_path, bad):
    path = tmp_path / "k.ttir"
    path.write_text(bad)
    with pytest.warns(UserWarning, match="holds other text"):
        assert disk_cache.text_file(path, "module A") == path
    assert path.read_text() == "module A"


def test_text_entry_that_is_a_directory(tmp_path):
    path = tmp_path / "k.ttir"
    (path / "inner").mkdir(parents=True)
    with pytest.warns(UserWarning, match="cannot be read"):
        got = disk_cache.text_file(path, "module A")
    assert got != path and got.read_text() == "module A"


def test_unusable_cache_folder(tmp_path):
    """The cache folder is a file (tests run as root, so permissions would not stop a write)."""
    folder = tmp_path / "not-a-folder"
    folder.write_text("")
    got = disk_cache.text_file(folder / "k.ttir", "module A")
    assert got.read_text() == "module A" and not str(got).startswith(str(folder))


def test_swapped_ttir_files_compile_as_themselves(tmp_path, monkeypatch):
    """Two kernels' cache files swapped: each still gets its own text."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    a, b = TritonKernel("k", "text of a", 4), TritonKernel("k", "text of b", 4)
    path_a, path_b = ttir_file(a), ttir_file(b)
    path_a.write_text("text of b")
    path_b.write_text("")
    with pytest.warns(UserWarning):
        assert ttir_file(a).read_text() == "text of a"
    with pytest.warns(UserWarning):
        assert ttir_file(b).read_text() == "text of b"


def test_json_entry_round_trip(tmp_path):
    path = tmp_path / "choice.json"
    disk_cache.write_json(path, "key1", {"variant": "cublas", "ms": {"cublas": 1.5}})
    assert disk_cache.read_json(path, "key1") == {"variant": "cublas", "ms": {"cublas": 1.5}}
    assert disk_cache.read_json(tmp_path / "missing.json", "key1") is None


@pytest.mark.parametrize(
    "corrupt,why",
    [
        (lambda text: text[: len(text) // 2], "not JSON"),  # truncated
        (lambda text: "", "not JSON"),
        (lambda text: "[1, 2]", "another key"),
        (lambda text: text.replace("key1", "key2"), "another key"),  # another region's entry
        (lambda text: text.replace("cublas", "tt.dot"), "hash"),  # edited value
    ],
)
def test_bad_json_entries_are_misses(tmp_path, corrupt, why):
    path = tmp_path / "choice.json"
    disk_cache.write_json(path, "key1", {"variant": "cublas"})
    path.write_text(corrupt(path.read_text()))
    with pytest.warns(UserWarning, match=why):
        assert disk_cache.read_json(path, "key1") is None


def test_json_entry_that_is_a_directory(tmp_path):
    (tmp_path / "choice.json").mkdir()
    with pytest.warns(UserWarning):
        assert disk_cache.read_json(tmp_path / "choice.json", "key1") is None
    disk_cache.write_json(tmp_path / "choice.json", "key1", {"variant": "x"})  # logged, not raised


def test_entries_are_json_with_key_and_hash(tmp_path):
    path = tmp_path / "choice.json"
    disk_cache.write_json(path, "key1", {"variant": "cublas"})
    assert set(json.loads(path.read_text())) == {"key", "sha256", "value"}
