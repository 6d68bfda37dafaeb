"""adcore_nn.data.loader: DataLoader's batches, options, epochs and seeding; torch's where installed.

Worker pools get a generous `timeout` as a hang guard (never a timed assertion), and a watchdog
ends the test process if anything still blocks.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import random
import sys

import numpy as np
import pytest
from adcore_nn.data import (
    ArrayDataset,
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    get_worker_info,
    item_rng,
)

from adcore.errors import InvalidValueError

GUARD = 60.0  # seconds: the pools' timeout and the watchdog's, far beyond any honest wait
forking = pytest.mark.skipif(sys.platform != "linux", reason="worker tests fork (Linux)")


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(2 * GUARD, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def rows(n=10):
    return ArrayDataset(np.arange(2.0 * n).reshape(n, 2), np.arange(n))


class Records(Dataset):
    """Dicts with a tuple inside: the structures torch's default_collate handles."""

    def __init__(self, n=7):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.full(3, i, dtype=np.float32), "y": i, "pair": (float(i), np.int64(-i))}

    def __len__(self):
        return self.n


class Augmented(Dataset):
    """A per-item transform drawing from the legacy global RNG, `random`, item_rng() and the worker's rng."""

    def __init__(self, n=23):
        self.x = np.arange(n, dtype=np.float64)

    def __getitem__(self, i):
        info = get_worker_info()
        rng = info.rng if info is not None else item_rng()
        noise = np.random.rand(2) + random.random()
        return np.array(
            [self.x[i], noise[0], noise[1], rng.normal(), np.random.default_rng(rng.integers(2**32)).random()]
        )

    def __len__(self):
        return len(self.x)


class Counting(IterableDataset):
    """0..n-1, split between workers by get_worker_info() as torch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def torch_counting(torch, n):
    """Counting as a torch IterableDataset, split by torch's get_worker_info."""

    class TorchCounting(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(n) if info is None else range(info.id, n, info.num_workers))

        def __len__(self):
            return n

    return TorchCounting()


def epochs(loader, count=1):
    return [[b for b in loader] for _ in range(count)]


# ----------------------------------------------------------------------------- batches, len, options
def test_sequential_batches_and_len():
    loader = DataLoader(rows(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 == len(batches)
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    dropped = DataLoader(rows(10), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].tolist() for b in dropped] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it = iter(DataLoader(rows(10), batch_size=3))
    assert len(it) == 4


def test_batch_size_none_yields_converted_items():
    loader = DataLoader(Records(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and items[2]["y"] == 2 and items[2]["x"].shape == (3,)
    assert isinstance(items[2]["pair"], list), "default_convert turns tuples into lists, as torch's"


def test_user_sampler_and_batch_sampler():
    loader = DataLoader(rows(6), batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b[1].tolist() for b in loader] == [[5, 4], [3, 2], [1, 0]]
    loader = DataLoader(rows(6), batch_sampler=[[0, 5], [1], [2, 3, 4]])
    assert [b[1].tolist() for b in loader] == [[0, 5], [1], [2, 3, 4]]
    assert loader.batch_size is None and len(loader) == 3
    loader = DataLoader(rows(5), batch_sampler=BatchSampler(SequentialSampler(range(5)), 2, True))
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3]]


def test_collate_fn_is_used():
    loader = DataLoader(rows(4), batch_size=2, collate_fn=lambda items: [i[1] for i in items])
    assert list(loader) == [[0, 1], [2, 3]]


def test_pin_memory_is_accepted_and_changes_nothing():
    plain = [b[0] for b in DataLoader(rows(5), batch_size=2)]
    pinned = [b[0] for b in DataLoader(rows(5), batch_size=2, pin_memory=True)]
    for a, b in zip(plain, pinned, strict=True):
        np.testing.assert_array_equal(a, b)


CONFLICTS = [
    ({"num_workers": -1}, "num_workers option should be non-negative"),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"sampler": [0, 1], "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "sampler": [0]}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "mutually exclusive with drop_last"),
]


@pytest.mark.parametrize("kwargs, match", CONFLICTS)
def test_conflicting_options_are_torchs_value_errors(kwargs, match):
    with pytest.raises(InvalidValueError, match=match) as raised:
        DataLoader(rows(4), **kwargs)
    assert isinstance(raised.value, ValueError)
    assert len(list(DataLoader(rows(4), batch_size=2))) == 2, "the next loader works"


@pytest.mark.parametrize("kwargs, match", CONFLICTS)
def test_torch_refuses_the_same_options(kwargs, match):
    torch = pytest.importorskip("torch", reason="torch is not installed: the checks above still run")
    with pytest.raises(ValueError, match=match.split(" option")[0]):
        torch.utils.data.DataLoader(list(range(4)), **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"batch_size": 0}, "batch_size should be a positive integer"),
        ({"drop_last": 1}, "drop_last should be a boolean"),
        ({"num_workers": 2, "prefetch_factor": 0}, "prefetch_factor option should be an int >= 1"),
        ({"seed": -3}, "seed must be an int >= 0"),
    ],
)
def test_bad_values_are_refused(kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        DataLoader(rows(4), **kwargs)


def test_iterable_dataset_refuses_shuffle_and_samplers():
    for kwargs in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(InvalidValueError, match="DataLoader with IterableDataset: expected unspecified"):
            DataLoader(Counting(3), **kwargs)


def test_options_cannot_change_after_construction():
    loader = DataLoader(rows(4), batch_size=2)
    for name in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(InvalidValueError, match=f"{name} attribute should not be set"):
            setattr(loader, name, None)
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3]], "unchanged, so no silently ignored option"


