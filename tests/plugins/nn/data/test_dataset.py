"""adcore_nn.data.dataset: torch's datasets over NumPy arrays; hand-written expectations, torch where installed."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.data import ArrayDataset, ConcatDataset, Dataset, IterableDataset, Subset, random_split

from adcore.errors import InvalidInputError, InvalidValueError


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


def test_array_dataset_items_are_views_of_the_rows():
    x, y = np.arange(12.0).reshape(4, 3), np.array([7, 8, 9, 10])
    ds = ArrayDataset(x, y)
    assert len(ds) == 4
    row, label = ds[2]
    assert row.tolist() == [6.0, 7.0, 8.0] and label == 9
    assert np.shares_memory(row, x), "items are views: the arrays are not copied"
    assert ds.arrays[0] is x
    last, _ = ds[-1]
    assert last.tolist() == [9.0, 10.0, 11.0]


def test_array_dataset_refuses_mismatched_sizes_and_non_arrays():
    with pytest.raises(InvalidValueError, match=r"\[3, 2\]"):
        ArrayDataset(np.zeros((3, 1)), np.zeros(2))
    with pytest.raises(InvalidInputError, match="argument 1"):
        ArrayDataset(np.zeros(3), [1, 2, 3])
    with pytest.raises(InvalidInputError, match="shape"):
        ArrayDataset(np.array(1.0))
    with pytest.raises(InvalidInputError):
        ArrayDataset()
    assert len(ArrayDataset(np.zeros(3))) == 3, "a valid call after the refusals works"


def test_subset_maps_indices_and_lists():
    ds = Subset(Squares(10), [3, 1, 4])
    assert len(ds) == 3
    assert [ds[i] for i in range(3)] == [9, 1, 16]
    assert ds.__getitems__([2, 0]) == [16, 9]
    arrays = ArrayDataset(np.arange(10.0))
    sub = Subset(arrays, [5, 6])
    (picked,) = sub[[1, 0]]
    assert picked.tolist() == [6.0, 5.0], "a list index reads the underlying items at once"


def test_concat_dataset_indexes_through_each_in_turn():
    ds = ConcatDataset([Squares(2), Squares(3)])
    assert len(ds) == 5 and ds.cumulative_sizes == [2, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 0, 1, 4]
    assert ds[-1] == 4 and ds[-5] == 0
    with pytest.raises(InvalidValueError, match="absolute value"):
        ds[-6]
    with pytest.raises(IndexError):
        ds[5]
    assert (Squares(1) + Squares(1))[1] == 0, "Dataset + Dataset is a ConcatDataset"


def test_concat_dataset_refuses_empty_and_iterable():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter([1])

    with pytest.raises(InvalidValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(InvalidInputError, match="IterableDataset"):
        ConcatDataset([Squares(1), Stream()])
    with pytest.raises(InvalidInputError, match="ChainDataset"):
        Stream() + Stream()


def test_base_classes_say_what_to_define():
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="__iter__"):
        iter(IterableDataset())


def test_random_split_partitions_the_dataset():
    splits = random_split(Squares(10), [3, 7], generator=np.random.default_rng(0))
    assert [len(s) for s in splits] == [3, 7]
    together = sorted(splits[0].indices + splits[1].indices)
    assert together == list(range(10)), "every index once, no overlap"
    again = random_split(Squares(10), [3, 7], generator=np.random.default_rng(0))
    assert again[0].indices == splits[0].indices, "the same generator state gives the same split"
    # the order is the generator's permutation, cut in turn
    assert splits[0].indices + splits[1].indices == np.random.default_rng(0).permutation(10).tolist()


def test_random_split_fractions_give_remainders_to_the_first_splits():
    # torch's rule: floor(n * f) each, then the n - sum remainder one by one from the first
    sizes = [
        len(s) for s in random_split(Squares(10), [0.33, 0.33, 0.34], generator=np.random.default_rng(1))
    ]
    assert sizes == [4, 3, 3]


def test_random_split_default_generator_is_adcore_nn_manual_seed():
    import adcore_nn.init as init

    init.manual_seed(5)
    a = random_split(Squares(6), [2, 4])[0].indices
    init.manual_seed(5)
    assert random_split(Squares(6), [2, 4])[0].indices == a


def test_random_split_refuses_wrong_lengths():
    with pytest.raises(InvalidValueError, match="does not equal"):
        random_split(Squares(5), [2, 2], generator=np.random.default_rng(0))
    with pytest.raises(InvalidValueError, match="non-negative"):
        random_split(Squares(5), [6, -1], generator=np.random.default_rng(0))
    with pytest.raises(InvalidValueError, match=r"fractions must sum to 1, got \[0.5, 0.3\]"):
        random_split(Squares(5), [0.5, 0.3], generator=np.random.default_rng(0))


def test_torch_agrees_on_concat_and_subset_and_split_sizes():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written checks above still run"
    )
    tdata = torch.utils.data
    ours = ConcatDataset([Squares(2), Squares(3)])
    theirs = tdata.ConcatDataset([Squares(2), Squares(3)])
    assert [ours[i] for i in range(-5, 5)] == [theirs[i] for i in range(-5, 5)]
    assert ours.cumulative_sizes == list(theirs.cumulative_sizes)
    for fractions in ([0.33, 0.33, 0.34], [0.5, 0.5], [0.1, 0.2, 0.3, 0.4]):
        mine = [len(s) for s in random_split(Squares(17), fractions, generator=np.random.default_rng(0))]
        torchs = [len(s) for s in tdata.random_split(Squares(17), fractions)]
        assert mine == torchs, fractions
