"""The sparsity rules of the shape ops and sort (adcore_sparsity/rules/shapes.py): at every sample
of each op, against reverse mode's Jacobian, and on patterns known by hand."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import DENSE, Condition, Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore

SHAPE_OPS = (
    "transpose reshape broadcast_to expand_dims squeeze concatenate stack getitem scatter_add swapaxes "
    "moveaxis rollaxis ravel atleast_1d atleast_2d atleast_3d diag diagonal diagflat tril triu flip flipud "
    "fliplr rot90 roll repeat tile pad take take_along_axis astype sort"
).split()


def unknown(x: np.ndarray) -> Unknown:
    return Unknown(np.shape(x), np.asarray(x).dtype)


def global_pattern(name: str, *inputs: np.ndarray, **params) -> list[np.ndarray]:
    """The rule's global pattern of each input, dense bool (out.size, input.size)."""
    out = adcore.ops[name].impl(*inputs, **params)
    deps = RULES[name](unknown(out), *(unknown(x) for x in inputs), **params)
    return [dense_pattern(d, np.size(out), np.size(x)) for d, x in zip(deps, inputs)]


def local_pattern(name: str, *inputs: np.ndarray, **params) -> list[np.ndarray]:
    out = adcore.ops[name].impl(*inputs, **params)
    deps = RULES[name](out, *inputs, **params)
    return [dense_pattern(d, np.size(out), np.size(x)) for d, x in zip(deps, inputs)]


@pytest.mark.parametrize("name", SHAPE_OPS)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", SHAPE_OPS)
def test_rules_are_linear_and_exact(name):
    rule = adcore.plugins.get_registry().rules["sparsity"][name]
    assert (rule.order, rule.exact) == ("linear", True)


def test_getitem_of_a_large_array_is_an_exact_sparse_gather():
    # (its time: benchmarks/bench_sparsity_rules.py)
    x = np.zeros(100_000)
    index = (np.arange(0, 100_000, 7),)
    (pattern,) = RULES["getitem"](unknown(x[index]), unknown(x), index=index)
    (sliced,) = RULES["getitem"](unknown(x[5:-5:3]), unknown(x), index=slice(5, -5, 3))
    assert pattern.shape == (x[index].size, x.size) and pattern.nnz == x[index].size
    np.testing.assert_array_equal(pattern.tocsr().indices, np.arange(0, 100_000, 7))
    np.testing.assert_array_equal(sliced.tocsr().indices, np.arange(100_000)[5:-5:3])


def condition(values) -> Condition:
    return np.asarray(values, dtype=bool).view(Condition)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("getitem", {"index": condition([True, False, True, True])}),
        ("getitem", {"index": (condition([True, False, True, True]), 0)}),
        ("take", {"indices": condition([True, False])}),
        ("take_along_axis", {"indices": condition([True, False, True, True]), "axis": 0}),
    ],
)
def test_an_index_from_a_comparison_of_a_traced_value_is_refused_globally(name, params):
    x = np.arange(4.0)
    with pytest.raises(adcore.ValueDependentError, match="local=True"):
        RULES[name](Unknown((3,), np.float64), unknown(x), **params)


def test_scatter_add_with_a_comparison_index_is_refused():
    with pytest.raises(adcore.ValueDependentError, match="local=True"):
        RULES["scatter_add"](
            Unknown((4,), np.float64), Unknown((2,), np.float64), index=condition([1, 0, 1, 0]), shape=(4,)
        )


def test_a_constant_boolean_mask_is_structure():
    x = np.arange(1.0, 5.0)
    mask = np.array([True, False, False, True])
    (pattern,) = global_pattern("getitem", x, index=mask)
    np.testing.assert_array_equal(pattern, np.eye(4, dtype=bool)[[0, 3]])


def test_scatter_add_repeats_and_broadcasts():
    values = np.ones((2,))
    index = (np.array([0, 2, 2]), slice(None))
    (pattern,) = global_pattern("scatter_add", values, index=index, shape=(3, 2))
    # out[i, j] gets values[j] for each of the rows 0, 2, 2
    want = np.zeros((6, 2), dtype=bool)
    want[[0, 4], 0] = want[[1, 5], 1] = True
    np.testing.assert_array_equal(pattern, want)
    check_rule("scatter_add", (np.array([1.5, -2.0]),), {"index": index, "shape": (3, 2)})


def test_pad_constants_are_not_dependencies():
    x = np.arange(1.0, 4.0)
    (pattern,) = global_pattern("pad", x, pad_width=(1, 2), constant_values=7.0)
    np.testing.assert_array_equal(pattern, np.eye(6, 3, k=-1, dtype=bool))


def test_concatenate_gives_each_input_its_block():
    a, b, c = np.ones(2), np.ones(3), np.ones(1)
    pa, pb, pc = global_pattern("concatenate", a, b, c, axis=0)
    eye = np.eye(6, dtype=bool)
    np.testing.assert_array_equal(pa, eye[:, :2])
    np.testing.assert_array_equal(pb, eye[:, 2:5])
    np.testing.assert_array_equal(pc, eye[:, 5:])


def test_roll_is_a_cyclic_shift():
    x = np.arange(5.0)
    (pattern,) = global_pattern("roll", x, shift=2)
    np.testing.assert_array_equal(pattern, np.roll(np.eye(5, dtype=bool), 2, axis=0))


def test_sort_globally_is_its_fibre_and_dense_over_the_whole_array():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    (rows,) = global_pattern("sort", x, axis=1)
    np.testing.assert_array_equal(rows, np.kron(np.eye(2), np.ones((3, 3))).astype(bool))
    assert RULES["sort"](Unknown((6,), np.float64), unknown(x), axis=None) == (DENSE,)
    assert RULES["sort"](Unknown((2, 3), np.float64), unknown(x), axis=(0, 1)) == (DENSE,)


def test_sort_at_a_point_is_its_permutation_ties_in_stable_order():
    x = np.array([2.0, 1.0, 2.0, 0.5])
    (pattern,) = local_pattern("sort", x, axis=-1)
    np.testing.assert_array_equal(pattern, np.eye(4, dtype=bool)[[3, 1, 0, 2]])
    check_rule("sort", (x,), {"axis": -1})  # reverse mode's derivative agrees at the tie
    (flat,) = local_pattern("sort", np.array([[3.0, 1.0], [2.0, 0.0]]), axis=None)
    np.testing.assert_array_equal(flat, np.eye(4, dtype=bool)[[3, 1, 2, 0]])


def test_astype_is_the_identity():
    x = np.ones((2, 3), dtype=np.float32)
    (pattern,) = global_pattern("astype", x, dtype=np.float64)
    np.testing.assert_array_equal(pattern, np.eye(6, dtype=bool))


def test_a_refused_pad_mode_raises_the_ops_typed_error():
    with pytest.raises(adcore.UnsupportedFunctionError):
        RULES["pad"](Unknown((5,), np.float64), Unknown((3,), np.float64), pad_width=1, mode="mean")
