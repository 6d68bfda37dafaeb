"""adcore.extend: the helpers rule and backend authors use, with values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import extend
from adcore.hookspecs import RULE_KINDS


def test_the_helpers_the_docs_name_are_public():
    # docs/plugins.md writes rules with adcore.unbroadcast and adcore.lift
    assert adcore.extend is extend
    assert (adcore.unbroadcast, adcore.lift, adcore.batched_axis) == (
        extend.unbroadcast,
        extend.lift,
        extend.batched_axis,
    )
    assert set(RULE_KINDS) >= {"vjp", "jvp", "sympy"}
    assert not hasattr(extend, "RULE_KINDS")  # the contract lives in hookspecs, with the hooks


def test_unbroadcast_sums_the_broadcast_axes_back():
    # a (2, 1) input broadcast against (3, 2, 4): summed over the new leading axis and the 4 copies
    g = np.arange(24.0).reshape(3, 2, 4)
    np.testing.assert_array_equal(extend.unbroadcast(g, np.zeros((2, 1))), g.sum(axis=(0, 2))[:, None])
    assert extend.unbroadcast(g, 0.0).shape == ()  # a Python number is a 0-d target


def test_lift_lines_a_batched_tangent_up_under_the_output():
    t = np.ones((5, 3))  # 5 directions of a (3,) input, whose output is (2, 3)
    assert extend.lift(t, np.zeros((2, 3))).shape == (5, 1, 3)


@pytest.mark.parametrize(
    ("axis", "ndim", "moved"), [(None, 2, (1, 2)), (0, 2, 1), (-1, 2, -1), ((0, -1), 3, (1, -1))]
)
def test_batched_axis_moves_an_axis_past_the_batch(axis, ndim, moved):
    assert extend.batched_axis(axis, ndim) == moved


def test_tie_weights_share_the_derivative_of_max_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    weights = extend.tie_weights(x, x.max(axis=1), axis=1, dtype=np.float64)
    np.testing.assert_array_equal(weights, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])


def test_prod_partials_with_zeros_are_the_products_of_the_others():
    # d prod / d x_i = prod of the others: (0*3, 2*3, 2*0) at a lone zero; all 0 with two zeros
    np.testing.assert_array_equal(extend.prod_partials(np.array([2.0, 0.0, 3.0]), 0.0, None), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(extend.prod_partials(np.array([0.0, 0.0, 3.0]), 0.0, None), [0.0, 0.0, 0.0])
