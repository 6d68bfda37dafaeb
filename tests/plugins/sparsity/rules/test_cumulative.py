"""The sparsity rules of cumsum, cumprod and diff (adcore_sparsity/rules/cumulative.py): at every
sample, against reverse mode's Jacobian, and by hand: lower triangles per fibre, diff's bands with
prepend and append."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore


def global_pattern(name: str, x: np.ndarray, **params) -> np.ndarray:
    out = adcore.ops[name].impl(x, **params)
    (dep,) = RULES[name](Unknown(np.shape(out), out.dtype), Unknown(x.shape, x.dtype), **params)
    return dense_pattern(dep, out.size, x.size)


def by_hand(name: str, x: np.ndarray, **params) -> np.ndarray:
    """The pattern of an affine op from its impl on one-hot inputs, less its value at 0 (prepend and
    append are constants): cumsum and diff, whose weights never cancel."""
    impl = adcore.ops[name].impl
    at_zero = np.ravel(impl(np.zeros_like(x), **params))
    basis = np.eye(x.size).reshape((-1, *x.shape))
    return np.stack([np.ravel(impl(e, **params)) - at_zero for e in basis], axis=1) != 0


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "diff"])
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


def test_orders_and_exactness():
    assert (RULES["cumsum"].order, RULES["cumsum"].exact) == ("linear", True)
    assert (RULES["diff"].order, RULES["diff"].exact) == ("linear", True)
    assert (RULES["cumprod"].order, RULES["cumprod"].exact) == ("nonlinear", False)


@pytest.mark.parametrize("shape, axis", [((5,), 0), ((2, 3), None), ((2, 3), 0), ((3, 2, 2), -1), ((), None)])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_ops_are_lower_triangular_per_fibre(name, shape, axis):
    x = np.ones(shape)
    np.testing.assert_array_equal(global_pattern(name, x, axis=axis), by_hand("cumsum", x, axis=axis))


def test_cumsum_of_a_vector_is_the_lower_triangle():
    np.testing.assert_array_equal(global_pattern("cumsum", np.ones(4), axis=0), np.tri(4, dtype=bool))


def test_cumprod_past_a_zero_keeps_its_dependencies():
    """Past a zero every product is 0 and so is its first derivative by the other elements, but not
    the second derivative by the zero and another element: the pattern keeps them (not exact)."""
    x = np.array([2.0, 0.0, 3.0])
    (dep,) = RULES["cumprod"](np.cumprod(x), x, axis=0)
    np.testing.assert_array_equal(dense_pattern(dep, 3, 3), np.tri(3, dtype=bool))
    check_rule("cumprod", (x,), {"axis": 0})


@pytest.mark.parametrize(
    "shape, params",
    [
        ((6,), {}),
        ((6,), {"n": 3}),
        ((3, 4), {"axis": 0}),
        ((3, 4), {"n": 2, "prepend": 0.5}),
        ((3, 4), {"axis": 0, "append": np.ones((2, 4))}),
        ((4,), {"n": 2, "prepend": np.array([1.0, -1.0]), "append": 2.0}),
        ((4,), {"n": 0}),
        ((3,), {"n": 5}),
    ],
)
def test_diff_is_a_band_of_n_plus_one(shape, params):
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    np.testing.assert_array_equal(global_pattern("diff", x, **params), by_hand("diff", x, **params))


def test_diff_of_a_vector_is_bidiagonal():
    want = np.eye(4, 5, dtype=bool) | np.eye(4, 5, 1, dtype=bool)
    np.testing.assert_array_equal(global_pattern("diff", np.ones(5)), want)


def test_large_diff_and_cumsum_are_sparse_bands_and_triangles():
    # (their time: benchmarks/bench_sparsity_rules.py)
    (band,) = RULES["diff"](Unknown((100, 998), np.float64), Unknown((100, 1000), np.float64), n=2, axis=1)
    (triangles,) = RULES["cumsum"](Unknown((1000, 40), np.float64), Unknown((1000, 40), np.float64), axis=1)
    assert band.nnz == 100 * 998 * 3 and triangles.nnz == 1000 * 40 * 41 // 2
