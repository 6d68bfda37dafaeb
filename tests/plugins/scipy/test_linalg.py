"""adcore_scipy.linalg: SciPy's values on plain arrays; gradients (reverse and forward) against
central differences of the SciPy functions and against closed forms; the complex rules as
transposes of their JVPs; the typed refusals; scipy imported only when an op runs. (The
conformance suite's full report checks the ops on every backend and dtype.)
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl
from adcore_scipy import linalg
from adcore_scipy.linalg import ops as linalg_ops
from adcore_scipy.linalg import rules

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError, LinearAlgebraError

BACKENDS = ["reverse", "forward"]
RNG = np.random.default_rng(19)
A = np.array([[4.0, 1.0, -0.5], [0.3, 3.0, 0.8], [-0.2, 0.6, 5.0]])
SPD = A @ A.T + np.eye(3)
B = RNG.uniform(-1, 1, (3, 2))


def central_difference(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d sum(w * f(x)) / d x by central differences, entry by entry (w fixed weights)."""
    weights = np.random.default_rng(0).uniform(0.5, 1.5, np.shape(f(x)))
    out = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        out[index] = np.sum(weights * (f(x + step) - f(x - step))) / (2 * h)
    return out, weights


def check_gradient(ours, reference, x, atol=1e-7):
    """grad of sum(w * ours(x)) on reverse and forward against central differences of reference."""
    expected, weights = central_difference(reference, x)
    for backend in BACKENDS:
        got = adcore.grad(lambda x: anp.sum(weights * ours(x)), backend=backend)(x)
        np.testing.assert_allclose(got, expected, atol=atol, err_msg=backend)


# --- values on plain arrays --------------------------------------------------------------------


def test_values_are_scipys():
    upper = np.triu(A)
    np.testing.assert_allclose(linalg.solve_triangular(upper, B), sl.solve_triangular(upper, B))
    np.testing.assert_allclose(
        linalg.solve_triangular(A, B[:, 0], lower=True, trans="T", unit_diagonal=True),
        sl.solve_triangular(A, B[:, 0], lower=True, trans="T", unit_diagonal=True),
    )
    for lower in (False, True):
        c, flag = linalg.cho_factor(SPD, lower=lower)
        c_sp, flag_sp = sl.cho_factor(SPD, lower=lower)
        triangle = np.tril if lower else np.triu
        assert flag == flag_sp
        np.testing.assert_allclose(c, triangle(c_sp))  # the other triangle: zeros, SciPy's is arbitrary
        np.testing.assert_allclose(linalg.cho_solve((c, flag), B), sl.cho_solve((c_sp, flag_sp), B))
    np.testing.assert_allclose(linalg.expm(A / 4), sl.expm(A / 4))
    np.testing.assert_allclose(linalg.sqrtm(SPD), sl.sqrtm(SPD))
    np.testing.assert_allclose(
        linalg.solve_sylvester(A, SPD[:2, :2], B[:, :2]), sl.solve_sylvester(A, SPD[:2, :2], B[:, :2])
    )
    ab = np.array([[0.0, 1.0, 0.5, 0.2], [4.0, 5.0, 6.0, 3.0], [0.4, 0.3, 0.1, 0.0]])
    np.testing.assert_allclose(
        linalg.solve_banded((1, 1), ab, B[:, 0].tolist() + [1.0]),
        sl.solve_banded((1, 1), ab, B[:, 0].tolist() + [1.0]),
    )


def test_batched_expm_sqrtm_and_sylvester_are_scipys_per_matrix():
    stack = np.stack([A / 4, SPD / 10])
    for ours, theirs in ((linalg.expm, sl.expm), (linalg.sqrtm, sl.sqrtm)):
        np.testing.assert_allclose(ours(stack), [theirs(m) for m in stack])
    q = RNG.uniform(-1, 1, (2, 3, 3))
    np.testing.assert_allclose(
        linalg.solve_sylvester(stack, SPD, q), [sl.solve_sylvester(m, SPD, k) for m, k in zip(stack, q)]
    )


def test_float32_stays_float32():
    a = (A / 4).astype(np.float32)
    assert linalg.expm(a).dtype == np.float32
    assert linalg.sqrtm(SPD.astype(np.float32)).dtype == np.float32
    assert linalg.solve_sylvester(a, a, a).dtype == np.float32


# --- gradients against central differences of SciPy ------------------------------------------