# ----------------------------------------------------------------------------- epochs and seeding
def test_shuffle_orders_come_from_seed_and_epoch():
    loader = DataLoader(rows(20), batch_size=5, shuffle=True, seed=9)
    first, second = ([b[1].tolist() for b in epoch] for epoch in epochs(loader, 2))
    flat = sum(first, [])
    assert sorted(flat) == list(range(20)) and sorted(sum(second, [])) == list(range(20))
    assert first != second, "each iter(loader) is the next epoch"
    expected = np.random.default_rng(np.random.SeedSequence((9, 0))).permutation(20).tolist()
    assert flat == expected, "epoch 0's order is SeedSequence((seed, 0))'s permutation"
    assert loader.epoch == 2
    loader.set_epoch(1)
    assert [b[1].tolist() for b in loader] == second, "set_epoch replays an epoch"
    again = DataLoader(rows(20), batch_size=5, shuffle=True, seed=9)
    assert [b[1].tolist() for b in again] == first, "same seed, same order"
    other = DataLoader(rows(20), batch_size=5, shuffle=True, seed=10)
    assert [b[1].tolist() for b in other] != first


def test_two_live_iterators_each_get_their_own_epochs_order():
    # torch allows a second iter(loader) while one is alive (num_workers=0); each iter is the next
    # epoch, so the first must keep epoch 0's order even if the second is made before its first next()
    expected = [
        [b.tolist() for b in epoch] for epoch in epochs(DataLoader(range(10), 3, shuffle=True, seed=1), 2)
    ]
    loader = DataLoader(range(10), batch_size=3, shuffle=True, seed=1)
    first, second = iter(loader), iter(loader)
    assert [b.tolist() for b in second] == expected[1]
    assert [b.tolist() for b in first] == expected[0]


def test_seed_none_draws_one_and_keeps_it():
    loader = DataLoader(Augmented(6), batch_size=3, shuffle=True)
    assert isinstance(loader.seed, int) and loader.seed >= 0
    replay = DataLoader(Augmented(6), batch_size=3, shuffle=True, seed=loader.seed)
    for a, b in zip(list(loader), list(replay), strict=True):
        np.testing.assert_array_equal(a, b)


def test_manual_seed_makes_seed_none_reproducible():
    import adcore_nn.init as init

    init.manual_seed(3)
    first = DataLoader(rows(6), shuffle=True)
    init.manual_seed(3)
    second = DataLoader(rows(6), shuffle=True)
    assert first.seed == second.seed == first.sampler.seed
    assert [b[1].tolist() for b in first] == [b[1].tolist() for b in second]


