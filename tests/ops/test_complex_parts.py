"""The ops real, imag, conj (conjugate), angle and abs of complex inputs: their values are NumPy's,
NumPy's functions on traced values are these ops, and their rules are JAX's (docs/complex.md): a
JVP is the R-linear map of the tangent, a VJP its transpose under <u, v> = Re(sum(u * v)), checked
against closed forms, against each other (the dot-product test) and against central differences.
On a real input they are right too, and the kinks at 0 have derivative 0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import ops

Z = np.array([3 + 4j, -1.5 + 0.5j, 0.25 - 2j, -2 - 1j])
RNG = np.random.default_rng(19)
CT = RNG.normal(size=Z.shape)  # a real output's cotangent
T = RNG.normal(size=Z.shape) + 1j * RNG.normal(size=Z.shape)  # a complex input's tangent

# op, its closed-form VJP of a real cotangent c and JVP of a complex tangent t at z (JAX's rules)
RULES = {
    "real": (ops.real, lambda c, z: c + 0j, lambda t, z: t.real),
    "imag": (ops.imag, lambda c, z: -1j * c, lambda t, z: t.imag),
    "abs": (
        ops.abs,
        lambda c, z: c * np.conj(z) / np.abs(z),
        lambda t, z: np.real(t * np.conj(z)) / np.abs(z),
    ),
    "angle": (ops.angle, lambda c, z: -1j * c / z, lambda t, z: np.imag(t / z)),
}


def reverse_vjp(f, z, ct):
    out, pullback = adcore.get_backend("reverse").vjp(f, (z,), (0,))
    return out, pullback(ct)[0]


def forward_jvp(f, z, t):
    out, tangent = adcore.get_backend("forward").jvp(f, (z,), (t[None],))
    return out, tangent[0]


@pytest.mark.parametrize("name", list(RULES))
def test_the_rules_are_jaxs_closed_forms(name):
    op, vjp, jvp = RULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: nothing is dropped implicitly
        out, cotangent = reverse_vjp(op, Z, CT)
        _, tangent = forward_jvp(op, Z, T)
    np.testing.assert_allclose(out, op.impl(Z))
    assert cotangent.dtype == np.complex128 and tangent.dtype == np.float64
    np.testing.assert_allclose(cotangent, vjp(CT, Z), rtol=1e-13)
    np.testing.assert_allclose(tangent, jvp(T, Z), rtol=1e-13)


def test_conj_is_its_own_transpose():
    c = RNG.normal(size=Z.shape) + 1j * RNG.normal(size=Z.shape)
    np.testing.assert_allclose(reverse_vjp(ops.conj, Z, c)[1], np.conj(c))
    np.testing.assert_allclose(forward_jvp(ops.conj, Z, T)[1], np.conj(T))


def test_angle_in_degrees_scales_its_derivative():
    _, cotangent = reverse_vjp(lambda z: ops.angle(z, deg=True), Z, CT)
    np.testing.assert_allclose(cotangent, -1j * CT / Z * 180 / np.pi, rtol=1e-13)
    _, tangent = forward_jvp(lambda z: np.angle(z, deg=True), Z, T)
    np.testing.assert_allclose(tangent, np.imag(T / Z) * 180 / np.pi, rtol=1e-13)


@pytest.mark.parametrize("name", ["real", "imag", "conj", "abs", "angle"])
def test_the_vjp_is_the_transpose_of_the_jvp(name):
    op = ops[name]
    out, pullback = adcore.get_backend("reverse").vjp(op, (Z,), (0,))
    c = RNG.normal(size=Z.shape) + (1j * RNG.normal(size=Z.shape) if np.iscomplexobj(out) else 0)
    _, tangent = forward_jvp(op, Z, T)
    # <vjp(c), t> = <c, jvp(t)> with <u, v> = Re(sum(u * v))
    assert np.real(np.sum(pullback(c)[0] * T)) == pytest.approx(np.real(np.sum(c * tangent)), rel=1e-12)


def split(op, **params):
    """The real function (x, y) -> (Re op(x + iy), Im op(x + iy)), stacked."""
    return lambda x, y: anp.stack([anp.real(op(x + 1j * y, **params)), anp.imag(op(x + 1j * y, **params))])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize(
    ("name", "params"),
    [("real", {}), ("imag", {}), ("conj", {}), ("abs", {}), ("angle", {}), ("angle", {"deg": True})],
)
def test_the_split_real_function_agrees_with_central_differences(backend, name, params):
    f = split(ops[name], **params)
    x, y = Z.real, Z.imag
    truth = adcore.jacobian(f, argnums=(0, 1), backend="numeric")(x, y)
    for got, want in zip(adcore.jacobian(f, argnums=(0, 1), backend=backend)(x, y), truth):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


# --- real inputs ---------------------------------------------------------------------------

X = np.array([-1.5, -0.0, 0.0, 2.0])


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic", "numeric"])
def test_on_a_real_input_real_and_conj_are_the_identity_imag_and_angle_are_steps(backend):
    jacobian = adcore.jacobian
    x = np.array([-1.5, 0.5, 2.0])  # numeric cannot difference across angle's step at 0
    np.testing.assert_allclose(jacobian(anp.real, backend=backend)(x), np.eye(3))
    np.testing.assert_allclose(jacobian(anp.conj, backend=backend)(x), np.eye(3))
    np.testing.assert_allclose(jacobian(anp.imag, backend=backend)(x), np.zeros((3, 3)))
    np.testing.assert_allclose(jacobian(anp.angle, backend=backend)(x), np.zeros((3, 3)))
    assert adcore.concrete(anp.angle(x)).tolist() == [np.pi, 0.0, 0.0]


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_angle_of_a_real_x_has_derivative_0_also_at_its_step(backend):
    np.testing.assert_array_equal(adcore.jacobian(anp.angle, backend=backend)(X), np.zeros((4, 4)))
    np.testing.assert_array_equal(np.angle(X), [np.pi, np.pi, 0.0, 0.0])  # -0.0 is on the negative side


# --- the kinks at 0 ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", ["abs", "angle"])
def test_abs_and_angle_of_complex_zero_have_derivative_0(backend, name):
    # no derivative exists at 0: 0, as abs'(0) = 0 for real x and JAX's abs(0j)
    jac = adcore.jacobian(split(ops[name]), argnums=(0, 1), backend=backend)(np.zeros(2), np.zeros(2))
    for part in jac:
        assert np.all(np.isfinite(part)) and not part.any()
    np.testing.assert_array_equal(reverse_vjp(ops[name], np.zeros(2, complex), np.ones(2))[1], 0j)


# --- NumPy's names on traced values --------------------------------------------------------


def test_numpys_functions_and_methods_on_traced_values_are_these_ops():
    def f(x, y):
        z = x + 1j * y
        parts = [np.real(z), np.imag(z), np.conj(z).imag, np.conjugate(z).imag, np.angle(z), np.abs(z)]
        parts += [z.real, z.imag, z.conj().imag, z.conjugate().imag, np.angle(z, deg=True)]
        return anp.stack(parts)

    x, y = Z.real, Z.imag
    value = np.stack([x, y, -y, -y, np.angle(Z), np.abs(Z), x, y, -y, -y, np.angle(Z, deg=True)])
    np.testing.assert_allclose(f(x, y), value)
    for backend in ("reverse", "forward"):
        jx, jy = adcore.jacobian(f, argnums=(0, 1), backend=backend)(x, y)
        nx, ny = adcore.jacobian(f, argnums=(0, 1), backend="numeric")(x, y)
        np.testing.assert_allclose(jx, nx, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(jy, ny, rtol=1e-7, atol=1e-9)


def test_the_ops_are_numpy_named_in_adcore_numpy():
    assert anp.conjugate is anp.conj is ops.conj
    assert (anp.real, anp.imag, anp.angle) == (ops.real, ops.imag, ops.angle)
    assert all(ops[name].accepts_complex for name in ("real", "imag", "conj", "angle", "abs"))
    np.testing.assert_array_equal(anp.angle(Z, deg=True), np.angle(Z, deg=True))


def test_complex64_stays_complex64_and_its_parts_float32():
    z = Z.astype(np.complex64)
    for op in (ops.real, ops.imag, ops.abs, ops.angle):
        out, cotangent = reverse_vjp(op, z, CT.astype(np.float32))
        assert out.dtype == np.float32 and cotangent.dtype == np.complex64, op.name
        _, tangent = forward_jvp(op, z, T.astype(np.complex64))
        assert tangent.dtype == np.float32, op.name
    out, cotangent = reverse_vjp(ops.conj, z, z)
    assert out.dtype == cotangent.dtype == np.complex64