def test_solve_triangular_gradients():
    check_gradient(
        lambda a: linalg.solve_triangular(a, B, lower=True),
        lambda a: sl.solve_triangular(a, B, lower=True),
        A,
    )
    check_gradient(
        lambda b: linalg.solve_triangular(A, b, trans=1, unit_diagonal=True),
        lambda b: sl.solve_triangular(A, b, trans=1, unit_diagonal=True),
        B,
    )


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_then_cho_solve_gradients_with_respect_to_a_and_b(lower):
    # SciPy's cho_factor reads a's `lower` triangle: the gradient lives there
    def ours(a):
        return linalg.cho_solve(linalg.cho_factor(a, lower=lower), B)

    check_gradient(ours, lambda a: sl.cho_solve(sl.cho_factor(a, lower=lower), B), SPD, atol=1e-6)
    c = linalg.cho_factor(SPD, lower=lower)
    check_gradient(lambda b: linalg.cho_solve(c, b), lambda b: np.linalg.solve(SPD, b), B)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_gradient_with_respect_to_c_lives_on_its_triangle(lower):
    c, _ = sl.cho_factor(SPD, lower=lower)
    triangle = np.tril if lower else np.triu
    factor = triangle(c)
    # the reference: a built from the factor's triangle only, whatever the other triangle holds
    reference = (
        (lambda c: np.linalg.solve(np.tril(c) @ np.tril(c).T, B))
        if lower
        else (lambda c: np.linalg.solve(np.triu(c).T @ np.triu(c), B))
    )
    check_gradient(
        lambda c: linalg.cho_solve((c, lower), B), reference, c
    )  # SciPy's c: garbage in the other triangle
    got = adcore.grad(lambda c: anp.sum(linalg.cho_solve((c, lower), B)))(factor)
    assert np.all(got[triangle(np.ones((3, 3))) == 0] == 0)


def test_expm_gradient():
    check_gradient(linalg.expm, sl.expm, A / 3)


def test_sqrtm_gradient():
    check_gradient(linalg.sqrtm, sl.sqrtm, SPD)


def test_solve_sylvester_gradients_of_each_input():
    b_, q = SPD[:2, :2] / 3, B
    check_gradient(lambda a: linalg.solve_sylvester(a, b_, q), lambda a: sl.solve_sylvester(a, b_, q), A)
    check_gradient(lambda b: linalg.solve_sylvester(A, b, q), lambda b: sl.solve_sylvester(A, b, q), b_)
    check_gradient(lambda q: linalg.solve_sylvester(A, b_, q), lambda q: sl.solve_sylvester(A, b_, q), q)


@pytest.mark.parametrize("bands", [(0, 0), (1, 1), (2, 1), (0, 2)])
def test_solve_banded_gradients_and_ab_s_unused_corners_get_zero(bands):
    low, up = bands
    n = 5
    ab = RNG.uniform(-1, 1, (low + up + 1, n))
    ab[up] += low + up + 2
    b = RNG.uniform(-1, 1, (n, 2))
    check_gradient(lambda ab: linalg.solve_banded(bands, ab, b), lambda ab: sl.solve_banded(bands, ab, b), ab)
    check_gradient(lambda b: linalg.solve_banded(bands, ab, b), lambda b: sl.solve_banded(bands, ab, b), b)
    for backend in BACKENDS:
        got = adcore.grad(lambda ab: anp.sum(linalg.solve_banded(bands, ab, b[:, 0])), backend=backend)(ab)
        for k in range(
            low + up + 1
        ):  # row k of ab is A's diagonal u - k: its first u - k (last k - u) unused
            unused = list(range(max(up - k, 0))) + list(range(n - max(k - up, 0), n))
            assert np.all(got[k, unused] == 0), (backend, k)


