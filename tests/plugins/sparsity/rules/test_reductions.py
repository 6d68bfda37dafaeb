"""The sparsity rules of the reductions (adcore_sparsity/rules/reductions.py): at every sample and
kink of each op, against reverse mode's Jacobian, and by hand: fibres along axes, ties of the order
statistics, sum's where= mask, NaNs, var over fibres of one, average's weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from adcore_sparsity.extend import Condition, Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore

REDUCTIONS = "sum mean prod max min var std ptp average nansum nanmean median quantile percentile".split()
PICKING = "max min ptp median quantile percentile".split()


def unknown(x) -> Unknown:
    return Unknown(np.shape(x), np.asarray(x).dtype)


def patterns(name: str, *inputs, traced: tuple[int, ...] = (0, 1), **params) -> tuple[list, list]:
    """The rule's (global, local) pattern of each input, dense bool (out.size, input.size)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # mean of an empty (all-masked) slice
        warnings.simplefilter("ignore", RuntimeWarning)
        out = adcore.ops[name].impl(*inputs, **params)
    shown = [unknown(x) if i in traced else x for i, x in enumerate(inputs)]
    glob = RULES[name](unknown(out), *shown, **params)
    local = RULES[name](out, *inputs, **params)
    size = np.size(out)
    return (
        [dense_pattern(d, size, np.size(x)) for d, x in zip(glob, inputs)],
        [dense_pattern(d, size, np.size(x)) for d, x in zip(local, inputs)],
    )


@pytest.mark.parametrize("name", REDUCTIONS)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", [n for n in PICKING if adcore.ops[n].kinks])
def test_order_statistics_are_exact_at_their_ties(name):
    for kink in adcore.ops[name].kinks:
        args = tuple(np.asarray(a, dtype=np.float64) for a in kink.inputs)
        check_rule(name, args, dict(kink.params))
        out = adcore.ops[name].impl(*args, **kink.params)
        (dep,) = RULES[name](out, *args, **kink.params)
        want = np.asarray(kink.jacobians[0]).reshape(np.size(out), -1) != 0
        np.testing.assert_array_equal(dense_pattern(dep, np.size(out), np.size(args[0])), want)


@pytest.mark.parametrize(
    "name, order, exact",
    [
        ("sum", "linear", True),
        ("prod", "nonlinear", False),
        ("max", "linear", True),
        ("var", "nonlinear", True),
    ]
    + [("average", "nonlinear", True), ("median", "linear", True), ("nanmean", "linear", True)],
)
def test_orders_and_exactness(name, order, exact):
    assert (RULES[name].order, RULES[name].exact) == (order, exact)


def fibre_pattern(shape: tuple[int, ...], axis) -> np.ndarray:
    """The (out, in) pattern of a sum over `axis`, from the Jacobian of np.sum by hand: one-hot
    inputs summed."""
    x = np.eye(int(np.prod(shape))).reshape((-1, *shape))
    return np.stack([np.sum(e, axis=axis).ravel() for e in x], axis=1) != 0


