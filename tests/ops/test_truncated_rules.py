"""pinv and lstsq with a cut that drops nonzero singular values (issue 32, class 3): the derivative
of the truncated pseudo-inverse NumPy computes, against central differences of np.linalg.pinv and
np.linalg.lstsq themselves and against the analytic values of the issue's examples; the typed
refusals at the cut and at second order on a rank-deficient a, each followed by a call that works.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import central_jacobian

import adcore
from adcore.errors import InvalidValueError

RULE_BACKENDS = ["reverse", "forward"]


def with_singular_values(values, m: int, n: int, batch: tuple = (), seed: int = 0) -> np.ndarray:
    """U diag(values) V^T for random orthogonal U, V (values broadcast over batch)."""
    rng = np.random.default_rng(seed)
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal(batch + (m, m)))[0][..., :k]
    v = np.linalg.qr(rng.standard_normal(batch + (n, n)))[0][..., :k]
    return (u * np.asarray(values, dtype=float)[..., None, :]) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_pinv_dropping_a_nonzero_singular_value_has_the_truncated_derivative(backend):
    # pinv(diag(1, 0.3), rcond=0.5) = diag(1, 0): an off-diagonal e rotates the kept direction,
    # d P01 / d A01 + d P10 / d A01 = (1 + 0.3) / (1 - 0.3^2) = 1 / 0.7 = 10/7 (Golub & Pereyra,
    # which takes 0.3 as 0, gave 1.0; so do torch and JAX)
    a = np.diag([1.0, 0.3])
    g = adcore.grad(lambda a: np.sum(np.linalg.pinv(a, rcond=0.5)), backend=backend)(a)
    np.testing.assert_allclose(g, [[-1.0, 10 / 7], [10 / 7, 0.0]], atol=1e-12)
    oracle = central_jacobian(lambda a: np.sum(np.linalg.pinv(a, rcond=0.5)), a)
    np.testing.assert_allclose(g, oracle, atol=1e-8)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_lstsq_dropping_a_nonzero_singular_value_has_the_truncated_derivative(backend):
    # x = pinv(diag(1, 0.3), 0.5) [1, 0]: d x1 / d A01 = 1 / (1 - 0.09), d x1 / d A10 = 0.3 / 0.91
    a, b = np.diag([1.0, 0.3]), np.array([1.0, 0.0])
    g = adcore.grad(lambda a: np.linalg.lstsq(a, b, rcond=0.5)[0][1], backend=backend)(a)
    np.testing.assert_allclose(g, [[0.0, 1 / 0.91], [0.3 / 0.91, 0.0]], atol=1e-12)


CASES = [
    # (singular values, m, n, batch, params): each drops a nonzero singular value
    ([2.0, 1.0, 0.3], 3, 3, (), {"rcond": 0.3}),
    ([2.0, 0.3], 4, 2, (), {"rcond": 0.3}),
    ([2.0, 0.3], 2, 4, (), {"rtol": 0.3}),
    ([1.0, 0.6, 0.3], 4, 3, (), {"rcond": 0.45}),  # 0.6 kept, 0.3 cut
    ([1.0, 1.0, 0.3], 3, 5, (), {"rcond": 0.5}),  # a repeated kept value
    ([1.0, 0.3, 0.0], 3, 3, (), {"rcond": 0.5}),  # a cut nonzero and a zero
    ([[1.0, 0.3], [2.0, 1.5]], 3, 2, (2,), {"rcond": 0.5}),  # one matrix of the batch truncated
]


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("values, m, n, batch, params", CASES)
def test_pinv_jacobian_matches_central_differences_of_numpy(backend, values, m, n, batch, params):
    a = with_singular_values(values, m, n, batch)
    f = lambda a: np.linalg.pinv(a, **params)  # noqa: E731
    np.testing.assert_allclose(adcore.jacobian(f, backend=backend)(a), central_jacobian(f, a), atol=1e-7)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("values, m, n, batch, params", [c for c in CASES if not c[3] and "rcond" in c[4]])
def test_lstsq_jacobians_match_central_differences_of_numpy(backend, values, m, n, batch, params):
    a = with_singular_values(values, m, n)
    b = np.random.default_rng(1).standard_normal((m, 2))
    of_a = lambda a: np.linalg.lstsq(a, b, **params)[0]  # noqa: E731
    of_b = lambda b: np.linalg.lstsq(a, b, **params)[0]  # noqa: E731
    np.testing.assert_allclose(
        adcore.jacobian(of_a, backend=backend)(a), central_jacobian(of_a, a), atol=1e-7
    )
    np.testing.assert_allclose(
        adcore.jacobian(of_b, backend=backend)(b), central_jacobian(of_b, b), atol=1e-7
    )


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_float32_truncated_pinv_follows_float64(backend):
    a = with_singular_values([2.0, 1.0, 0.3], 3, 3)
    f = lambda a: np.sum(np.linalg.pinv(a, rcond=0.3) ** 2)  # noqa: E731
    g32 = adcore.grad(f, backend=backend)(a.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, adcore.grad(f, backend=backend)(a), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_a_cut_that_drops_every_singular_value_has_derivative_zero(backend):
    # rcond = 1: no singular value exceeds max(s), pinv is 0 for every a
    a = with_singular_values([2.0, 1.0], 2, 2)
    g = adcore.grad(lambda a: np.sum(np.linalg.pinv(a, rcond=1.0)), backend=backend)(a)
    np.testing.assert_array_equal(g, np.zeros((2, 2)))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_a_singular_value_at_the_cut_is_refused_and_the_next_call_works(backend):
    a = np.diag([2.0, 0.2, 0.1])  # 0.1 = 0.05 * 2: kept or cut as rounding decides
    f = lambda a: np.sum(np.linalg.pinv(a, rcond=0.05))  # noqa: E731
    with pytest.raises(InvalidValueError, match="'pinv'.*at the cut.*Move rcond"):
        adcore.grad(f, backend=backend)(a)
    with pytest.raises(InvalidValueError, match="at the cut"):
        adcore.grad(lambda a: np.sum(np.linalg.lstsq(a, np.ones(3), rcond=0.05)[0]), backend=backend)(a)
    clear = a * [1, 1, 1.5]  # 0.15 is kept
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(clear), central_jacobian(f, clear), rtol=1e-7)


@pytest.mark.parametrize("outer", RULE_BACKENDS)
@pytest.mark.parametrize("inner", RULE_BACKENDS)
def test_second_derivative_of_the_truncated_pinv_matches_differences_of_its_gradient(outer, inner):
    a = with_singular_values([1.0, 0.6, 0.3], 3, 3)
    w = np.random.default_rng(2).standard_normal((3, 3))
    gradient = adcore.grad(lambda a: np.sum(w * np.linalg.pinv(a, rcond=0.5) ** 2), backend=inner)
    # the first derivative is checked against numpy above; its differences are the Hessian's oracle
    oracle = central_jacobian(gradient, a, h=1e-5)
    np.testing.assert_allclose(
        adcore.jacobian(gradient, backend=outer)(a), oracle, atol=1e-6 * np.max(np.abs(oracle))
    )


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_second_derivative_at_a_rank_deficient_a_is_refused_and_the_next_call_works(backend):
    # a zero singular value under rcond=0.5: the first derivative (Golub & Pereyra's) is exact, but
    # its own derivative off the fixed-rank matrices is not the truncated pinv's (it was off by 0.6)
    a = with_singular_values([1.0, 0.0], 4, 2)
    f = lambda a: np.sum(np.linalg.pinv(a, rcond=0.5) ** 2)  # noqa: E731
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(a), central_jacobian(f, a), atol=1e-7)
    with pytest.raises(InvalidValueError, match="'pinv': no second derivative at a rank-deficient a"):
        adcore.hessian(f)(a)
    full_rank = with_singular_values([1.0, 0.7], 4, 2)
    gradient = adcore.grad(f, backend=backend)
    np.testing.assert_allclose(
        adcore.hessian(f)(full_rank), central_jacobian(gradient, full_rank, 1e-5), atol=1e-6
    )


@pytest.mark.parametrize("rcond", [None, 0.3, -1])
def test_traced_lstsq_is_numpys_bit_for_bit(rcond):
    # x was pinv(a) @ b, off NumPy's gelsd in the last bits on 18 of 20 random matrices
    rng = np.random.default_rng(4)
    for _ in range(10):
        a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
        value, _ = adcore.value_and_grad(lambda a, b=b: np.sum(np.linalg.lstsq(a, b, rcond=rcond)[0]))(a)
        assert value == np.sum(np.linalg.lstsq(a, b, rcond=rcond)[0])


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_negative_rcond_is_lapacks_machine_precision_for_lstsq_and_refused_by_a_singular_pinv(backend):
    # lstsq: LAPACK's gelsd takes rcond < 0 as machine precision, so a zero singular value is cut
    # (x = [1, 0]); pinv keeps every singular value above rcond * max(s) < 0, 1/0 among them
    a = np.diag([1.0, 0.0])
    f = lambda a: np.sum(np.linalg.lstsq(a, np.ones(2), rcond=-1)[0])  # noqa: E731
    value, g = adcore.value_and_grad(f, backend=backend)(a)
    assert value == 1.0
    np.testing.assert_allclose(g, adcore.grad(lambda a: np.sum(np.linalg.lstsq(a, np.ones(2))[0]))(a))
    with pytest.raises(InvalidValueError, match="'pinv'"):
        adcore.grad(lambda a: np.sum(np.linalg.pinv(a, rcond=-1.0)), backend=backend)(a)
    full_rank = np.diag([1.0, 0.5])  # every singular value kept: -P^T 1 1^T P^T
    g = adcore.grad(lambda a: np.sum(np.linalg.pinv(a, rcond=-1.0)), backend=backend)(full_rank)
    np.testing.assert_allclose(g, -np.outer([1.0, 2.0], [1.0, 2.0]))
