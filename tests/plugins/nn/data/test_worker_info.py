"""adcore_nn.data.worker_info: torch's WorkerInfo and get_worker_info()."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.data import WorkerInfo, default_collate, get_worker_info
from adcore_nn.data import worker_info as module
from adcore_nn.data.fetch import fetch

from adcore.errors import InvalidValueError


def test_main_process_has_no_worker_info():
    assert get_worker_info() is None


def test_set_and_read_and_read_only():
    info = WorkerInfo(id=1, num_workers=4, seed=99, dataset="ds")
    try:
        module._set(info)
        got = get_worker_info()
        assert (got.id, got.num_workers, got.seed, got.dataset) == (1, 4, 99, "ds")
        assert "id=1" in repr(got)
        with pytest.raises(InvalidValueError, match="read-only"):
            got.id = 2
        assert got.id == 1
    finally:
        module._set(None)
    assert get_worker_info() is None


def test_rng_is_the_batch_generator_inside_a_fetch():
    info = WorkerInfo(id=0, num_workers=1, seed=0, dataset=None)

    class Draws:
        def __getitem__(self, i):
            return np.array([info.rng.random()])

    a = fetch(Draws(), [0, 1], default_collate, 3, 0, 0, True)
    from adcore_nn.data import item_rng

    class Same:
        def __getitem__(self, i):
            return np.array([item_rng().random()])

    b = fetch(Same(), [0, 1], default_collate, 3, 0, 0, True)
    np.testing.assert_array_equal(a, b)
