"""The sparsity rules of the solve family and matrix_power (adcore_sparsity/rules/linalg.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore

# cholesky's reverse and forward rules leave rounding (~1e-17) at entries whose derivative is 0
# (a row of L reading a later row of a): compare the non-zeros above that noise
NOISY = {"cholesky": 1e-12}
OPS = ("inv", "solve", "cholesky", "det", "logabsdet", "slogdet_packed", "solve_triangular", "cho_solve")


def rule(name: str):
    return adcore.plugins.get_registry().rules["sparsity"][name]


def pattern(name: str, ans_shape, *inputs, **params) -> list[np.ndarray]:
    """The rule's global pattern (every input Unknown) as dense bool matrices."""
    hidden = [Unknown(s, np.float64) for s in inputs]
    deps = rule(name)(Unknown(ans_shape, np.float64), *hidden, **params)
    size = int(np.prod(ans_shape))
    return [dense_pattern(d, size, int(np.prod(s))) for d, s in zip(deps, inputs)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", [*OPS, "matrix_power"])
def test_rule_holds_at_the_op_samples(name, dtype):
    atol = NOISY.get(name, 0.0) * (1e5 if dtype == np.float32 else 1)
    assert check_op(name, dtype=dtype, atol=atol) > 0


def test_a_stack_is_block_diagonal():
    (p,) = pattern("inv", (3, 4, 4), (3, 4, 4))
    assert np.array_equal(p, np.kron(np.eye(3), np.ones((16, 16))).astype(bool))
    (p,) = pattern("det", (3,), (3, 2, 2))
    assert np.array_equal(p, np.kron(np.eye(3), np.ones((1, 4))).astype(bool))


def test_a_matrix_broadcast_over_the_right_hand_side_batch():
    pa, pb = pattern("solve", (2, 3, 2), (3, 3), (2, 3, 2))
    assert pa.all()  # every solution reads the one matrix
    # column j of x reads column j of b, in its own batch only
    expected = np.kron(np.eye(2), np.kron(np.ones((3, 3)), np.eye(2)))
    assert np.array_equal(pb, expected.astype(bool))


def test_solve_triangular_reads_the_triangle_up_to_its_row():
    n = 4
    pa, pb = pattern("solve_triangular", (n,), (n, n), (n,), lower=True)
    assert np.array_equal(pb, np.tri(n, dtype=bool))  # forward substitution
    # x_3 reads all of the lower triangle; x_0 only a[0, 0]
    assert np.array_equal(pa[3].reshape(n, n), np.tri(n, dtype=bool))
    assert np.flatnonzero(pa[0]).tolist() == [0]
    # the transpose of a lower triangle is solved upward: x_0 reads every row of b
    _, pb = pattern("solve_triangular", (n,), (n, n), (n,), lower=True, trans="T")
    assert np.array_equal(pb, np.tri(n, dtype=bool).T)
    pa, _ = pattern("solve_triangular", (n,), (n, n), (n,), lower=False, unit_diagonal=True)
    assert not pa[:, np.arange(n) * (n + 1)].any()  # a unit diagonal is not read


def test_cholesky_pattern_is_the_jacobian_structure():
    rng = np.random.default_rng(1)
    b = rng.standard_normal((5, 5))
    a = b @ b.T + 5 * np.eye(5)
    for upper in (False, True):
        jac = adcore.jacobian(lambda x, u=upper: adcore.ops.cholesky(x, upper=u), backend="reverse")(a)
        nonzero = np.abs(np.asarray(jac).reshape(25, 25)) > 1e-12
        (p,) = pattern("cholesky", (5, 5), (5, 5), upper=upper)
        assert np.array_equal(p, nonzero)


def test_det_of_rank_n_minus_2_depends_on_nothing_at_that_point():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])  # rank 1: every cofactor is 0
    assert rule("det")(np.linalg.det(a), a) == (None,)
    stack = np.stack([a, np.eye(3)])  # in a stack, the other matrix keeps its entries
    (p,) = rule("det")(np.linalg.det(stack), stack)
    assert p.nnz == 9 and np.flatnonzero(p.toarray()[1]).tolist() == list(range(9, 18))
    (p,) = pattern("det", (), (3, 3))
    assert p.all()  # globally, every entry