@pytest.mark.parametrize("shape, axis", [((2, 3, 4), 1), ((2, 3, 4), (0, 2)), ((2, 3, 4), None), ((), None)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_depends_on_its_fibre(shape, axis, keepdims):
    x = np.ones(shape)
    (g,), (p,) = patterns("sum", x, axis=axis, keepdims=keepdims)
    want = fibre_pattern(shape, axis)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(p, want)


def test_sum_where_keeps_the_selected_elements_even_globally():
    x = np.arange(6.0).reshape(2, 3)
    mask = np.array([[True, False, True], [False, True, True]])
    (g,), (p,) = patterns("sum", x, axis=1, where=mask)
    want = np.zeros((2, 6), dtype=bool)
    want[0, [0, 2]] = want[1, [4, 5]] = True
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(p, want)
    (g,), _ = patterns("mean", x, axis=0, where=np.array([True, False, True]))
    np.testing.assert_array_equal(g.any(axis=0), [True, False, True, True, False, True])


def test_sum_where_a_traced_comparison_keeps_every_element_globally():
    x = np.arange(6.0).reshape(2, 3)
    mask = (x > 2).view(Condition)
    (dep,) = RULES["sum"](Unknown((2,), np.float64), unknown(x), axis=1, where=mask)
    np.testing.assert_array_equal(dense_pattern(dep, 2, 6), fibre_pattern((2, 3), 1))


def test_max_and_min_keep_every_tie_at_a_point():
    x = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]])
    (g,), (p,) = patterns("max", x, axis=1)
    np.testing.assert_array_equal(g, fibre_pattern((2, 3), 1))
    np.testing.assert_array_equal(p, [[1, 0, 1, 0, 0, 0], [0, 0, 0, 0, 1, 0]])
    check_rule("max", (x,), {"axis": 1})
    _, (p,) = patterns("min", x, axis=None)
    np.testing.assert_array_equal(p, [[0, 0, 0, 1, 0, 0]])


def test_max_of_a_nan_slice_keeps_its_nans():
    x = np.array([1.0, np.nan, 2.0, np.nan])
    _, (p,) = patterns("max", x)
    np.testing.assert_array_equal(p, [[False, True, False, True]])


def test_ptp_keeps_the_maxima_and_the_minima():
    x = np.array([3.0, 1.0, 2.0, 3.0, 1.5])
    _, (p,) = patterns("ptp", x)
    np.testing.assert_array_equal(p, [[True, True, False, True, False]])
    check_rule("ptp", (x,), {})


@pytest.mark.parametrize(
    "method, picked", [("linear", [0, 2]), ("lower", [2]), ("higher", [0]), ("nearest", [0])]
)
def test_quantile_keeps_the_order_statistics_it_interpolates(method, picked):
    x = np.array([5.0, 1.0, 2.0, 9.0, 7.0])  # sorted slots 0..4 hold x[1], x[2], x[0], x[4], x[3]
    (g,), (p,) = patterns("quantile", x, q=0.4, method=method)  # virtual rank 1.6: slots 1 and 2
    assert g.all()
    np.testing.assert_array_equal(np.flatnonzero(p), picked)
    check_rule("quantile", (x,), {"q": 0.4, "method": method})


def test_quantile_with_several_q_and_keepdims_maps_each_q_to_its_rows():
    x = np.array([[4.0, 1.0, 3.0], [0.0, 6.0, 5.0]])
    q = np.array([0.0, 1.0])
    (g,), (p,) = patterns("quantile", x, q=q, axis=1, keepdims=True)
    # out (2 q, 2 rows, 1): q = 0 takes each row's min, q = 1 its max
    np.testing.assert_array_equal(
        p, [[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]]
    )
    np.testing.assert_array_equal(g, np.vstack([fibre_pattern((2, 3), 1)] * 2))
    _, (p100,) = patterns("percentile", x, q=q * 100, axis=1, keepdims=True)
    np.testing.assert_array_equal(p100, p)


