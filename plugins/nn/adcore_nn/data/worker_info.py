"""Which DataLoader worker process this is: torch's `get_worker_info()` and the `WorkerInfo` it returns."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore_nn.data.fetch import item_rng

__all__ = ["WorkerInfo", "get_worker_info"]

_current: WorkerInfo | None = None


class WorkerInfo:
    """torch's WorkerInfo: `id`, `num_workers`, `seed` (from (loader seed, epoch, id)), `dataset`.

    Read-only after construction, as torch's. `dataset` is the worker's copy, which an
    IterableDataset's `__iter__` reads to split its items between workers. adcore adds `rng`: the
    current batch's generator (`adcore_nn.data.item_rng()`), seeded per (seed, epoch, batch index),
    so its draws do not depend on which worker fetched the batch (`seed` does: it names the worker).
    """

    __slots__ = ("dataset", "id", "num_workers", "seed")

    def __init__(self, *, id: int, num_workers: int, seed: int, dataset: Any):
        for name, value in (("id", id), ("num_workers", num_workers), ("seed", seed), ("dataset", dataset)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise InvalidValueError(f"WorkerInfo is read-only: cannot assign {name!r}")

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the batch being fetched (same draws whichever worker fetches it)."""
        return item_rng()

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


def get_worker_info() -> WorkerInfo | None:
    """This worker's WorkerInfo inside a DataLoader worker process; None in the main process (torch's)."""
    return _current


def _set(info: WorkerInfo | None) -> None:
    """Called by a worker process (workers.py) when it starts an epoch; never by users."""
    global _current
    _current = info
