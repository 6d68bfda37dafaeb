"""The sparsity rules of the contractions and matmul (adcore_sparsity/rules/contractions.py): at
every sample of each op, against reverse mode's Jacobian, and on patterns known by hand: a
constant's zeros shape the pattern, a traced operand counts as non-zero everywhere."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from adcore_sparsity.extend import DENSE, Condition, Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore

CONTRACTIONS = "matmul dot vdot inner outer tensordot einsum kron cross multi_dot trace".split()


def unknown(x: np.ndarray) -> Unknown:
    return Unknown(np.shape(x), np.asarray(x).dtype)


def pattern(name: str, *inputs, traced: tuple[int, ...] = (0,), **params) -> list[np.ndarray]:
    """The global pattern of each input, dense bool (out.size, input.size): the inputs at `traced`
    are Unknown, the others constants."""
    out = adcore.ops[name].impl(*inputs, **params)
    shown = [unknown(x) if i in traced else x for i, x in enumerate(inputs)]
    deps = RULES[name](unknown(out), *shown, **params)
    return [dense_pattern(d, np.size(out), np.size(x)) for d, x in zip(deps, inputs)]


def tridiagonal(n: int) -> np.ndarray:
    return np.eye(n, k=-1) + 2 * np.eye(n) + np.eye(n, k=1)


@pytest.mark.parametrize("name", CONTRACTIONS)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", CONTRACTIONS)
def test_orders(name):
    rule = adcore.plugins.get_registry().rules["sparsity"][name]
    assert rule.exact
    assert rule.order == ("linear" if name == "trace" else "multilinear")


def test_constant_sparse_matrix_times_traced_vector_has_the_matrix_structure():
    a, x = tridiagonal(200), np.ones(200)
    _, px = pattern("matmul", a, x, traced=(1,))
    (pa,) = pattern("matmul", x, a, traced=(0,))[:1]  # x @ a: a's transpose (a is symmetric here)
    np.testing.assert_array_equal(px, a != 0)
    np.testing.assert_array_equal(pa, a.T != 0)
    # (its time: benchmarks/bench_sparsity_rules.py)


def test_matmul_batches_are_block_diagonal_and_broadcast():
    a, b = np.ones((2, 1, 2, 3)), np.ones((3, 3, 2))
    pa, pb = pattern("matmul", a, b, traced=(0, 1))
    # out (2, 3, 2, 2): out[p, q, i, k] depends on a[p, 0, i, :] and b[q, :, k]
    out = np.arange(24).reshape(2, 3, 2, 2)
    for p, q, i, k in np.ndindex(2, 3, 2, 2):
        want_a = np.zeros((2, 1, 2, 3), dtype=bool)
        want_a[p, 0, i, :] = True
        want_b = np.zeros((3, 3, 2), dtype=bool)
        want_b[q, :, k] = True
        np.testing.assert_array_equal(pa[out[p, q, i, k]], want_a.ravel())
        np.testing.assert_array_equal(pb[out[p, q, i, k]], want_b.ravel())


def test_vector_matmul_vector_is_dense():
    out = RULES["matmul"](Unknown((), np.float64), Unknown((3,), np.float64), Unknown((3,), np.float64))
    assert out == (DENSE, DENSE)
    assert RULES["vdot"](Unknown((), np.float64), Unknown((2, 2), np.float64), np.ones(4))[0] == DENSE


def test_a_constants_zeros_remove_dependencies():
    w = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 3.0]])
    x = np.ones(2)
    _, px = pattern("einsum", w, x, traced=(1,), subscripts="ij,j->i")
    np.testing.assert_array_equal(px, w != 0)  # row 1 of w is zero: out[1] depends on nothing


def test_locally_a_traced_operands_zeros_remove_dependencies():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    x = np.array([0.0, 1.5])
    deps = RULES["dot"](a @ x, a, x)
    pa = dense_pattern(deps[0], 2, 4)
    # d (a @ x)_i / d a_ij = x_j: nothing from column 0 at this point, where x_0 = 0
    np.testing.assert_array_equal(pa, np.array([[0, 1, 0, 0], [0, 0, 0, 1]], dtype=bool))
    check_rule("dot", (a, x), {})


def test_cross_component_depends_on_the_two_others():
    a, b = np.ones(3), np.ones(3)
    pa, pb = pattern("cross", a, b, traced=(0, 1))
    others = ~np.eye(3, dtype=bool)
    np.testing.assert_array_equal(pa, others)
    np.testing.assert_array_equal(pb, others)
    z_a, z_b = pattern("cross", np.ones(2), np.ones(2), traced=(0, 1))  # two 2-vectors: the z component
    np.testing.assert_array_equal(z_a, [[True, True]])
    np.testing.assert_array_equal(z_b, [[True, True]])


def test_trace_with_offset_and_axes_is_its_diagonal():
    x = np.ones((3, 2, 4))
    (p,) = pattern("trace", x, offset=1, axis1=2, axis2=0)
    # out[j] = sum_i x[i + offset, j, i]: i along axis1 (2), i + offset along axis2 (0), i in 0..1
    want = np.zeros((2, 3, 2, 4), dtype=bool)
    for i in range(2):
        for j in range(2):
            want[j, i + 1, j, i] = True
    np.testing.assert_array_equal(p, want.reshape(2, 24))


def test_kron_places_each_product():
    a, b = np.ones((2, 2)), np.array([[1.0, 0.0], [0.0, 1.0]])
    (pa,) = pattern("kron", a, b, traced=(0,))[:1]
    # kron(a, I) at (2i + k, 2j + l) = a[i, j] * I[k, l]: a[i, j] reaches the diagonal of its block
    want = np.zeros((4, 4, 2, 2), dtype=bool)
    for i, j, k in np.ndindex(2, 2, 2):
        want[2 * i + k, 2 * j + k, i, j] = True
    np.testing.assert_array_equal(pa, want.reshape(16, 4))


def test_einsum_ellipsis_and_implicit_output_against_reverse_mode():
    rng = np.random.default_rng(1)
    for subscripts, shapes in (
        ("...ij,...jk", ((2, 1, 2, 3), (4, 3, 2))),
        ("i...,j...", ((2, 3), (4, 3))),
        ("ii,ij", ((3, 3), (3, 2))),
    ):
        args = tuple(rng.normal(size=s) for s in shapes)
        check_rule("einsum", args, {"subscripts": subscripts})


def test_long_chains_keep_the_band_in_a_sparse_pattern():
    # a chain of constant tridiagonal matrices around a traced one: the pattern is banded, and the
    # rule builds it sparse (its time, on a machine of one's own: benchmarks/bench_sparsity_rules.py)
    n = 60
    t = tridiagonal(n)
    x = np.ones((n, n))
    out = adcore.ops["multi_dot"].impl(t, x, t, t)
    deps = RULES["multi_dot"](unknown(out), t, unknown(x), t, t)
    # out = t x t t: out[i, l] depends on x[j, k] for |i - j| <= 1 and |k - l| <= 2
    i, j = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1, np.linalg.matrix_power(t, 2) != 0
    assert sp.issparse(deps[1]) and deps[1].nnz == np.kron(i, j.T).sum()
    np.testing.assert_array_equal(deps[1].toarray() != 0, np.kron(i, j.T))


def test_a_condition_operand_counts_as_non_zero_everywhere():
    # dot(x > 0, y) in a global pattern: the comparison's booleans hold at this point only
    mask = np.array([True, False, True]).view(Condition)
    _, py = RULES["dot"](Unknown((), np.float64), mask, Unknown((3,), np.float64))
    assert py == DENSE
