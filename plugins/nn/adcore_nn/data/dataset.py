"""torch.utils.data's datasets: Dataset, IterableDataset, ArrayDataset (TensorDataset), Subset,
ConcatDataset, random_split."""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

__all__ = ["ArrayDataset", "ConcatDataset", "Dataset", "IterableDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: `__getitem__(index)` returns an item, `__len__` their number (torch's)."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: `__iter__` yields the items (torch's).

    With DataLoader workers each worker iterates its own copy: split the items in `__iter__` with
    `get_worker_info()` (id, num_workers), or every worker yields every item, as in torch.
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other: Dataset):
        raise InvalidInputError(
            "IterableDataset + dataset: adcore_nn.data has no ChainDataset; chain the iterators in an "
            "IterableDataset of your own (itertools.chain)"
        )


class ArrayDataset(Dataset):
    """torch's TensorDataset for NumPy arrays: item i is `tuple(a[i] for a in arrays)`.

    The arrays are kept as given (no copy); items are views (or NumPy scalars for 1-d arrays).
    DataLoader workers read them without copying them (forked workers share their pages).
    """

    def __init__(self, *arrays: np.ndarray):
        if not arrays:
            raise InvalidInputError("ArrayDataset needs at least one array")
        for i, a in enumerate(arrays):
            if not isinstance(a, np.ndarray) or a.ndim == 0:
                raise InvalidInputError(
                    f"ArrayDataset: argument {i} must be a NumPy array with a first (item) dimension, "
                    f"got {type(a).__name__}{'' if not isinstance(a, np.ndarray) else ' of shape ()'}; "
                    "use np.asarray"
                )
        sizes = [a.shape[0] for a in arrays]
        if len(set(sizes)) > 1:
            raise InvalidValueError(
                f"ArrayDataset: size mismatch between arrays: first dimensions {sizes} (all must be equal)"
            )
        self.arrays = tuple(arrays)

    def __getitem__(self, index: Any) -> tuple:
        return tuple(a[index] for a in self.arrays)

    def __len__(self) -> int:
        return self.arrays[0].shape[0]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order (torch's)."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets: index i runs through each in turn (torch's)."""

    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise InvalidValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise InvalidInputError(f"ConcatDataset does not support IterableDataset (dataset {i})")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if isinstance(idx, bool) or not isinstance(idx, numbers.Integral):
            raise InvalidInputError(f"ConcatDataset: index must be an int, got {type(idx).__name__}")
        if idx < 0:
            if -idx > len(self):
                raise InvalidValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"ConcatDataset: index {idx} out of range for length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


def random_split(
    dataset: Dataset, lengths: Sequence[int | float], generator: np.random.Generator | None = None
) -> list[Subset]:
    """Split `dataset` into non-overlapping random Subsets of the given lengths (torch's).

    `lengths` are sizes summing to len(dataset), or fractions summing to 1 (the remainder items
    go one each to the first splits, as torch's). `generator`: a numpy Generator; None draws from
    adcore_nn's default generator, the one `adcore_nn.manual_seed` reseeds (torch's default).
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0 for x in lengths):
        fractions = all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in lengths)
        raise InvalidValueError(
            f"random_split: fractions must sum to 1, got {lengths} (sum {sum(lengths)})"
            if fractions and all(x >= 0 for x in lengths)
            else f"random_split: lengths must be non-negative ints or fractions, got {lengths}"
        )
    if sum(lengths) != n:
        raise InvalidValueError(
            f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the "
            f"input dataset ({n})"
        )
    if generator is None:
        from adcore_nn.init import default_generator

        generator = default_generator()
    order = generator.permutation(n).tolist()
    splits, start = [], 0
    for size in lengths:
        splits.append(Subset(dataset, order[start : start + size]))
        start += size
    return splits
