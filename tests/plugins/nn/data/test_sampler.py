"""adcore_nn.data.sampler: torch's samplers; random orders from SeedSequence((seed, epoch)) or a generator."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.data import BatchSampler, RandomSampler, SequentialSampler, SubsetRandomSampler

from adcore.errors import InvalidInputError, InvalidValueError

DATA = list(range(10))


def test_sequential_sampler():
    s = SequentialSampler(DATA)
    assert list(s) == DATA and len(s) == 10


def test_random_sampler_epoch_orders_come_from_seed_and_epoch():
    s = RandomSampler(DATA, seed=3)
    first, second = list(s), list(s)
    assert sorted(first) == DATA and sorted(second) == DATA
    assert first != second, "each iteration is the next epoch"
    expected = np.random.default_rng(np.random.SeedSequence((3, 0))).permutation(10).tolist()
    assert first == expected, "epoch 0's order is SeedSequence((seed, 0))'s permutation"
    s.set_epoch(0)
    assert list(s) == first, "set_epoch replays an epoch"
    assert list(RandomSampler(DATA, seed=4)) != first, "another seed, another order"


def test_random_sampler_seed_none_is_drawn_once_and_kept():
    s = RandomSampler(DATA)
    assert isinstance(s.seed, int) and s.seed >= 0
    order = list(s)
    assert list(RandomSampler(DATA, seed=s.seed)) == order, "sampler.seed replays it"


def test_random_sampler_with_a_generator_draws_from_it():
    s = RandomSampler(DATA, generator=np.random.default_rng(7))
    rng = np.random.default_rng(7)
    assert list(s) == rng.permutation(10).tolist()
    assert list(s) == rng.permutation(10).tolist(), "the generator's state advances, as torch's"


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(DATA, num_samples=25, seed=0)
    drawn = list(s)
    assert len(drawn) == 25 == len(s)
    assert sorted(drawn[:10]) == DATA and sorted(drawn[10:20]) == DATA, "whole permutations first, as torch's"
    assert len(set(drawn[20:])) == 5
    r = RandomSampler(DATA, replacement=True, num_samples=1000, seed=0)
    drawn = list(r)
    assert len(drawn) == 1000 and set(drawn) == set(DATA), "with replacement: repeats, every value in range"
    assert list(RandomSampler([], seed=0)) == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"replacement": 1}, "replacement should be a boolean"),
        ({"num_samples": 0}, "num_samples should be a positive integer"),
        ({"num_samples": 2.5}, "num_samples should be a positive integer"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"seed": 1.5}, "seed must be an int >= 0"),
    ],
)
def test_random_sampler_refuses_bad_arguments(kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        RandomSampler(DATA, **kwargs)
    assert len(RandomSampler(DATA, seed=0)) == 10


def test_random_sampler_refuses_a_torch_style_generator_and_bad_epochs():
    with pytest.raises(InvalidInputError, match="numpy.random.Generator"):
        RandomSampler(DATA, generator=np.random.RandomState(0))
    with pytest.raises(InvalidValueError, match="set_epoch"):
        RandomSampler(DATA, seed=0).set_epoch(-1)


def test_subset_random_sampler_permutes_the_given_indices():
    s = SubsetRandomSampler([10, 20, 30, 40], seed=1)
    order = list(s)
    assert sorted(order) == [10, 20, 30, 40] and len(s) == 4
    perm = np.random.default_rng(np.random.SeedSequence((1, 0))).permutation(4).tolist()
    assert order == [[10, 20, 30, 40][i] for i in perm]
    s.set_epoch(0)
    assert list(s) == order


def test_batch_sampler_batches_and_drop_last():
    assert list(BatchSampler(SequentialSampler(DATA), 4, False)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(BatchSampler(SequentialSampler(DATA), 4, True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(BatchSampler(DATA, 4, False)) == 3 and len(BatchSampler(DATA, 4, True)) == 2
    assert len(BatchSampler(DATA, 5, True)) == 2 and list(BatchSampler(DATA, 5, True))[-1] == [5, 6, 7, 8, 9]
    inner = RandomSampler(DATA, seed=2)
    b = BatchSampler(inner, 3, False)
    first = list(b)
    b.set_epoch(0)
    assert list(b) == first, "set_epoch passes on to the sampler"


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_batch_sampler_refuses_bad_batch_size(batch_size):
    with pytest.raises(InvalidValueError, match="batch_size should be a positive integer"):
        BatchSampler(DATA, batch_size, False)


def test_batch_sampler_refuses_non_bool_drop_last():
    with pytest.raises(InvalidValueError, match="drop_last should be a boolean"):
        BatchSampler(DATA, 2, 0)


def test_torch_agrees_on_batch_sampler():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written checks above still run"
    )
    tdata = torch.utils.data
    for n in (0, 1, 7, 10, 12):
        for size in (1, 3, 5):
            for drop in (False, True):
                ours = BatchSampler(SequentialSampler(range(n)), size, drop)
                theirs = tdata.BatchSampler(tdata.SequentialSampler(range(n)), size, drop)
                assert list(ours) == list(theirs) and len(ours) == len(theirs), (n, size, drop)
    assert len(RandomSampler(DATA, num_samples=25, seed=0)) == len(tdata.RandomSampler(DATA, num_samples=25))