# --- closed forms ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_closed_forms_along_the_matrix_itself(backend):
    # d/dt expm(A + tA) = A expm(A); d/dt sqrtm(A + tA) = sqrtm(A) / 2; X is linear in Q
    a = A / 3
    _, tangent = adcore.jvp(linalg.expm, (a,), (a,), backend=backend)
    np.testing.assert_allclose(tangent, a @ sl.expm(a), atol=1e-12)
    _, tangent = adcore.jvp(linalg.sqrtm, (SPD,), (SPD,), backend=backend)
    np.testing.assert_allclose(tangent, sl.sqrtm(SPD) / 2, atol=1e-12)
    _, tangent = adcore.jvp(lambda q: linalg.solve_sylvester(A, SPD, q), (A,), (A,), backend=backend)
    np.testing.assert_allclose(tangent, sl.solve_sylvester(A, SPD, A), atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_expm_of_a_diagonal_matrix_has_the_divided_differences_of_exp(backend):
    # the Frechet derivative of expm at diag(d) is E * (exp(d_i) - exp(d_j)) / (d_i - d_j)
    d = np.array([0.5, -1.0, 2.0])
    e = RNG.uniform(-1, 1, (3, 3))
    _, tangent = adcore.jvp(linalg.expm, (np.diag(d),), (e,), backend=backend)
    with np.errstate(divide="ignore", invalid="ignore"):
        divided = (np.exp(d)[:, None] - np.exp(d)[None, :]) / (d[:, None] - d[None, :])
    divided[np.diag_indices(3)] = np.exp(d)
    np.testing.assert_allclose(tangent, e * divided, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_derivatives_through_the_rules(backend):
    # the rules are written with the ops: a Hessian-vector product of sum(expm) against differences
    a, v = A / 3, RNG.uniform(-1, 1, (3, 3))
    grad = adcore.grad(lambda a: anp.sum(linalg.expm(a)))
    hvp = adcore.jvp(grad, (a,), (v,), backend=backend)[1]
    np.testing.assert_allclose(hvp, (grad(a + 1e-5 * v) - grad(a - 1e-5 * v)) / 2e-5, atol=1e-6)


# --- complex ---------------------------------------------------------------------------------


@pytest.mark.parametrize("op", linalg_ops.OPS, ids=lambda op: op.name)
def test_complex_rules_match_differences_and_each_vjp_is_the_jvps_transpose(op):
    rng = np.random.default_rng(5)

    def crandn(shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    for sample in op.samples(rng, np.complex128):
        args, params = [np.asarray(a) for a in sample.args], sample.params
        ans = op.impl(*args, **params)
        for i in range(len(args)):
            t = crandn(args[i].shape)
            plus, minus = list(args), list(args)
            plus[i], minus[i] = args[i] + 1e-6 * t, args[i] - 1e-6 * t
            fd = (op.impl(*plus, **params) - op.impl(*minus, **params)) / 2e-6
            jvp = np.broadcast_to(rules.JVPS[op.name][i](t[None], ans, *args, **params), (1,) + ans.shape)[0]
            np.testing.assert_allclose(jvp, fd, atol=1e-6 * max(1, np.max(np.abs(fd))))
            g = crandn(ans.shape)
            vjp = rules.VJPS[op.name][i](g, ans, *args, **params)
            assert np.real(np.sum(g * jvp)) == pytest.approx(np.real(np.sum(vjp * t)), abs=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sqrtm_of_a_real_matrix_with_a_negative_eigenvalue_is_complex_and_its_gradient_real(backend):
    a = np.array([[-2.0, 0.5], [0.3, 3.0]])
    assert np.iscomplexobj(linalg.sqrtm(a))

    def reference(a):
        return np.real(sl.sqrtm(a)) + 2 * np.imag(sl.sqrtm(a))

    expected, weights = central_difference(reference, a)
    got = adcore.grad(
        lambda a: anp.sum(weights * (anp.real(linalg.sqrtm(a)) + 2 * anp.imag(linalg.sqrtm(a)))),
        backend=backend,
    )(a)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, atol=1e-7)


# --- refusals --------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Matrix is singular")  # SciPy's, computing the value
@pytest.mark.parametrize("backend", BACKENDS)
def test_sqrtm_at_a_singular_matrix_is_a_typed_error(backend):
    singular = np.array([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(LinearAlgebraError, match="'sqrtm'.*singular"):
        adcore.grad(lambda a: anp.sum(linalg.sqrtm(a)), backend=backend)(singular)


def test_a_singular_sylvester_equation_is_a_typed_error():
    with pytest.raises(LinearAlgebraError, match="no unique solution"):
        linalg.solve_sylvester(A, -A, B[:, :1] @ np.ones((1, 3)))


def test_solve_banded_checks_its_bands_and_a_singular_matrix():
    with pytest.raises(LinearAlgebraError, match=r"\(l \+ u \+ 1, n\)"):
        linalg.solve_banded((1, 1), np.ones((2, 3)), np.ones(3))
    with pytest.raises(LinearAlgebraError, match="singular"):
        linalg.solve_banded((0, 0), np.array([[1.0, 0.0, 2.0]]), np.ones(3))
    with pytest.raises(InvalidValueError, match="pair of integers"):
        linalg.solve_banded(None, np.ones((1, 3)), np.ones(3))


# --- the lazy import -----------------------------------------------------------


def test_importing_the_module_and_loading_the_registry_imports_no_scipy_linalg():
    code = (
        "import sys, adcore, adcore_scipy.linalg; adcore.ops['expm']; adcore.ops['solve_banded']; "
        "assert not [m for m in sys.modules if m.startswith('scipy.linalg')]"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    code = "import sys, adcore_scipy.linalg as L; L.expm([[0.0]]); assert 'scipy.linalg' in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