def test_median_of_an_odd_fibre_is_its_middle_element():
    x = np.array([[4.0, 1.0, 3.0], [0.0, 6.0, 5.0]])
    (g,), (p,) = patterns("median", x, axis=0)
    np.testing.assert_array_equal(p, np.eye(3, 6, dtype=bool) | np.eye(3, 6, 3, dtype=bool))
    np.testing.assert_array_equal(g, fibre_pattern((2, 3), 0))
    _, (p,) = patterns("median", x[0])
    np.testing.assert_array_equal(p, [[False, False, True]])


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
def test_nan_reductions_skip_nans_at_a_point(name):
    x = np.array([[1.0, np.nan], [np.nan, np.nan]])
    (g,), (p,) = patterns(name, x, axis=1)
    np.testing.assert_array_equal(g, fibre_pattern((2, 2), 1))
    np.testing.assert_array_equal(p, [[1, 0, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("name", ["var", "std"])
def test_spread_over_fibres_of_one_has_no_dependency(name):
    x = np.arange(6.0).reshape(3, 2, 1)
    (g,), _ = patterns(name, x, axis=2)
    assert not g.any()
    check_rule(name, (x,), {"axis": 2})
    (g,), _ = patterns(name, x, axis=0, ddof=1)
    np.testing.assert_array_equal(g, fibre_pattern((3, 2, 1), 0))


@pytest.mark.parametrize("name", ["var", "std", "prod", "mean"])
def test_smooth_reductions_keep_the_fibre(name):
    x = np.array([[1.0, 0.0, 0.0], [2.0, 3.0, 4.0]])  # prod's zeros: first derivatives 0, second not
    (g,), (p,) = patterns(name, x, axis=1)
    np.testing.assert_array_equal(g, fibre_pattern((2, 3), 1))
    np.testing.assert_array_equal(p, g)


def test_average_with_one_dimensional_weights_couples_every_weight():
    a, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0])
    (ga, gw), (pa, pw) = patterns("average", a, w, axis=0)
    np.testing.assert_array_equal(ga, fibre_pattern((2, 3), 0))
    np.testing.assert_array_equal(gw, np.ones((3, 2), dtype=bool))
    np.testing.assert_array_equal(pa, ga)
    check_rule("average", (a, w), {"axis": 0})


def test_average_with_full_weights_follows_the_fibres():
    a, w = np.arange(6.0).reshape(2, 3), np.arange(1.0, 7.0).reshape(2, 3)
    (ga, gw), _ = patterns("average", a, w, axis=1, keepdims=True)
    np.testing.assert_array_equal(ga, fibre_pattern((2, 3), 1))
    np.testing.assert_array_equal(gw, ga)
    check_rule("average", (a, w), {"axis": 1, "keepdims": True})


def test_a_global_pattern_never_reads_its_unknowns():
    x = Unknown((2, 3), np.float64)
    for name in REDUCTIONS:
        args = (x, Unknown((2, 3), np.float64)) if name == "average" else (x,)
        params = {"q": 0.5} if name in ("quantile", "percentile") else {}
        deps = RULES[name](Unknown((), np.float64), *args, **params)
        assert len(deps) == len(args)


def test_large_reductions_are_sparse():
    # (their time: benchmarks/bench_sparsity_rules.py)
    x = np.random.default_rng(0).random((300, 300))
    (summed,) = RULES["sum"](Unknown((300,), np.float64), unknown(x), axis=1)
    (largest,) = RULES["max"](np.max(x, axis=0), x, axis=0)
    (middle,) = RULES["median"](np.median(x, axis=1), x, axis=1)
    assert all(p.shape == (300, x.size) for p in (summed, largest, middle))
    # a sum's row reads its whole row of x, a max its argmax, a median of 300 its two middle entries
    assert (summed.nnz, largest.nnz, middle.nnz) == (x.size, 300, 600)
    np.testing.assert_array_equal(largest.tocsr().indices, np.argmax(x, axis=0) * 300 + np.arange(300))


@pytest.mark.parametrize(
    "name, out_shape, in_shape, params",
    [
        ("sum", (), (0,), {}),
        ("sum", (0,), (0, 3), {"axis": 1}),
        ("max", (3,), (0, 3), {"axis": 0}),
        ("var", (2,), (2, 3), {"axis": 1}),
        ("logsumexp", (), (0,), {}),
        ("median", (), (), {}),
    ],
)
def test_empty_and_zero_dimensional_inputs_give_patterns_of_their_shape(name, out_shape, in_shape, params):
    (dep,) = RULES[name](Unknown(out_shape, np.float64), Unknown(in_shape, np.float64), **params)
    assert dep.shape == (int(np.prod(out_shape)), int(np.prod(in_shape)))
