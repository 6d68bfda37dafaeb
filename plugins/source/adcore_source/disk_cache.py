"""Generated modules on disk: the text of each (function, mode, active arguments) under
ADCORE_SOURCE_CACHE, or the user's cache directory (as numba's cache for the kernels is).

A module is `<stem>_<key>.py` beside `<stem>_<key>.json` (what loading it needs besides its text)
and `<stem>_<key>.code` (its text compiled, used only for the same text, file name and Python);
the key hashes everything the text was generated from (see generate.py) and adcore-source's own
code, so a new version or an edited function never reads an old module. A directory that cannot
be made or written, or a file that is corrupt, is a miss: the module is then kept in memory only.
Being a real file is what lets a traceback show the generated line and numba cache its compile.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import marshal
import os
import sys
import tempfile
import types
from importlib import metadata
from pathlib import Path
from typing import Any

ENV = "ADCORE_SOURCE_CACHE"


def default_dir() -> Path:
    """The user's cache directory for adcore-source, by the platform's convention."""
    if sys.platform == "win32":
        return (
            Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
            / "adcore-source"
            / "Cache"
        )
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "adcore-source"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adcore-source"


def cache_dir() -> Path | None:
    """The directory modules are written to, made if missing; None when it cannot be written."""
    path = Path(os.environ.get(ENV) or default_dir())
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            return None
    except OSError:
        return None
    return path


@functools.cache
def generator_digest() -> str:
    """What the text depends on besides the user's code: adcore-source's own modules (all of them:
    an emitter's fix must not read old text) and adcore's version and derivative table."""
    import adcore
    import adcore.extend.elementwise_partials as partials

    h = hashlib.sha256()
    try:
        h.update(metadata.version("adcore-source").encode())
    except metadata.PackageNotFoundError:
        pass
    h.update(str(adcore.__version__).encode())
    for path in sorted(Path(__file__).parent.glob("*.py")) + [Path(partials.__file__)]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def key_of(parts: list[str]) -> str:
    """The cache key of a module generated from `parts` (sources and descriptions) by this adcore-source."""
    h = hashlib.sha256(generator_digest().encode())
    for part in parts:
        h.update(b"\x00")
        h.update(part.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:24]


def load(stem: str, key: str) -> tuple[Path, str, dict[str, Any]] | None:
    """The stored module's path, text and meta data, or None (a miss, an unreadable or corrupt file)."""
    directory = cache_dir()
    if directory is None:
        return None
    path = directory / f"{stem}_{key}.py"
    try:
        text = path.read_text(encoding="utf-8")
        meta = json.loads((directory / f"{stem}_{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("text_sha256") != _sha(text):
        return None  # torn or edited by hand: generate again (store replaces both files)
    return path, text, meta


def store(stem: str, key: str, text: str, meta: dict[str, Any]) -> Path | None:
    """Write the module and its meta data (each atomically); its path, or None if it cannot be written."""
    directory = cache_dir()
    if directory is None:
        return None
    path = directory / f"{stem}_{key}.py"
    try:
        _write_atomically(path, text)
        _write_atomically(directory / f"{stem}_{key}.json", json.dumps({**meta, "text_sha256": _sha(text)}))
    except (OSError, ValueError):
        return None
    return path


def load_code(path: Path, text: str) -> types.CodeType | None:
    """The code object stored for the module at path, if it was compiled from exactly `text` under
    that file name by this Python (its bytecode's magic number); else None."""
    try:
        data = path.with_suffix(".code").read_bytes()
    except OSError:
        return None
    header = _code_header(path, text)
    if not data.startswith(header):
        return None
    try:
        code = marshal.loads(data[len(header) :])
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def store_code(path: Path, text: str, code: types.CodeType) -> None:
    """Keep `code` (text compiled) beside the module; nothing if it cannot be written."""
    try:
        _write_atomically(path.with_suffix(".code"), _code_header(path, text) + marshal.dumps(code))
    except (OSError, ValueError):
        pass


def _code_header(path: Path, text: str) -> bytes:
    """What the stored code was compiled from: the interpreter's bytecode version, the text, its file name."""
    return (
        importlib.util.MAGIC_NUMBER
        + hashlib.sha256(f"{path}\x00{text}".encode("utf-8", "surrogatepass")).digest()
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _write_atomically(path: Path, data: str | bytes) -> None:
    """Another process reading the file sees the old one or the new one, never half of it."""
    if isinstance(data, str) and path.exists() and path.read_text(encoding="utf-8") == data:
        return  # the same: leave its modification time (numba's cache of it stays valid)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp_", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") if isinstance(data, bytes) else os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
