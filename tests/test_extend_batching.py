"""adcore.extend.batching's helpers: an example's axis params as the batched value's."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import ops
from adcore.extend.batching import by_axis, leading, shifted_axis


@pytest.mark.parametrize(
    ("axis", "shifted"), [(0, 1), (1, 2), (-1, -1), (-2, -2), ((0, -1), (1, -1)), (None, (1, 2))]
)
def test_shifted_axis_names_the_same_axis_past_the_batch_axis(axis, shifted):
    assert shifted_axis(axis, 2) == shifted


@pytest.mark.parametrize("axis", [2, -3, (0, -3)])
def test_an_axis_out_of_range_for_an_example_stays_out_of_range(axis):
    # -3 of a 3-d batch of 2-d examples would be the batch axis: a sum over the batch, not an error
    with pytest.raises(np.exceptions.AxisError):
        np.sum(np.zeros((4, 2, 3)), axis=shifted_axis(axis, 2))


def test_vmap_of_a_reduction_over_an_axis_the_example_lacks_raises_as_the_loop():
    xs = np.ones((4, 2, 3))
    with pytest.raises(np.exceptions.AxisError):
        ops.sum(xs[0], axis=-3)
    with pytest.raises(np.exceptions.AxisError):
        adcore.vmap(lambda x: ops.sum(x, axis=-3))(xs)


def test_by_axis_fills_in_the_default_axis_a_call_left_out():
    # vmap passes only the params a call gave: sum's default None on the batch would sum it away
    rule = by_axis(ops.sum, axis=None)
    xs = np.arange(24.0).reshape(4, 2, 3)
    out, dim = rule((0,), xs)
    np.testing.assert_array_equal(out, [np.sum(x) for x in xs])
    out, dim = rule((2,), np.moveaxis(xs, 0, 2), axis=0)
    np.testing.assert_array_equal(np.moveaxis(out, dim, 0), [np.sum(x, axis=0) for x in xs])
    assert rule((0,), xs, axis=-3) is NotImplemented  # an axis no example has: the loop's error


def test_by_axis_without_none_means_all_flattens_each_example():
    rule = by_axis(ops.cumsum, rounds_by_order=False, none_means_all=False, axis=None)
    xs = np.arange(24.0).reshape(4, 2, 3)
    out, dim = rule((0,), xs)
    np.testing.assert_array_equal(out, [np.cumsum(x) for x in xs])


def test_leading_leaves_a_vector_operand_to_the_loop_and_lines_up_leading_axes():
    rule = leading(ops.matmul, (2, 2))
    assert rule((0, None), np.ones((4, 3)), np.ones((3, 2))) is NotImplemented  # 1-d examples
    a, b = np.random.default_rng(0).normal(size=(4, 5, 2, 3)), np.random.default_rng(1).normal(size=(3, 2))
    out, dim = rule((0, None), a, b)
    np.testing.assert_allclose(out, [x @ b for x in a], rtol=1e-14)
    out, dim = rule((None, 0), b.T[None].repeat(5, 0), np.stack([b] * 4))  # (5, 2, 3) @ batched (3, 2)
    assert out.shape == (4, 5, 2, 2)
