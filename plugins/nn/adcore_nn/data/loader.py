"""DataLoader: torch.utils.data.DataLoader's arguments, checks and batches, seeded per (seed, epoch, batch).

Epochs: each `iter(loader)` is the next epoch (0, 1, 2, ...; `loader.epoch` is the next one's
number), and `loader.set_epoch(e)` makes the next one epoch e (to resume, or to replay one).
The epoch's order comes from `SeedSequence((seed, epoch))` (the loader calls `set_epoch` on its
sampler / batch_sampler when they have one: adcore's RandomSampler, or a DistributedSampler-like
one); batch k's randomness from `SeedSequence((seed, epoch, k))` (see fetch.py), so the batches
are bit-identical for every num_workers and differ between epochs and between seeds.
`seed=None` draws one at construction from adcore_nn's default generator, which is seeded from OS
entropy unless `adcore_nn.manual_seed(s)` reseeded it (then a script's loaders are reproducible,
as torch.manual_seed makes torch's); read it from `loader.seed` to replay.

The contract with workers.py (H5/H6):
    WorkerPool(dataset, collate_fn, num_workers, worker_init_fn, prefetch_factor, timeout, seed,
               auto_collation: bool, drop_last, batch_size)
    pool.epoch(epoch: int, batches: Iterable[list[int]] | None) -> Iterator[batch]
        yields the batches in order; batches=None for an IterableDataset: each worker iterates
        its own copy, batching batch_size items (drop_last as given).
    pool.shutdown()
Workers call `fetch.fetch(dataset, indices, collate_fn, seed, epoch, batch_index,
auto_collation)` and `worker_info._set(WorkerInfo(id=, num_workers=, seed=, dataset=))`.
The loader makes a pool at each epoch when num_workers > 0 and shuts it down when the epoch ends,
the loop breaks, the iterator is closed or garbage-collected, or the loop body raises; with
persistent_workers=True one pool serves every epoch until the loader is garbage-collected (or
`loader.shutdown_workers()`).

Where adcore differs from torch: `seed` and `set_epoch` are additions; `generator` is a
numpy.random.Generator (given, the shuffle order draws from it, as torch's, not from (seed,
epoch)), and with seed=None the loader's seed is drawn from it, so a seeded generator makes the
per-item randomness reproducible as in torch; pin_memory is accepted and does nothing (there is no GPU memory to pin into);
worker_init_fn is ignored with num_workers=0, as torch's; batches arrive as NumPy arrays, not
tensors, collated with torch's rules (tuples become lists). With workers, batch arrays are views
of shared memory (see shared.py): keep them as long as you like, each batch has its own block.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn.data.collate import default_collate, default_convert
from adcore_nn.data.dataset import IterableDataset
from adcore_nn.data.fetch import fetch
from adcore_nn.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, check_seed

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class DataLoader:
    """Batches of `dataset` with torch's DataLoader semantics; see the module docstring for seeding."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable[list] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: str | Any | None = None,
        generator: np.random.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        seed: int | None = None,
    ):
        if not _is_int(num_workers) or num_workers < 0:
            raise InvalidValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
                f" (got {num_workers!r})"
            )
        if not isinstance(timeout, numbers.Real) or timeout < 0:
            raise InvalidValueError(f"timeout option should be non-negative (got {timeout!r})")
        if num_workers == 0 and prefetch_factor is not None:
            raise InvalidValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                "to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not _is_int(prefetch_factor) or prefetch_factor < 1):
            raise InvalidValueError(f"prefetch_factor option should be an int >= 1 (got {prefetch_factor!r})")
        if persistent_workers and num_workers == 0:
            raise InvalidValueError("persistent_workers option needs num_workers > 0")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise InvalidInputError(
                f"DataLoader: generator must be a numpy.random.Generator or None, got {type(generator).__name__}"
            )
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in {False, None}:
                raise InvalidValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise InvalidValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise InvalidValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                    f"batch_sampler={batch_sampler}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise InvalidValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise InvalidValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise InvalidValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
                )
        elif not _is_int(batch_size) or batch_size <= 0:
            raise InvalidValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise InvalidValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")

        if seed is None and generator is not None:  # torch draws its workers' base seed from it
            seed = int(generator.integers(2**63))
        self.seed = check_seed(seed, "DataLoader")
        if sampler is None and not iterable:
            sampler = (
                RandomSampler(dataset, generator=generator, seed=self.seed)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.pin_memory, self.generator, self.persistent_workers = pin_memory, generator, persistent_workers
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.epoch = 0
        self._pool = None
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FROZEN and self.__dict__.get("_initialized"):
            raise InvalidValueError(
                f"{name} attribute should not be set after DataLoader is initialized; make a new DataLoader"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_size is not None or self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def set_epoch(self, epoch: int) -> None:
        """Make the next `iter(loader)` epoch `epoch` (its order and randomness from (seed, epoch))."""
        if not _is_int(epoch) or epoch < 0:
            raise InvalidValueError(f"DataLoader.set_epoch: epoch must be an int >= 0, got {epoch!r}")
        self.epoch = int(epoch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)  # a TypeError if the dataset has no length, as torch's
            if self.batch_size is None:
                return length
            if self.drop_last:
                return length // self.batch_size
            return -(-length // self.batch_size)
        return len(self._index_sampler)

    def __iter__(self) -> _LoaderIterator:
        epoch = self.epoch
        self.epoch += 1
        samplers = {id(s): s for s in (self.sampler, self.batch_sampler) if s is not None}
        for s in samplers.values():
            if hasattr(s, "set_epoch"):
                s.set_epoch(epoch)
        return _LoaderIterator(self, epoch)

    def shutdown_workers(self) -> None:
        """Stop persistent workers now (they also stop when the loader is garbage-collected)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()

    def _make_pool(self):
        from adcore_nn.data.workers import WorkerPool

        return WorkerPool(
            self.dataset,
            self.collate_fn,
            self.num_workers,
            worker_init_fn=self.worker_init_fn,
            prefetch_factor=self.prefetch_factor,
            timeout=self.timeout,
            seed=self.seed,
            auto_collation=self._auto_collation,
            drop_last=self.drop_last,
            batch_size=self.batch_size,
            multiprocessing_context=self.multiprocessing_context,
        )

    def _batches(self, epoch: int) -> tuple[Iterator[Any], Any]:
        """(the epoch's batches, the pool to shut down at its end or None); workers start fetching now."""
        iterable = isinstance(self.dataset, IterableDataset)
        indices = None if iterable else iter(self._index_sampler)
        if self.num_workers == 0:
            return (self._iterable_in_process(epoch) if iterable else self._in_process(epoch, indices)), None
        if self.persistent_workers:
            if self._pool is None:
                self._pool = self._make_pool()
            return self._pool.epoch(epoch, indices), None
        pool = self._make_pool()
        try:
            return pool.epoch(epoch, indices), pool
        except BaseException:
            pool.shutdown()
            raise

    def _in_process(self, epoch: int, indices: Iterator[Any]) -> Iterator[Any]:
        for k, index in enumerate(indices):
            yield fetch(self.dataset, index, self.collate_fn, self.seed, epoch, k, self._auto_collation)

    def _iterable_in_process(self, epoch: int) -> Iterator[Any]:
        items = iter(self.dataset)
        for k in itertools.count():
            if not self._auto_collation:
                for item in items:
                    yield fetch([item], 0, self.collate_fn, self.seed, epoch, k, False)
                    break
                else:
                    return
                continue
            taken = list(itertools.islice(items, self.batch_size))
            if not taken or (self.drop_last and len(taken) < self.batch_size):
                return
            yield fetch(taken, range(len(taken)), self.collate_fn, self.seed, epoch, k, True)


class _LoaderIterator:
    """One epoch of a DataLoader: `next()` gives the next batch; `close()` stops its workers.

    Its end, `close()`, a `break` out of the loop, an exception in the loop body and garbage
    collection all end the epoch: a non-persistent pool of workers is shut down then.
    """

    def __init__(self, loader: DataLoader, epoch: int):
        self.epoch = epoch
        self._length = loader.__len__
        self._pool = None
        self._batches, self._pool = loader._batches(epoch)

    def __iter__(self) -> _LoaderIterator:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._batches)
        except BaseException:  # the end (StopIteration) or an error: the epoch is over
            self.close()
            raise

    def __len__(self) -> int:
        return self._length()

    def close(self) -> None:
        """End the epoch now: unread batches are freed and its workers (unless persistent) stop."""
        batches, pool, self._pool = getattr(self, "_batches", None), self._pool, None
        try:
            if batches is not None:
                batches.close()
        finally:
            if pool is not None:
                pool.shutdown()

    def __del__(self) -> None:
        self.close()