def test_generator_drives_the_shuffle_as_torchs():
    loader = DataLoader(rows(8), batch_size=8, shuffle=True, generator=np.random.default_rng(4))
    rng = np.random.default_rng(4)
    assert loader.seed == rng.integers(2**63), "with seed=None, the seed is drawn from the generator"
    assert next(iter(loader))[1].tolist() == rng.permutation(8).tolist()
    assert next(iter(loader))[1].tolist() == rng.permutation(8).tolist()
    a = list(DataLoader(Augmented(6), batch_size=3, generator=np.random.default_rng(1)))
    b = list(DataLoader(Augmented(6), batch_size=3, generator=np.random.default_rng(1)))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_per_item_randomness_is_reproducible_and_differs_between_epochs():
    loader = DataLoader(Augmented(10), batch_size=4, seed=1)
    e0, e1 = epochs(loader, 2)
    loader.set_epoch(0)
    (again,) = epochs(loader)
    for a, b in zip(e0, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(e0[0][:, 1:], e1[0][:, 1:]), "another epoch, other draws"
    assert len({float(b[0, 1]) for b in e0}) == len(e0), "each batch its own stream"


def test_loading_in_process_leaves_the_global_rngs_alone():
    np.random.seed(0)
    random.seed(0)
    expected = (np.random.rand(), random.random())
    np.random.seed(0)
    random.seed(0)
    list(DataLoader(Augmented(9), batch_size=2, shuffle=True, seed=3))
    assert (np.random.rand(), random.random()) == expected


def test_an_error_in_the_dataset_propagates_and_the_next_epoch_works():
    class FailsOnce(Dataset):
        failed = False

        def __getitem__(self, i):
            if i == 3 and not FailsOnce.failed:
                FailsOnce.failed = True
                raise KeyError("item 3")
            return i

        def __len__(self):
            return 5

    loader = DataLoader(FailsOnce(), batch_size=2)
    with pytest.raises(KeyError, match="item 3"):
        list(loader)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4]]


