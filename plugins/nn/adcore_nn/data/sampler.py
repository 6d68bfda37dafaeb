"""torch.utils.data's samplers: Sequential, Random, SubsetRandom and BatchSampler.

The random samplers differ from torch's in how they are seeded when given no `generator`: the
order of epoch e comes from `numpy.random.SeedSequence((seed, e))`, so an epoch's order depends
only on (seed, e) (torch's draws a seed from its global RNG at every `iter`). `seed=None` draws
one at construction from adcore_nn's default generator (random unless `adcore_nn.manual_seed`
was called; `sampler.seed` keeps it). Each `iter(sampler)` is the next epoch;
`set_epoch(e)` (DistributedSampler's name) makes the next one epoch e. DataLoader calls it at the
start of each of its epochs. Given a numpy `generator`, they draw from it as torch's do.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence, Sized
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler"]


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def check_seed(seed: int | None, owner: str) -> int:
    """`seed` as an int >= 0; None draws one from adcore_nn's default generator.

    That generator is seeded from OS entropy unless `adcore_nn.manual_seed(s)` reseeded it, so
    after manual_seed, loaders and samplers made in the same order get the same seeds (torch's
    torch.manual_seed makes its shuffles reproducible the same way).
    """
    if seed is None:
        from adcore_nn.init import default_generator

        return int(default_generator().integers(2**63))
    if not _is_int(seed) or seed < 0:
        raise InvalidValueError(f"{owner}: seed must be an int >= 0 or None, got {seed!r}")
    return int(seed)


class Sampler:
    """Yields the indices (or lists of indices) of a dataset; subclasses define __iter__ (torch's)."""

    def __init__(self, data_source: Sized | None = None):
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class _EpochSeeded(Sampler):
    """The seeding shared by the random samplers: a generator per epoch, or the user's."""

    def __init__(self, generator: np.random.Generator | None, seed: int | None):
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise InvalidInputError(
                f"{type(self).__name__}: generator must be a numpy.random.Generator or None, got "
                f"{type(generator).__name__}"
            )
        self.generator = generator
        self.seed = check_seed(seed, type(self).__name__)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration epoch `epoch` (its order from SeedSequence((seed, epoch)))."""
        if not _is_int(epoch) or epoch < 0:
            raise InvalidValueError(
                f"{type(self).__name__}.set_epoch: epoch must be an int >= 0, got {epoch!r}"
            )
        self.epoch = int(epoch)

    def _next_generator(self) -> np.random.Generator:
        if self.generator is not None:
            return self.generator
        rng = np.random.default_rng(np.random.SeedSequence((self.seed, self.epoch)))
        self.epoch += 1
        return rng


class RandomSampler(_EpochSeeded):
    """Indices in random order (torch's): a permutation per pass, or draws with replacement.

    num_samples (default len(data_source)) indices per epoch; without replacement, more than
    len(data_source) takes further permutations, as torch's.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: np.random.Generator | None = None,
        *,
        seed: int | None = None,
    ):
        if not isinstance(replacement, bool):
            raise InvalidValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if num_samples is not None and (not _is_int(num_samples) or num_samples <= 0):
            raise InvalidValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        super().__init__(generator, seed)
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng, count = len(self.data_source), self._next_generator(), self.num_samples
        if self.replacement:
            return iter(rng.integers(0, n, size=count).tolist())
        if n == 0:
            return iter([])
        order = [rng.permutation(n) for _ in range(count // n)]
        if count % n:
            order.append(rng.permutation(n)[: count % n])
        return iter(np.concatenate(order).tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_EpochSeeded):
    """The given indices in random order (torch's)."""

    def __init__(
        self, indices: Sequence[int], generator: np.random.Generator | None = None, *, seed: int | None = None
    ):
        super().__init__(generator, seed)
        self.indices = indices

    def __iter__(self) -> Iterator[int]:
        order = self._next_generator().permutation(len(self.indices))
        return (self.indices[i] for i in order.tolist())

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`; the last shorter one dropped if drop_last (torch's)."""

    def __init__(self, sampler: Sampler | Sequence[int], batch_size: int, drop_last: bool):
        if not _is_int(batch_size) or batch_size <= 0:
            raise InvalidValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise InvalidValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def set_epoch(self, epoch: int) -> None:
        """Pass the epoch on to the sampler, if it takes one."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        # the sampler's iterator now, not at the first next(): its epoch's order is drawn when the
        # loader starts the epoch, so a second live iterator (the next epoch) cannot take it
        return self._batches(iter(self.sampler))

    def _batches(self, indices: Iterator[int]) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in indices:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
