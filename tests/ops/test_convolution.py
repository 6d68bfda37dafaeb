"""np.convolve and np.correlate (adcore/ops/convolution.py): Jacobians in each input against the
exact ones (both are linear in each input), every mode with either input the longer; complex
inputs: convolve holomorphic in both, correlate conjugate-linear in v (JAX's convention, checked
by the dot-product test and against finite differences of the real and imaginary parts); second
order; the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

BACKENDS = ["reverse", "forward", "symbolic", "numeric"]
RULE_BACKENDS = ["reverse", "forward"]
MODES = ["full", "same", "valid"]
LENGTHS = [(5, 3), (3, 5), (4, 4), (1, 3), (6, 1), (4, 2)]
RNG = np.random.default_rng(1919)


def exact_jacobian(f, x: np.ndarray) -> np.ndarray:
    """The Jacobian of a linear f: f of each unit vector."""
    columns = [np.asarray(f(e.reshape(x.shape))) for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(np.shape(columns[0]) + x.shape)


def tolerance(backend: str) -> dict:
    return {"atol": 1e-7} if backend == "numeric" else {"atol": 1e-12}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("function", [np.convolve, np.correlate], ids=["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m, n", LENGTHS)
def test_jacobians_are_the_exact_ones(backend, function, mode, m, n):
    a, v = RNG.normal(size=m), RNG.normal(size=n)
    ja, jv = adcore.jacobian(lambda a, v: function(a, v, mode), argnums=(0, 1), backend=backend)(a, v)
    np.testing.assert_allclose(ja, exact_jacobian(lambda a: function(a, v, mode), a), **tolerance(backend))
    np.testing.assert_allclose(jv, exact_jacobian(lambda v: function(a, v, mode), v), **tolerance(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_0d_input_convolves_as_length_one(backend):
    a, v = np.asarray(1.5), RNG.normal(size=3)
    ja, jv = adcore.jacobian(lambda a, v: np.convolve(a, v, "same"), argnums=(0, 1), backend=backend)(a, v)
    np.testing.assert_allclose(ja, v, **tolerance(backend))
    np.testing.assert_allclose(jv, 1.5 * np.eye(3), **tolerance(backend))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("function", [np.convolve, np.correlate], ids=["convolve", "correlate"])
def test_default_modes_are_numpys(backend, function):
    # convolve's is full, correlate's valid: the rules must read the same defaults
    a, v = RNG.normal(size=5), RNG.normal(size=2)
    got = adcore.jacobian(lambda v: function(a, v), backend=backend)(v)
    np.testing.assert_allclose(got, exact_jacobian(lambda v: function(a, v), v), atol=1e-12)


# --- complex values ------------------------------------------------------------------------------


def complex_draw(*shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


def pairing(u, v) -> float:
    return float(np.real(np.sum(u * v)))


@pytest.mark.parametrize("function", [np.convolve, np.correlate], ids=["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m, n", [(5, 3), (2, 4)])
@pytest.mark.parametrize("which", [0, 1])
def test_complex_vjp_is_the_transpose_of_the_jvp(function, mode, m, n, which):
    # each is R-linear in each input (correlate conjugate-linear in v): JVP = f with the tangent in
    # place; VJP its transpose under Re(sum(u * v)), no conjugation (JAX's)
    args = [complex_draw(m), complex_draw(n)]
    t = complex_draw(*args[which].shape)

    def f(x):
        return function(*(x if i == which else args[i] for i in range(2)), mode)

    place = [*args]
    place[which] = t
    _, tangent = adcore.jvp(f, (args[which],), (t,), backend="forward")
    np.testing.assert_allclose(tangent, function(*place, mode), atol=1e-12)
    out, pullback = adcore.vjp(f, args[which], backend="reverse")
    u = complex_draw(*out.shape)
    (back,) = pullback(u)
    assert pairing(u, function(*place, mode)) == pytest.approx(pairing(back, t), abs=1e-10)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("function", [np.convolve, np.correlate], ids=["convolve", "correlate"])
def test_real_loss_of_complex_inputs_matches_finite_differences(backend, function):
    # grad of a real loss of z = x + iy is d/dx - i d/dy (JAX's convention)
    a, v = complex_draw(5), complex_draw(3)
    w = complex_draw(5)

    def loss(a, v):
        return np.sum(np.abs(function(a, v, "same") * w) ** 2)

    ga, gv = adcore.grad(loss, argnums=(0, 1), backend=backend)(a, v)
    na, nv = adcore.grad(loss, argnums=(0, 1), backend="numeric")(a, v)
    np.testing.assert_allclose(ga, na, atol=1e-6)
    np.testing.assert_allclose(gv, nv, atol=1e-6)


HOLOMORPHIC = [
    ("convolve in a", lambda a, v: np.convolve(a, v, "full"), 0),
    ("convolve in v", lambda a, v: np.convolve(a, v, "same"), 1),
    ("correlate in a", lambda a, v: np.correlate(a, v, "full"), 0),
]


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name, f, argnum", HOLOMORPHIC, ids=[c[0] for c in HOLOMORPHIC])
def test_holomorphic_jacobians_are_the_exact_ones(backend, name, f, argnum):
    args = (complex_draw(4), complex_draw(3))
    got = adcore.jacobian(f, argnums=argnum, backend=backend, holomorphic=True)(*args)

    def linear(x):
        return f(*(x if i == argnum else args[i] for i in range(2)))

    np.testing.assert_allclose(got, exact_jacobian(linear, args[argnum]), atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_correlate_is_not_holomorphic_in_v(backend):
    # it conjugates v: holomorphic=True must be an error, never a number
    a, v = complex_draw(4), complex_draw(3)
    with pytest.raises(AdcoreError, match="holomorphic"):
        adcore.jacobian(lambda v: np.correlate(a, v, "full"), backend=backend, holomorphic=True)(v)


# --- second order ----------------------------------------------------------------------------------


@pytest.mark.parametrize("function", [np.convolve, np.correlate], ids=["convolve", "correlate"])
def test_hessian_of_a_self_convolution_is_exact(function):
    # f(x) = <w, f(x, x)> is a quadratic form x^T Q x: H_ij = f(e_i + e_j) - f(e_i) - f(e_j) = Q_ij + Q_ji
    x = RNG.normal(size=4)
    w = RNG.normal(size=7)

    def f(x):
        return w @ function(x, x, "full")

    e = np.eye(4)
    hessian = np.array([[f(e[i] + e[j]) - f(e[i]) - f(e[j]) for j in range(4)] for i in range(4)])
    for outer, inner in (("forward", "reverse"), ("reverse", "reverse"), ("forward", "forward")):
        got = adcore.jacobian(adcore.grad(f, backend=inner), backend=outer)(x)
        np.testing.assert_allclose(got, hessian, atol=1e-12)


# --- refusals --------------------------------------------------------------------------------------


def test_a_bad_mode_is_numpys_error():
    with pytest.raises(ValueError):
        adcore.grad(lambda a: np.sum(np.convolve(a, [1.0, 2.0], "middle")))(RNG.normal(size=3))


def test_a_2d_input_is_refused():
    with pytest.raises(ValueError):
        adcore.grad(lambda a: np.sum(np.correlate(a, [1.0, 2.0])))(RNG.normal(size=(2, 3)))
