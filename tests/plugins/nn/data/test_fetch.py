"""adcore_nn.data.fetch: one batch from its indices, its randomness seeded by (seed, epoch, batch index)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from adcore_nn.data import Dataset, default_collate, item_rng
from adcore_nn.data.fetch import fetch


class Noisy(Dataset):
    """Items drawing from every source a transform might: np.random, random, item_rng()."""

    def __getitem__(self, i):
        return np.array([i, np.random.rand(), random.random(), item_rng().random()])

    def __len__(self):
        return 100


class Batched(Noisy):
    def __getitems__(self, indices):
        return [np.array([-i, 0.0, 0.0, 0.0]) for i in indices]


def test_same_seed_epoch_batch_gives_the_same_batch():
    a = fetch(Noisy(), [3, 1, 4], default_collate, 11, 2, 5, True)
    b = fetch(Noisy(), [3, 1, 4], default_collate, 11, 2, 5, True)
    np.testing.assert_array_equal(a, b)
    assert a[:, 0].tolist() == [3, 1, 4]
    assert len(set(a[:, 1].tolist())) == 3, "items of a batch draw on from one stream"


@pytest.mark.parametrize("change", [(12, 2, 5), (11, 3, 5), (11, 2, 6)])
def test_seed_epoch_or_batch_index_changes_every_source(change):
    a = fetch(Noisy(), [0, 1], default_collate, 11, 2, 5, True)
    b = fetch(Noisy(), [0, 1], default_collate, *change, True)
    for column in (1, 2, 3):
        assert not np.array_equal(a[:, column], b[:, column]), column


def test_the_batch_is_seeded_from_seedsequence():
    rng_stream = np.random.SeedSequence((11, 2, 5)).spawn(3)[2]
    expected = np.random.Generator(np.random.PCG64(rng_stream)).random()
    assert fetch(Noisy(), [0], default_collate, 11, 2, 5, True)[0, 3] == expected


def test_the_callers_global_random_states_are_restored():
    np.random.seed(123)
    random.seed(123)
    expected_np, expected_py = np.random.rand(), random.random()
    np.random.seed(123)
    random.seed(123)
    fetch(Noisy(), [0, 1, 2], default_collate, 1, 0, 0, True)
    assert np.random.rand() == expected_np and random.random() == expected_py


def test_state_is_restored_when_the_dataset_raises():
    class Failing(Noisy):
        def __getitem__(self, i):
            np.random.rand()
            raise KeyError(i)

    np.random.seed(5)
    expected = np.random.rand()
    np.random.seed(5)
    with pytest.raises(KeyError):
        fetch(Failing(), [0], default_collate, 1, 0, 0, True)
    assert np.random.rand() == expected
    assert fetch(Noisy(), [0], default_collate, 1, 0, 0, True).shape == (1, 4), "the next fetch works"


def test_item_rng_outside_a_fetch_is_another_generator():
    seen = []

    class Keeps(Noisy):
        def __getitem__(self, i):
            seen.append(item_rng())
            return 0

    fetch(Keeps(), [0], default_collate, 1, 0, 0, True)
    outside = item_rng()
    assert isinstance(outside, np.random.Generator) and outside is not seen[0]
    assert item_rng() is outside, "outside a fetch: one generator per process"


def test_getitems_is_used_when_the_dataset_has_it():
    batch = fetch(Batched(), [2, 3], default_collate, 0, 0, 0, True)
    assert batch[:, 0].tolist() == [-2, -3]


def test_without_auto_collation_one_index_one_item():
    item = fetch(Noisy(), 7, lambda x: x, 0, 0, 0, False)
    assert item.shape == (4,) and item[0] == 7
