"""Forward mode carries complex values through f (issue 19, JAX's convention, docs/complex.md): the
tangent of a real primal is real and of a complex one complex; real losses through complex
intermediates against closed forms; complex64 stays complex64; second derivatives; an op whose rules
are for real inputs refuses a complex value by name; and every core op that accepts complex agrees
with numeric on the split real function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from adcore_forward.dual import Dual

import adcore
import adcore.numpy as anp
from adcore.errors import ComplexValueError

X = np.array([0.3, -0.7, 1.2])
A = np.array([[1 + 2j, -0.5j, 0.3], [0.2 - 1j, 1.5, 2j]])


def test_tangents_are_real_for_real_primals_and_complex_for_complex_ones():
    seen = {}

    def f(x):
        z = anp.exp(1j * x) * (x + 2j)
        r = anp.abs(z) + anp.angle(z) + anp.real(z * anp.conj(z))
        seen.update(z=(z.dtype, z.tangent.dtype), r=(r.dtype, r.tangent.dtype))
        assert isinstance(z, Dual) and isinstance(r, Dual)
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: real parts are taken explicitly
        out, tangent = adcore.jvp(f, (X,), (np.ones(3),), backend="forward")
    assert seen == {"z": (np.complex128, np.complex128), "r": (np.float64, np.float64)}
    assert tangent.dtype == np.float64
    # |z| = sqrt(x^2 + 4), angle z = x + atan2(2, x), Re(z conj z) = x^2 + 4
    expected = X / np.sqrt(X**2 + 4) + 1 - 2 / (X**2 + 4) + 2 * X
    np.testing.assert_allclose(tangent, expected, rtol=1e-12)


# f, its gradient at x by hand
LOSSES = {
    "Re exp(ix)": (lambda x: anp.sum(anp.real(anp.exp(1j * x))), lambda x: -np.sin(x)),
    "|A x|^2": (lambda x: anp.sum(anp.abs(A @ x) ** 2), lambda x: 2 * np.real(A.conj().T @ A @ x)),
    "angle (x + i)": (lambda x: anp.sum(anp.angle(x + 1j)), lambda x: -1 / (x**2 + 1)),
    "Im (x + i)^3": (lambda x: anp.sum(((x + 1j) ** 3).imag), lambda x: 6 * x),
    "var (1 + i) x (= 2 var x)": (lambda x: anp.var(x * (1 + 1j)), lambda x: 4 * (x - x.mean()) / x.size),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_a_real_loss_through_complex_intermediates_is_right(name):
    f, gradient = LOSSES[name]
    g = adcore.grad(f, backend="forward")(X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, gradient(X), rtol=1e-12, atol=1e-14)


def test_the_tangent_of_a_complex_input_is_the_r_linear_map():
    forward = adcore.get_backend("forward")
    z, t = np.complex128(3 + 4j), np.array([0.5 - 2j])
    _, tangent = forward.jvp(lambda z: anp.abs(z) ** 2, (z,), (t,))
    assert tangent[0] == pytest.approx(2 * np.real(np.conj(z) * t[0]))  # 2 Re(conj(z) dz)
    _, tangent = forward.jvp(lambda z: anp.sin(z) * z, (z,), (t,))
    assert tangent[0] == pytest.approx((np.cos(z) * z + np.sin(z)) * t[0])  # holomorphic: f'(z) dz


def test_float32_and_complex64_keep_their_precision():
    x = X.astype(np.float32)

    def f(x):
        z = anp.exp(x * 1j) * x
        assert z.dtype == np.complex64 and z.tangent.dtype == np.complex64
        return anp.sum(anp.abs(z * (1 + 1j)) ** 2)

    g = adcore.grad(f, backend="forward")(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 4 * X, rtol=1e-5)
    z = (X + 1j).astype(np.complex64)
    _, tangent = adcore.get_backend("forward").jvp(anp.sin, (z,), (np.ones((1, 3), np.complex64),))
    assert tangent.dtype == np.complex64
    np.testing.assert_allclose(tangent[0], np.cos(z), rtol=1e-5)


@pytest.mark.parametrize("inner", ["forward", "reverse"])
def test_second_derivatives_through_complex_intermediates(inner):
    hessian = adcore.hessian(LOSSES["Re exp(ix)"][0], inner=inner, outer="forward")(X)
    np.testing.assert_allclose(hessian, np.diag(-np.cos(X)), rtol=1e-12, atol=1e-14)
    hessian = adcore.hessian(LOSSES["|A x|^2"][0], inner=inner, outer="forward")(X)
    np.testing.assert_allclose(hessian, 2 * np.real(A.conj().T @ A), rtol=1e-12)
    hessian = adcore.hessian(LOSSES["angle (x + i)"][0], inner=inner, outer="forward")(X)
    np.testing.assert_allclose(hessian, np.diag(2 * X / (X**2 + 1) ** 2), rtol=1e-12)


@pytest.mark.parametrize(
    ("f", "op"),
    [
        (lambda x: anp.sum(anp.abs(anp.minimum(x * 1j, 0.0))), "minimum"),
        (lambda x: anp.sum(anp.abs(anp.sign(x + 1j))), "sign"),
        (lambda x: anp.ptp(x * (1 + 1j)), "ptp"),
        (lambda x: anp.sum(anp.abs(anp.clip(x * 1j, -1, 1))), "clip"),
    ],
    ids=["minimum", "sign", "ptp", "clip"],
)
def test_a_real_only_op_fed_a_complex_traced_value_is_refused_naming_it(f, op):
    with pytest.raises(ComplexValueError, match=f"op {op!r} on backend 'forward' got a complex value"):
        adcore.grad(f, backend="forward")(X)
    assert adcore.grad(lambda x: anp.sum(x * x), backend="forward")(X) == pytest.approx(2 * X)