def test_matrix_power_patterns():
    n = 3
    assert rule("matrix_power")(Unknown((n, n), np.float64), Unknown((n, n), np.float64), n=0) == (None,)
    (p1,) = pattern("matrix_power", (n, n), (n, n), n=1)
    assert np.array_equal(p1, np.eye(n * n, dtype=bool))
    (p2,) = pattern("matrix_power", (n, n), (n, n), n=2)
    # (a a)[0, 0] reads row 0 and column 0 of a, not a[1, 2]
    assert p2[0].reshape(n, n)[0].all() and p2[0].reshape(n, n)[:, 0].all() and not p2[0].reshape(n, n)[1, 2]
    (p3,) = pattern("matrix_power", (n, n), (n, n), n=3)
    assert p3.all()


def test_global_rules_do_not_read_unknown_values():
    for name, ins, params in (
        ("solve", ((3, 3), (3,)), {}),
        ("cho_solve", ((3, 3), (3, 2)), {"lower": False}),
        ("slogdet_packed", ((2, 3, 3),), {}),
        ("matrix_power", ((3, 3),), {"n": -2}),
    ):
        out = {"solve": (3,), "cho_solve": (3, 2), "slogdet_packed": (2, 2), "matrix_power": (3, 3)}[name]
        patterns = pattern(name, out, *ins, **params)
        assert all(p.shape == (int(np.prod(out)), int(np.prod(s))) for p, s in zip(patterns, ins))


def stored_zeros(name: str) -> list[dict]:
    """The samples' params where the op's rule stores an explicit 0 (a backend reads the stored
    entries as dependencies: a stored 0 would be a spurious one), globally or locally."""
    op, bad = adcore.plugins.get_registry().ops[name], []
    for s in op.samples(np.random.default_rng(0), np.dtype(np.float64)):
        ans = op.impl(*s.args, **s.params)
        hidden = [Unknown(np.shape(a), np.float64) if np.asarray(a).dtype.kind == "f" else a for a in s.args]
        for deps in (
            rule(name)(ans, *s.args, **s.params),
            rule(name)(Unknown(np.shape(ans), ans.dtype), *hidden, **s.params),
        ):
            if any(hasattr(d, "data") and np.count_nonzero(d.data) != d.nnz for d in deps):
                bad.append(s.params)
    return bad


@pytest.mark.parametrize("name", [*OPS, "matrix_power"])
def test_no_stored_zeros(name):
    assert stored_zeros(name) == []


def test_a_large_matrix_is_dense_without_building_its_pattern():
    """A 2000 x 2000 (or a triangle's 1000^3 / 6 entries) pattern is not built: DENSE, a superset,
    at once, so a large constant matrix costs nothing."""
    big = Unknown((1000, 1000), np.float64)
    vector = Unknown((1000,), np.float64)
    assert rule("inv")(Unknown((2000, 2000), np.float64), Unknown((2000, 2000), np.float64)) == ("dense",)
    assert rule("solve")(vector, big, vector) == ("dense", "dense")
    a, b = rule("solve_triangular")(vector, big, vector, lower=True)
    assert a == "dense" and b.nnz == 1000 * 1001 // 2  # forward substitution's triangle, still exact
    assert rule("cholesky")(big, big) == ("dense",)


def test_a_sparse_jacobian_through_a_stack_of_solves_equals_the_dense_one():
    """End to end through the sparsity backend: 4 independent 3 x 3 systems, each matrix and
    right-hand side read from x: the pattern is block-diagonal, reverse mode's compressed Jacobian exact."""
    eye = 4 * np.eye(3)

    def f(x):
        a = x[:36].reshape(4, 3, 3) + eye
        return np.linalg.solve(a, x[36:].reshape(4, 3, 1)).ravel()

    x = np.random.default_rng(12).standard_normal(48)
    dense = np.asarray(adcore.jacobian(f, backend="reverse")(x))
    pattern = adcore.jacobian_sparsity(f)(x).toarray()
    assert np.array_equal(pattern, dense != 0) and pattern.sum() == 4 * 3 * 12
    assert np.allclose(
        adcore.jacobian(f, backend="reverse", sparse=True)(x).toarray(), dense, rtol=0, atol=1e-15
    )
