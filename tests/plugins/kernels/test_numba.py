"""What the kernels share (`adcore_kernels._numba`): read-only views, so each kernel compiles once per
dtype. (winograd's transforms from PARALLEL_FROM elements on, the other variant: test_conv.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import _direct, conv, pooling
from adcore_kernels._numba import frozen


def test_frozen_is_a_read_only_contiguous_view_where_it_can_be():
    a = np.arange(12.0).reshape(3, 4)
    view = frozen(a)
    assert not view.flags.writeable and view.flags.c_contiguous and np.shares_memory(view, a)
    assert a.flags.writeable  # the caller's array is left as it was
    copy = frozen(a.T, np.float32)
    assert copy.dtype == np.float32 and copy.flags.c_contiguous and not copy.flags.writeable
    np.testing.assert_array_equal(copy, a.T)


def _read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_writeable_and_read_only_inputs_share_one_compiled_kernel(dtype):
    # numba types a read-only array apart from a writeable one: without `frozen`, the same call
    # with a frozen sample and with a fresh array compiled the kernel twice (up to 4x for two inputs)
    rng = np.random.default_rng(0)
    x, w, g = (
        rng.standard_normal(shape).astype(dtype) for shape in ((1, 2, 5, 5), (2, 2, 3, 3), (1, 2, 5, 5))
    )
    conv.conv2d(x, w, padding=1, algorithm="direct")
    pooling.max_pool2d_scatter(g, x, (3, 3), (1, 1), (1, 1))
    direct, scatter = len(_direct._forward.signatures), len(pooling._max_pool_scatter.signatures)
    for first, second in ((x, _read_only(w)), (_read_only(x), w), (_read_only(x), _read_only(w))):
        conv.conv2d(first, second, padding=1, algorithm="direct")
        pooling.max_pool2d_scatter(_read_only(g), first, (3, 3), (1, 1), (1, 1))
    pooling.max_pool2d_scatter(np.broadcast_to(g, (2, *g.shape)), x, (3, 3), (1, 1), (1, 1))
    assert len(_direct._forward.signatures) == direct
    assert len(pooling._max_pool_scatter.signatures) == scatter
