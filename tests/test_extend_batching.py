"""adcore.extend.batching's helpers: an example's axis params as the batched value's."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import ops
from adcore.extend.batching import shifted_axis


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
