"""Making one batch from its indices, with its randomness seeded by (seed, epoch, batch index).

`fetch` is the only place a batch is made: the DataLoader calls it in-process (num_workers=0)
and every worker process calls it (workers.py). While it runs, the legacy global NumPy RNG
(`np.random.rand`, `np.random.shuffle`, ...), Python's `random` module, and `item_rng()` are all
seeded from `numpy.random.SeedSequence((seed, epoch, batch_index))`: a transform's draws depend on
the batch, never on the process that fetched it or on the batches fetched before, so num_workers
0, 1, 2 and 4 give bit-identical batches. Afterwards the previous states are put back: the main
process's global RNGs are not disturbed by loading in-process. The whole batch shares one stream
(item j of a batch draws after items 0..j-1): seeding once per batch rather than per item keeps
the cost off the per-item path. A transform calling `np.random.default_rng()` without a seed is
not reproducible: draw from `item_rng()` instead. These are process-wide globals: loaders
iterated in-process by several threads at once interleave their draws (use workers instead).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["fetch", "item_rng"]

_batch_rng: np.random.Generator | None = None
_unseeded_rng: np.random.Generator | None = None


def item_rng() -> np.random.Generator:
    """The generator for per-item randomness: inside a DataLoader fetch, the batch's seeded one.

    Called from a dataset's `__getitem__` (or a transform) while a DataLoader fetches a batch, it
    returns that batch's Generator, seeded by (loader seed, epoch, batch index): reproducible and
    the same for every num_workers. Called outside a fetch (e.g. `dataset[0]` by hand) it returns a
    generator seeded from fresh OS entropy once per process: random, not reproducible.
    """
    global _unseeded_rng
    if _batch_rng is not None:
        return _batch_rng
    if _unseeded_rng is None:
        _unseeded_rng = np.random.default_rng()
    return _unseeded_rng


def fetch(
    dataset: Any,
    indices: Sequence[int] | Any,
    collate_fn: Callable[[Any], Any],
    seed: int,
    epoch: int,
    batch_index: int,
    auto_collation: bool,
) -> Any:
    """Batch `batch_index` of `epoch`: collate_fn of the items at `indices` (torch's fetcher).

    auto_collation=True: `indices` is a list, the items `dataset.__getitems__(indices)` when the
    dataset has it (torch's batched-read protocol), else `[dataset[i] for i in indices]`, collated.
    auto_collation=False (batch_size=None): `indices` is one index, `collate_fn(dataset[indices])`.
    """
    global _batch_rng
    streams = np.random.SeedSequence((seed, epoch, batch_index)).spawn(3)
    saved_numpy, saved_python, saved_rng = np.random.get_state(), random.getstate(), _batch_rng
    np.random.seed(streams[0].generate_state(8))
    random.seed(int(streams[1].generate_state(1, np.uint64)[0]))
    _batch_rng = np.random.Generator(np.random.PCG64(streams[2]))
    try:
        if not auto_collation:
            return collate_fn(dataset[indices])
        getitems = getattr(dataset, "__getitems__", None)
        items = getitems(list(indices)) if getitems else [dataset[i] for i in indices]
        return collate_fn(items)
    finally:
        np.random.set_state(saved_numpy)
        random.setstate(saved_python)
        _batch_rng = saved_rng
