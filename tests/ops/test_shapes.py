"""scatter_add of adcore/ops/shapes.py: plain assignment for basic indices, np.add.at for advanced ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from adcore.ops.shapes import _scatter_add, is_basic_index


def _add_at(values, index, shape):
    """The reference: np.add.at on zeros, whatever the index."""
    out = np.zeros(shape, dtype=np.result_type(values))
    np.add.at(out, index, values)
    return out


@st.composite
def _basic_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    target = np.zeros(shape)[index].shape
    # values of the selection's shape, or a trailing part of it that broadcasts
    cut = draw(st.integers(0, len(target)))
    values_shape = target[cut:]
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    values = draw(hnp.arrays(dtype, values_shape, elements=st.floats(-4, 4, width=32)))
    return values, index, shape


@settings(max_examples=300, deadline=None)
@given(_basic_case())
def test_scatter_add_by_assignment_equals_add_at_on_basic_indices(case):
    values, index, shape = case
    assert is_basic_index(index)
    got = _scatter_add(values, index, shape)
    want = _add_at(values, index, shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "index",
    [
        1,
        np.int64(-1),
        slice(None, None, -1),
        (slice(None), 2),
        (-1, slice(None, None, -2)),
        (Ellipsis, None, 0),
        (None, slice(1, 3), Ellipsis),
        (),
    ],
)
def test_basic_indices_are_assigned(index):
    assert is_basic_index(index)
    values = np.arange(1.0, 1.0 + np.zeros((4, 3))[index].size).reshape(np.zeros((4, 3))[index].shape)
    np.testing.assert_array_equal(_scatter_add(values, index, (4, 3)), _add_at(values, index, (4, 3)))


@pytest.mark.parametrize(
    "index",
    [
        (np.array([0, 2, 2]),),  # repeated: must accumulate
        np.array([1, 1]),
        [0, 0, 3],
        (np.array([0, 3, 0]), np.array([2, 0, 2])),
        (np.array([True, False, True, True]),),
        True,  # a bool is advanced indexing (a new axis of length 1), not the int 1
        np.bool_(True),
        np.array(2),  # a 0-d array: left to np.add.at
        (slice(None), np.array([0, 0])),
    ],
)
def test_advanced_indices_accumulate_repeats(index):
    assert not is_basic_index(index)
    target = np.zeros((4, 3))[index].shape
    values = np.arange(1.0, 1.0 + np.prod(target)).reshape(target)
    got = _scatter_add(values, index, (4, 3))
    np.testing.assert_array_equal(got, _add_at(values, index, (4, 3)))
    assert got.sum() == pytest.approx(values.sum())  # nothing lost to an overwrite


def test_repeated_index_accumulates():
    got = _scatter_add(np.array([1.0, 2.0, 3.0]), (np.array([0, 2, 2]),), (4,))
    np.testing.assert_array_equal(got, [1.0, 0.0, 5.0, 0.0])
