"""adcore_nn.data.shared: batches through shared memory without a copy, freed with their last array."""

from __future__ import annotations

import gc
import os
import pickle
from collections import namedtuple

import numpy as np
import pytest
from adcore_nn.data import shared

pytestmark = pytest.mark.skipif(
    shared._posixshmem is None or not os.path.isdir(shared.SHM_DIR), reason="needs POSIX shared memory"
)

Pair = namedtuple("Pair", "x y")
_names = iter(range(10**9))


def name() -> str:
    return f"adnntest{os.getpid():x}_{next(_names)}"


def in_shm(n: str) -> bool:
    return os.path.exists(os.path.join(shared.SHM_DIR, n))


def mapped(n: str) -> bool:
    with open("/proc/self/maps") as f:
        return f"/dev/shm/{n}" in f.read()


def sample_batch():
    rng = np.random.default_rng(0)
    return {
        "image": rng.random((4, 3, 5), dtype=np.float32),
        "label": np.arange(4, dtype=np.int64),
        "pair": Pair(rng.standard_normal((4, 2))[:, ::-1], [np.array([1, 2], np.uint8), "text", 3.5]),
        "mask": np.array([True, False, True, True]),
        "complex": (rng.standard_normal(3) + 1j).astype(np.complex64),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "empty": np.zeros((0, 3)),
        "objects": np.array([{"a": 1}, None], dtype=object),
        "scalar": np.float64(2.5),
    }


def assert_same(got, want):
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want) if want.dtype.hasobject else got.tobytes() == want.tobytes()
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_same(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_same(a, b)
    else:
        assert got == want


def test_a_batch_round_trips_bit_for_bit_as_views_of_one_block():
    batch, n = sample_batch(), name()
    got_name, descriptor = shared.to_shared(batch, n)
    assert got_name == n and in_shm(n)
    assert len(pickle.dumps(descriptor)) < 2000  # a descriptor, not the data
    got = shared.from_shared(got_name, pickle.loads(pickle.dumps(descriptor)))
    assert not in_shm(n), "the name is removed once mapped: nothing can leak after this"
    assert_same(got, batch)
    # every shared array is a view of the same mapping, not a copy
    owners = {id(_root(got[k])) for k in ("image", "label", "mask", "complex", "big_endian")}
    owners.add(id(_root(got["pair"].x)))
    assert len(owners) == 1
    assert got["image"].flags.writeable, "a batch is the user's to modify, as torch's"


def _root(a: np.ndarray):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def test_the_block_lives_exactly_as_long_as_an_array_of_the_batch():
    n = name()
    got = shared.from_shared(*shared.to_shared((np.arange(1000.0), np.ones(7)), n))
    kept = got[1][2:5]  # a view of one array keeps the whole block
    del got
    gc.collect()
    assert mapped(n)
    assert np.array_equal(kept, np.ones(3))
    del kept
    gc.collect()
    assert not mapped(n), "the last array released unmaps the block"


def test_a_kept_batch_keeps_its_numbers_while_later_batches_arrive():
    kept = shared.from_shared(*shared.to_shared(np.full(100, 3.0), name()))
    later = [shared.from_shared(*shared.to_shared(np.full(100, float(i)), name())) for i in range(20)]
    del later
    gc.collect()
    for _ in range(20):
        shared.from_shared(*shared.to_shared(np.full(100, -1.0), name()))
    assert np.array_equal(kept, np.full(100, 3.0)), "a block is never reused while referenced"


def test_a_batch_without_arrays_travels_as_it_is():
    assert shared.to_shared(("a", 1, [2.0]), name()) == (None, ("a", 1, [2.0]))
    assert shared.from_shared(None, ("a", 1)) == ("a", 1)


def test_unlink_and_leftovers():
    prefix = name() + "_"
    for i in range(3):
        shared.to_shared(np.ones(5), f"{prefix}{i}")
    assert sorted(shared.unlink_leftovers(prefix)) == [f"{prefix}{i}" for i in range(3)]
    assert not any(in_shm(f"{prefix}{i}") for i in range(3))
    shared.unlink(f"{prefix}0")  # already gone: no error
    shared.unlink(None)


def test_serialized_list_reads_back_equal_items():
    items = [(i, i / 3.0, str(i)) for i in range(100)] + [{"a": [1, 2]}, None, np.arange(3)]
    s = shared.SerializedList(items)
    assert len(s) == len(items)
    for i in (0, 1, 50, 99, 100, 101):
        assert s[i] == items[i]
    assert np.array_equal(s[-1], items[-1]) and s[-2] is None
    assert s[10:13] == items[10:13]
    assert s[1] is not s[1], "each read is a new object: mutating it changes nothing stored"
    s[100]["a"].append(3)
    assert s[100] == {"a": [1, 2]}
    with pytest.raises(IndexError):
        s[len(items)]
    assert pickle.loads(pickle.dumps(s))[5] == items[5]
    assert len(shared.SerializedList([])) == 0


def test_pickling_shares_large_arrays_once_and_keeps_small_ones_inline():
    prefix = name() + "_d"
    big, small = np.arange(3 * shared.SHARE_FROM // 8, dtype=np.float64), np.arange(10)
    data = {"x": big, "x again": big, "y": small, "view": big[::2]}
    pickled, names = shared.dumps_sharing_arrays(data, prefix)
    try:
        assert names == [f"{prefix}0", f"{prefix}1"], "one block per large array (a view is one)"
        assert len(pickled) < 4096, "the data itself is not in the pickle"
        got = pickle.loads(pickled)
        assert_same(got["x"], big)
        assert_same(got["view"], big[::2])
        assert_same(got["y"], small)
        assert got["x"] is got["x again"], "pickle's memo keeps shared references shared"
        assert not got["x"].flags.writeable, "another process reads the block: a write raises"
        with pytest.raises(ValueError):
            got["x"][0] = 1.0
        assert got["y"].flags.writeable
    finally:
        assert sorted(shared.unlink_leftovers(prefix)) == names


def test_full_shared_memory_is_an_error_that_says_what_to_do_and_leaves_no_block(monkeypatch):
    import errno

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shared.os, "pwrite", full)
    n = name()
    with pytest.raises(OSError, match="no space left in shared memory.*--shm-size") as caught:
        shared.to_shared(np.ones(1000), n)
    assert caught.value.errno == errno.ENOSPC
    assert not in_shm(n)