# ----------------------------------------------------------------------------- IterableDataset
def test_iterable_dataset_in_process():
    loader = DataLoader(Counting(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    dropped = DataLoader(Counting(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dropped] == [[0, 1, 2], [3, 4, 5]] and len(dropped) == 2
    single = DataLoader(Counting(3), batch_size=None)
    assert list(single) == [0, 1, 2] and len(single) == 3


# ----------------------------------------------------------------------------- torch's DataLoader
def test_torch_gives_the_same_batches_and_lengths():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written checks above still run"
    )
    TorchLoader = torch.utils.data.DataLoader
    for kwargs in (
        {"batch_size": 3},
        {"batch_size": 3, "drop_last": True},
        {"batch_size": 7},
        {"batch_size": 1},
    ):
        ours, theirs = DataLoader(Records(7), **kwargs), TorchLoader(Records(7), **kwargs)
        assert len(ours) == len(theirs), kwargs
        ours, theirs = list(ours), list(theirs)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert list(a) == list(b)
            np.testing.assert_array_equal(a["x"], b["x"].numpy())
            np.testing.assert_array_equal(a["y"], b["y"].numpy())
            assert a["y"].dtype == b["y"].numpy().dtype and a["x"].dtype == b["x"].numpy().dtype
            assert type(a["pair"]) is type(b["pair"]) is list
            for p, q in zip(a["pair"], b["pair"], strict=True):
                np.testing.assert_array_equal(p, q.numpy())
    ours = [b.tolist() for b in DataLoader(Counting(7), batch_size=3, drop_last=True)]
    theirs = [b.tolist() for b in TorchLoader(torch_counting(torch, 7), batch_size=3, drop_last=True)]
    assert ours == theirs
    assert len(DataLoader(Counting(7), batch_size=3)) == len(
        TorchLoader(torch_counting(torch, 7), batch_size=3)
    )


# ----------------------------------------------------------------------------- worker processes
def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


@forking
def test_batches_are_bit_identical_for_0_1_2_4_workers():
    runs = {}
    for n in (0, 1, 2, 4):
        kwargs = {"num_workers": n, "timeout": GUARD} if n else {}
        loader = DataLoader(Augmented(23), batch_size=4, shuffle=True, seed=5, **kwargs)
        runs[n] = epochs(loader, 2)
    for n in (1, 2, 4):
        for e in range(2):
            assert len(runs[n][e]) == len(runs[0][e]) == 6
            for a, b in zip(runs[0][e], runs[n][e], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"num_workers={n}, epoch {e}")
    assert not np.array_equal(runs[0][0][0], runs[0][1][0]), "epochs differ"
    other = epochs(
        DataLoader(Augmented(23), batch_size=4, shuffle=True, seed=6, num_workers=2, timeout=GUARD)
    )
    assert not np.array_equal(other[0][0][:, 1:], runs[0][0][0][:, 1:]), "seeds differ"


@forking
def test_persistent_workers_keep_their_processes_and_stay_deterministic():
    loader = DataLoader(
        Augmented(12), batch_size=3, seed=2, num_workers=2, persistent_workers=True, timeout=GUARD
    )
    first = epochs(loader)[0]
    pids = loader._pool.pids
    second = epochs(loader)[0]
    assert loader._pool.pids == pids, "the same workers serve the next epoch"
    reference = epochs(DataLoader(Augmented(12), batch_size=3, seed=2), 2)
    for got, want in zip((first, second), reference, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    loader.shutdown_workers()
    assert all(_gone(p) for p in pids)


@forking
def test_workers_stop_when_the_loop_breaks_or_the_iterator_is_collected():
    loader = DataLoader(rows(40), batch_size=2, num_workers=2, timeout=GUARD)
    it = iter(loader)
    next(it)
    pids = it._pool.pids
    assert len(pids) == 2 and not any(_gone(p) for p in pids)
    del it
    gc.collect()
    assert all(_gone(p) for p in pids), "a dropped iterator's workers stop"
    made = []
    loader._make_pool = lambda: made.append(DataLoader._make_pool(loader)) or made[-1]
    for _ in loader:
        break
    assert len(made[-1].pids) == 2 and all(_gone(p) for p in made[-1].pids), "break stops them"
    with pytest.raises(RuntimeError, match="in the loop body"):
        for _ in loader:
            raise RuntimeError("in the loop body")
    assert len(made) == 2 and len(made[-1].pids) == 2 and all(_gone(p) for p in made[-1].pids), (
        "an exception in the loop stops them"
    )
    it = iter(loader)
    pids = it._pool.pids
    it.close()
    assert all(_gone(p) for p in pids), "close() stops them"
    assert [b[1].tolist() for b in DataLoader(rows(4), batch_size=2, num_workers=2, timeout=GUARD)] == [
        [0, 1],
        [2, 3],
    ]


@forking
def test_a_workers_exception_reraises_and_the_next_epoch_works():
    class Fails(Dataset):
        def __getitem__(self, i):
            if i == 5 and get_worker_info() is not None and not os.environ.get("ADNN_OK"):
                raise KeyError("item 5")
            return i

        def __len__(self):
            return 8

    loader = DataLoader(Fails(), batch_size=2, num_workers=2, timeout=GUARD)
    with pytest.raises(KeyError, match="item 5") as raised:
        list(loader)
    assert any("worker" in note for note in getattr(raised.value, "__notes__", []))
    os.environ["ADNN_OK"] = "1"
    try:
        assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    finally:
        del os.environ["ADNN_OK"]


def _record(worker_id):
    np.random.seed(1000 + worker_id)  # torch users' habit; fetch reseeds per batch anyway


@forking
def test_worker_init_fn_and_worker_info():
    class Who(Dataset):
        def __getitem__(self, i):
            info = get_worker_info()
            return np.array([info.id, info.num_workers, info.seed % 1000, np.random.rand()])

        def __len__(self):
            return 8

    batches = list(
        DataLoader(Who(), batch_size=2, num_workers=2, worker_init_fn=_record, seed=1, timeout=GUARD)
    )
    ids = [int(b[0, 0]) for b in batches]
    assert ids == [0, 1, 0, 1], "batches go to the workers in turn, as torch's"
    assert all(b[0, 1] == 2 for b in batches)
    from adcore_nn.data.workers import worker_seed

    assert [int(b[0, 2]) for b in batches[:2]] == [worker_seed(1, 0, w) % 1000 for w in (0, 1)]
    # the legacy RNG seen by the items is the batch's, not worker_init_fn's
    solo = list(DataLoader(Who(), batch_size=2, num_workers=1, worker_init_fn=_record, seed=1, timeout=GUARD))
    assert [b[:, 3].tolist() for b in solo] == [b[:, 3].tolist() for b in batches]


@forking
def test_iterable_dataset_with_workers_split_by_worker_info():
    loader = DataLoader(Counting(10), batch_size=2, num_workers=2, timeout=GUARD)
    got = [b.tolist() for b in loader]
    # worker 0 yields 0,2,4,6,8 and worker 1 yields 1,3,5,7,9, batches taken in turn (torch's order)
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    torch = pytest.importorskip("torch", reason="torch is not installed: the hand-written check above ran")
    theirs = [
        b.tolist()
        for b in torch.utils.data.DataLoader(torch_counting(torch, 10), batch_size=2, num_workers=2)
    ]
    assert got == theirs


@forking
def test_persistent_workers_stop_with_the_loader_and_an_old_iterator_is_refused():
    loader = DataLoader(rows(12), batch_size=2, num_workers=2, persistent_workers=True, timeout=GUARD)
    old = iter(loader)
    next(old)
    new = iter(loader)
    assert [b[1].tolist() for b in new] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    with pytest.raises(InvalidValueError, match="replaced by a newer one"):
        next(old)
    pids = loader._pool.pids
    assert len(pids) == 2 and not any(_gone(p) for p in pids)
    del loader, old, new
    gc.collect()
    assert all(_gone(p) for p in pids), "a collected loader's persistent workers stop"
