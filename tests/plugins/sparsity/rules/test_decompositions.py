"""The sparsity rules of eigh, eigvalsh, svd, svdvals, qr, norm, pinv, lstsq (rules/decompositions.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore

# QR's rules leave rounding (a few eps: ~1e-16, ~1e-7 in float32) where the derivative is 0 (a
# square Q's last column does not move with a's last column): compare the non-zeros above 64 eps
NOISY = {"qr_packed": 64.0}
OPS = (
    "eigh_packed",
    "eigvalsh",
    "svd_packed",
    "svdvals",
    "qr_packed",
    "norm",
    "pinv",
    "lstsq_solution",
    "lstsq_residuals",
    "lstsq_singular_values",
)


def rule(name: str):
    return adcore.plugins.get_registry().rules["sparsity"][name]


def global_pattern(name: str, ans_shape, in_shape, **params) -> np.ndarray:
    (dep, *_) = rule(name)(Unknown(ans_shape, np.float64), Unknown(in_shape, np.float64), **params)
    return dense_pattern(dep, int(np.prod(ans_shape)), int(np.prod(in_shape)))


def local_pattern(name: str, x: np.ndarray, **params) -> np.ndarray:
    ans = adcore.plugins.get_registry().ops[name].impl(x, **params)
    (dep,) = rule(name)(ans, x, **params)
    return dense_pattern(dep, np.size(ans), x.size)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", OPS)
def test_rule_holds_at_the_op_samples(name, dtype):
    atol = NOISY.get(name, 0.0) * np.finfo(dtype).eps
    assert check_op(name, dtype=dtype, atol=atol) > 0


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle(uplo):
    p = global_pattern("eigvalsh", (3,), (3, 3), UPLO=uplo)
    triangle = np.tri(3, dtype=bool) if uplo == "L" else np.tri(3, dtype=bool).T
    assert np.array_equal(p, np.tile(triangle.ravel(), (3, 1)))
    assert global_pattern("eigh_packed", (4, 3), (3, 3), UPLO=uplo)[:, ~triangle.ravel()].sum() == 0


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 1)])
def test_qr_pattern_is_the_jacobian_structure(shape):
    m, n = shape
    a = np.random.default_rng(2).standard_normal(shape)
    jac = adcore.jacobian(lambda x: adcore.ops.qr_packed(x), backend="reverse")(a)
    nonzero = np.abs(np.asarray(jac).reshape((m + n) * n, m * n)) > 1e-12
    assert np.array_equal(global_pattern("qr_packed", (m + n, n), shape), nonzero)


def test_vectors_of_a_row_or_column_matrix():
    p = global_pattern("svd_packed", (1 + 1 + 3, 1), (1, 3))  # U is a 1 x 1 sign
    assert not p[0].any() and p[1:].all()
    p = global_pattern("eigh_packed", (2, 1), (1, 1))  # the eigenvector of a 1 x 1 matrix is 1
    assert p[0].all() and not p[1].any()


def test_norm_inf_depends_at_a_point_on_the_largest_entry():
    x = np.array([[1.0, -5.0, 2.0], [3.0, 0.5, -1.0]])
    assert global_pattern("norm", (2,), (2, 3), ord=np.inf, axis=1).sum() == 6
    local = local_pattern("norm", x, ord=np.inf, axis=1)
    assert [np.flatnonzero(row).tolist() for row in local] == [[1], [3]]
    local = local_pattern("norm", x, ord=-np.inf, axis=0)
    assert [np.flatnonzero(row).tolist() for row in local] == [[0], [4], [5]]


def test_matrix_norm_one_depends_at_a_point_on_the_largest_column():
    x = np.array([[1.0, -5.0, 2.0], [3.0, 0.5, -1.0]])  # column sums 4, 5.5, 3
    assert np.flatnonzero(local_pattern("norm", x, ord=1)).tolist() == [1, 4]
    assert np.flatnonzero(local_pattern("norm", x, ord=np.inf)).tolist() == [0, 1, 2]  # row sums 8, 4.5
    assert local_pattern("norm", x, ord="nuc").all()


def test_norm_zero_counts_and_has_no_derivative():
    assert rule("norm")(Unknown((), np.float64), Unknown((4,), np.float64), ord=0) == (None,)


def test_norm_keepdims_and_batched_matrix_axes():
    p = global_pattern("norm", (1, 3), (2, 3), ord=2, axis=0, keepdims=True)
    assert np.array_equal(p, np.tile(np.eye(3, dtype=bool), (1, 2)))
    p = global_pattern("norm", (2,), (3, 2, 4), ord="fro", axis=(2, 0))
    assert p.sum(axis=1).tolist() == [12, 12] and not (p[0] & p[1]).any()


def test_lstsq_keeps_right_hand_side_columns_apart():
    deps = rule("lstsq_solution")(
        Unknown((2, 3), np.float64), Unknown((4, 2), np.float64), Unknown((4, 3), np.float64)
    )
    assert deps[0] == "dense"
    pb = dense_pattern(deps[1], 6, 12)
    assert np.array_equal(pb, np.kron(np.ones((2, 4)), np.eye(3)).astype(bool))
