"""Batches through shared memory, and a list of Python objects workers read without copying it.

A worker writes every array of a collated batch into one POSIX shared-memory block (the names
under /dev/shm start with the pool's prefix) and sends only a small descriptor: the batch's
structure with each array replaced by its (offset, dtype, shape) in the block. The main process
maps the block, removes its name at once, and wraps the arrays as `np.ndarray` views of the
mapping: no copy. The mapping lives exactly as long as some array of the batch (or a view of
one) does; when the last is released the memory goes back to the system. A block is never
reused, so a batch kept from step 3 still holds step 3's numbers at step 10.

Names of blocks that never reached the main process (a worker killed after creating one, an
epoch abandoned with batches in flight) are removed by `unlink_leftovers` when the pool shuts
down, and by a worker whose main process died.

`SerializedList` answers torch's copy-on-read growth (pytorch#13246): a forked worker that
reads a Python object writes its reference count, which copies the object's page into the
worker; over an epoch the worker ends up with a private copy of the whole list. Pickled once
into one NumPy byte buffer, the items are bytes that reads never write: workers share them.
"""

from __future__ import annotations

import errno
import io
import mmap
import os
import pickle
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

try:  # POSIX shared memory, as multiprocessing.shared_memory uses it (without its resource
    # tracker, which would unlink a block a worker created when that worker exits)
    import _posixshmem
except ImportError:  # Windows: batches travel pickled through the pipe
    _posixshmem = None

__all__ = ["SerializedList", "dumps_sharing_arrays", "from_shared", "to_shared", "unlink", "unlink_leftovers"]

SHM_DIR = "/dev/shm"
_ALIGN = 64


class _Slot:
    """Where one array of a batch lies in the batch's block."""

    __slots__ = ("dtype", "offset", "shape")

    def __init__(self, offset: int, dtype: np.dtype, shape: tuple[int, ...]):
        self.offset, self.dtype, self.shape = offset, dtype, shape

    def __getstate__(self):
        return self.offset, self.dtype, self.shape

    def __setstate__(self, state):
        self.offset, self.dtype, self.shape = state


def _shareable(x: Any) -> bool:
    return type(x) is np.ndarray and not x.dtype.hasobject and x.nbytes > 0


def _map(batch: Any, fn) -> Any:
    """batch with fn applied to each array, through tuples, lists, dicts and namedtuples."""
    if _shareable(batch) or isinstance(batch, _Slot):
        return fn(batch)
    kind = type(batch)
    if kind is tuple or kind is list:
        return kind(_map(x, fn) for x in batch)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return kind(*(_map(x, fn) for x in batch))
    if kind is dict:
        return {k: _map(v, fn) for k, v in batch.items()}
    return batch  # anything else travels pickled as it is


def to_shared(batch: Any, name: str) -> tuple[str | None, Any]:
    """(block name or None, descriptor): batch's arrays copied into a new block called name."""
    arrays: list[np.ndarray] = []
    size = 0

    def place(a: np.ndarray) -> _Slot:
        nonlocal size
        slot = _Slot(size, a.dtype, a.shape)
        arrays.append(a)
        size += -(-a.nbytes // _ALIGN) * _ALIGN
        return slot

    descriptor = _map(batch, place)
    if not arrays or _posixshmem is None:
        return None, batch
    fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, size)
        for a, slot in zip(arrays, _slots(descriptor)):
            _write(fd, np.ascontiguousarray(a).reshape(-1).view(np.uint8), slot.offset)
    except BaseException as error:
        unlink(name)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            raise OSError(
                errno.ENOSPC,
                f"no space left in shared memory ({SHM_DIR}) for a batch of {size} bytes: enlarge it "
                "(docker: --shm-size), or use smaller batches, fewer workers or a smaller prefetch_factor",
            ) from error
        raise
    finally:
        os.close(fd)
    return name, descriptor


