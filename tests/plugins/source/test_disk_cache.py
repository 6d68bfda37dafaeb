"""The generated modules on disk: where they go, what a key covers, and that a cache that cannot
be used (unwritable, a file in its place, corrupt entries) is a miss, never an error or old text."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from adcore_source import disk_cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(disk_cache.ENV, str(directory))
    return directory


def test_the_environment_variable_names_the_directory_and_it_is_made(cache: Path) -> None:
    assert disk_cache.cache_dir() == cache
    assert cache.is_dir()


def test_without_the_variable_the_user_cache_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert disk_cache.default_dir() == tmp_path / "adcore-source"
    assert disk_cache.default_dir().name in ("adcore-source", "Cache")


def test_a_stored_module_loads_back(cache: Path) -> None:
    path = disk_cache.store("f_reverse", "abc", "x = 1\n", {"entry": ["f_fwd"]})
    assert path == cache / "f_reverse_abc.py"
    assert path.read_text() == "x = 1\n"
    loaded = disk_cache.load("f_reverse", "abc")
    assert loaded is not None
    assert loaded[0] == path and loaded[1] == "x = 1\n" and loaded[2]["entry"] == ["f_fwd"]
    assert disk_cache.load("f_reverse", "abd") is None  # another key: a miss


def test_storing_the_same_text_again_leaves_the_file_alone(cache: Path) -> None:
    """numba's cache of a compiled module is keyed by its file's modification time."""
    path = disk_cache.store("f_reverse", "k", "x = 1\n", {})
    os.utime(path, (1_000_000, 1_000_000))
    disk_cache.store("f_reverse", "k", "x = 1\n", {})
    assert path.stat().st_mtime == 1_000_000


def test_keys_differ_with_every_part_and_with_the_generator() -> None:
    a = disk_cache.key_of(["reverse", "def f(x):\n    return x\n"])
    assert a == disk_cache.key_of(["reverse", "def f(x):\n    return x\n"])
    assert a != disk_cache.key_of(["reverse", "def f(x):\n    return 2 * x\n"])
    assert a != disk_cache.key_of(["forward", "def f(x):\n    return x\n"])
    assert a != disk_cache.key_of(["reverse", "def f(x):\n", "    return x\n"])  # the parts' bounds count
    # adcore-source's own modules are part of every key: an emitter fixed never reads old text
    assert len(disk_cache.generator_digest()) == 64


@pytest.mark.parametrize(
    "damage", ["text edited", "meta not json", "meta missing", "meta not a dict", "text gone"]
)
def test_a_corrupt_entry_is_a_miss(cache: Path, damage: str) -> None:
    path = disk_cache.store("f_forward", "k", "def f_jvp(x, dx):\n    return x, dx\n", {"entry": ["f_jvp"]})
    meta = path.with_suffix(".json")
    if damage == "text edited":
        path.write_text("def f_jvp(x, dx):\n    return x, 2 * dx\n")
    elif damage == "meta not json":
        meta.write_text("{not json")
    elif damage == "meta missing":
        meta.unlink()
    elif damage == "meta not a dict":
        meta.write_text("[1, 2]")
    else:
        path.unlink()
    assert disk_cache.load("f_forward", "k") is None
    # and storing again repairs it
    disk_cache.store("f_forward", "k", "def f_jvp(x, dx):\n    return x, dx\n", {"entry": ["f_jvp"]})
    assert disk_cache.load("f_forward", "k") is not None


def test_a_file_where_the_directory_should_be_is_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    monkeypatch.setenv(disk_cache.ENV, str(blocker / "cache"))
    assert disk_cache.cache_dir() is None
    assert disk_cache.store("f_reverse", "k", "x = 1\n", {}) is None
    assert disk_cache.load("f_reverse", "k") is None


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_directory_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o500)
    monkeypatch.setenv(disk_cache.ENV, str(directory))
    try:
        assert disk_cache.store("f_reverse", "k", "x = 1\n", {}) is None
    finally:
        directory.chmod(0o700)


def test_a_write_that_fails_is_no_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(root ignores permissions: a failing write stands in for a read-only file system)"""

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(disk_cache.tempfile, "mkstemp", failing)
    assert disk_cache.store("f_reverse", "k", "x = 1\n", {}) is None
    assert not list(cache.glob("*.py"))


def test_stored_code_is_read_back_only_for_its_own_text_and_file(cache: Path) -> None:
    text = "def f(x):\n    return x + 1\n"
    path = disk_cache.store("f_reverse", "abc", text, {"entry": ["f"]})
    code = compile(text, str(path), "exec")
    disk_cache.store_code(path, text, code)
    assert disk_cache.load_code(path, text) == code
    assert disk_cache.load_code(path, text.replace("1", "2")) is None  # another text: compiled anew
    assert disk_cache.load_code(cache / "elsewhere" / path.name, text) is None  # another file name


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing"])
def test_damaged_stored_code_is_a_miss(cache: Path, damage: str) -> None:
    text = "x = 1\n"
    path = disk_cache.store("f_reverse", "abc", text, {"entry": ["f"]})
    disk_cache.store_code(path, text, compile(text, str(path), "exec"))
    stored = path.with_suffix(".code")
    if damage == "truncated":
        stored.write_bytes(stored.read_bytes()[:-3])
    elif damage == "garbage":
        stored.write_bytes(stored.read_bytes()[:36] + b"\xff" * 40)
    else:
        stored.unlink()
    assert disk_cache.load_code(path, text) is None