def _write(fd: int, data: np.ndarray, offset: int) -> None:
    """data's bytes at offset: pwrite, twice as fast as writing through a fresh mapping (whose
    every page is a fault)."""
    view = memoryview(data)
    while view.nbytes:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _slots(descriptor: Any) -> list[_Slot]:
    found: list[_Slot] = []
    _map(descriptor, lambda s: found.append(s) or s)
    return found


def from_shared(name: str | None, descriptor: Any) -> Any:
    """The batch: views of block `name` (whose name is removed now: the mapping keeps it alive)."""
    if name is None:
        return descriptor
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
    try:
        _posixshmem.shm_unlink("/" + name)
        block = mmap.mmap(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    buffer = np.frombuffer(block, np.uint8)  # every view's base: the mapping dies with the last one

    def view(slot: _Slot) -> np.ndarray:
        nbytes = slot.dtype.itemsize * int(np.prod(slot.shape, dtype=np.int64))
        return buffer[slot.offset : slot.offset + nbytes].view(slot.dtype).reshape(slot.shape)

    return _map(descriptor, view)


def unlink(name: str | None) -> None:
    """Remove block `name` if it exists (a batch that will never be read)."""
    if name is None or _posixshmem is None:
        return
    try:
        _posixshmem.shm_unlink("/" + name)
    except FileNotFoundError:
        pass


def unlink_leftovers(prefix: str) -> list[str]:
    """Remove every block whose name starts with prefix; return their names."""
    try:
        names = [n for n in os.listdir(SHM_DIR) if n.startswith(prefix)]
    except OSError:  # no /dev/shm to list (macOS): blocks are removed as they are read
        return []
    for n in names:
        unlink(n)
    return names


SHARE_FROM = 1 << 20  # bytes: smaller arrays are pickled with the dataset as they are


class _SharingPickler(pickle.Pickler):
    """Pickles NumPy arrays of SHARE_FROM bytes or more as references to shared-memory blocks."""

    def __init__(self, file, prefix: str):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.prefix, self.names = prefix, []

    def reducer_override(self, obj):
        if not (_shareable(obj) and obj.nbytes >= SHARE_FROM) or _posixshmem is None:
            return NotImplemented
        name = f"{self.prefix}{len(self.names)}"
        self.names.append(name)
        to_shared(obj, name)
        return _attach, (name, obj.dtype, obj.shape)


def dumps_sharing_arrays(obj: Any, prefix: str) -> tuple[bytes, list[str]]:
    """(obj pickled, the blocks made): its large arrays copied once into shared memory, so that
    every process unpickling it maps the same block instead of receiving a copy. The blocks are
    named prefix0, prefix1, ...; whoever made them removes them (`unlink_leftovers(prefix)`)."""
    buffer = io.BytesIO()
    pickler = _SharingPickler(buffer, prefix)
    try:
        pickler.dump(obj)
    except BaseException:
        for name in pickler.names:
            unlink(name)
        raise
    return buffer.getvalue(), pickler.names


def _attach(name: str, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only view of shared block `name` (a write raises: other processes read it too)."""
    fd = _posixshmem.shm_open("/" + name, os.O_RDONLY, mode=0o600)
    try:
        block = mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(block, dtype, count).reshape(shape)


class SerializedList(Sequence):
    """A list of Python objects pickled once into one byte buffer; items[i] unpickles item i.

    For a dataset of many small Python objects read by forked workers: each read returns a new
    equal object (mutating it changes nothing stored), and the buffer is two NumPy arrays whose
    pages no read writes, so the workers share them instead of copying them page by page.
    """

    def __init__(self, items: Iterable[Any]):
        pickled = [pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL) for x in items]
        self._ends = np.cumsum([len(p) for p in pickled], dtype=np.int64)
        self._bytes = np.frombuffer(b"".join(pickled), np.uint8)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]  # negative indices, and IndexError as a list's
        start = int(self._ends[i - 1]) if i else 0
        return pickle.loads(memoryview(self._bytes)[start : int(self._ends[i])])

    def __repr__(self) -> str:
        return f"SerializedList({len(self)} items, {self._bytes.nbytes} bytes)"
