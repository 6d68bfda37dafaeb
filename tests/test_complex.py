"""Complex numbers at the API boundary, in JAX's convention (docs/complex.md), on every backend
that carries complex values: grad of a real f of complex z is df/dx - 1j*df/dy, holomorphic=True
gives f'(z) after a Cauchy-Riemann check, jvp/vjp take complex tangents and cotangents, complex
outputs of real inputs give complex Jacobians; whatever has no right answer is a typed error.

JAX is not installed here, so the references are closed forms and torch, whose convention is the
conjugate one: JAX's vjp(ct) is conj(torch's vjp(conj(ct))), JAX's grad conj(torch's)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import (
    ComplexValueError,
    InvalidInputError,
    InvalidOutputError,
    NotHolomorphicError,
)

BACKENDS = ["reverse", "forward", "numeric"]
Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 2.5 - 1.5j])


def tolerance(backend: str, dtype=np.complex128) -> dict:
    if np.dtype(dtype) == np.complex64:
        return {"rtol": 2e-3 if backend == "numeric" else 1e-5, "atol": 1e-4}
    return {"rtol": 1e-7 if backend == "numeric" else 1e-12, "atol": 1e-9 if backend == "numeric" else 0}


# --- grad of a real function of complex z: df/dx - 1j*df/dy ------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "f",
    [
        lambda z: anp.abs(z) ** 2,
        lambda z: anp.real(z) ** 2 + anp.imag(z) ** 2,
        lambda z: anp.real(z * anp.conj(z)),
    ],
    ids=["abs", "real-imag", "z-conj-z"],
)
def test_grad_of_abs_squared_is_twice_the_conjugate(backend, f):
    # |z|^2 = x^2 + y^2: df/dx = 2x, df/dy = 2y, so df/dx - 1j*df/dy = 2*conj(z) (JAX: 6-8j at 3+4j)
    g = adcore.grad(f, backend=backend)(3 + 4j)
    np.testing.assert_allclose(g, 6 - 8j, **tolerance(backend))
    assert np.asarray(g).dtype == np.complex128
    array = adcore.grad(lambda z: anp.sum(f(z)), backend=backend)(Z)
    np.testing.assert_allclose(array, 2 * np.conj(Z), **tolerance(backend))
    assert array.dtype == np.complex128 and array.shape == Z.shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_matches_torch_conjugated(backend):
    torch = pytest.importorskip("torch")

    def loss(z, lib):
        return lib.sum(lib.abs(lib.exp(z) * lib.sin(z)) ** 2 + lib.real(z * z * lib.conj(z)))

    t = torch.tensor(Z, requires_grad=True)
    (expected,) = torch.autograd.grad(loss(t, torch), t)
    got = adcore.grad(lambda z: loss(z, anp), backend=backend)(Z)
    np.testing.assert_allclose(got, np.conj(expected.numpy()), **tolerance(backend))


def test_the_descent_direction_is_the_conjugate_of_grad():
    # grad points along df/dx - 1j*df/dy; stepping z by -conj(grad) lowers f as gradient descent does
    f = lambda z: anp.abs(z - (1 + 1j)) ** 2  # noqa: E731
    z = np.complex128(3 + 4j)
    for _ in range(50):
        z = z - 0.1 * np.conj(adcore.grad(f)(z))
    np.testing.assert_allclose(z, 1 + 1j, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex64_in_gives_complex64_out(backend):
    z = Z.astype(np.complex64)
    g = adcore.grad(lambda z: anp.sum(anp.abs(z) ** 2), backend=backend)(z)
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, 2 * np.conj(z), **tolerance(backend, np.complex64))
    d = adcore.jacobian(anp.exp, backend=backend, holomorphic=True)(z)
    assert d.dtype == np.complex64
    np.testing.assert_allclose(d, np.diag(np.exp(z)), **tolerance(backend, np.complex64))
    out, tangent = adcore.jvp(anp.exp, (z,), (np.ones(3, np.complex64),), backend=backend)
    assert out.dtype == tangent.dtype == np.complex64
    _, vjp_fn = adcore.vjp(anp.exp, z, backend=backend)
    assert vjp_fn(np.ones(3, np.complex64))[0].dtype == np.complex64


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_pytrees_argnums_and_aux_with_complex_leaves(backend):
    def f(p, w):
        return anp.sum(anp.abs(p["z"] * w) ** 2) + anp.sum(p["r"] ** 2)

    p = {"z": Z, "r": np.array([1.0, -2.0])}
    w = np.array([2.0, 1.0, 0.5])
    value, (gp, gw) = adcore.value_and_grad(f, argnums=(0, 1), backend=backend)(p, w)
    np.testing.assert_allclose(value, np.sum(np.abs(Z * w) ** 2) + 5.0, rtol=1e-12)
    np.testing.assert_allclose(gp["z"], 2 * np.conj(Z) * w**2, **tolerance(backend))
    np.testing.assert_allclose(gp["r"], 2 * p["r"], **tolerance(backend))
    np.testing.assert_allclose(gw, 2 * w * np.abs(Z) ** 2, **tolerance(backend))
    assert gp["z"].dtype == np.complex128 and gp["r"].dtype == gw.dtype == np.float64
    g, aux = adcore.grad(lambda z: (anp.abs(z) ** 2, z * 2), has_aux=True, backend=backend)(3 + 4j)
    np.testing.assert_allclose(g, 6 - 8j, **tolerance(backend))
    assert aux == 6 + 8j


# --- holomorphic=True ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_holomorphic_grad_of_exp_is_exp(backend):
    for z in [1 + 2j, np.complex128(-0.3 + 0.7j), 0j]:
        np.testing.assert_allclose(
            adcore.grad(anp.exp, backend=backend, holomorphic=True)(z), np.exp(z), **tolerance(backend)
        )
    d = adcore.jacobian(lambda z: z**3 + anp.sin(z), backend=backend, holomorphic=True)(Z)
    np.testing.assert_allclose(d, np.diag(3 * Z**2 + np.cos(Z)), **tolerance(backend))
    value, g = adcore.value_and_grad(lambda z: z * z, backend=backend, holomorphic=True)(1 + 1j)
    assert value == 2j
    np.testing.assert_allclose(g, 2 + 2j, **tolerance(backend))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "f",
    [anp.conj, lambda z: anp.abs(z) ** 2 + 0j, lambda z: anp.real(z) + 0j, lambda z: z * anp.conj(z) * z],
    ids=["conj", "abs2", "real", "z2-conj"],
)
def test_holomorphic_on_a_function_that_is_not_holomorphic_raises(backend, f):
    with pytest.raises(NotHolomorphicError, match="not holomorphic.*Cauchy-Riemann.*jvp"):
        adcore.grad(f, backend=backend, holomorphic=True)(1 + 2j)
    with pytest.raises(NotHolomorphicError, match=r"argument 0"):
        adcore.jacobian(lambda z: f(z), backend=backend, holomorphic=True)(Z)
    # the next call works
    np.testing.assert_allclose(
        adcore.grad(anp.exp, backend=backend, holomorphic=True)(1 + 2j), np.exp(1 + 2j), **tolerance(backend)
    )


def test_holomorphic_at_a_point_where_cauchy_riemann_holds_gives_the_derivative():
    # z*|z|^2 is complex-differentiable at 0 only, with derivative 0: a number, not an error, there
    f = lambda z: z * anp.abs(z) ** 2  # noqa: E731
    assert adcore.grad(f, holomorphic=True)(0j) == 0
    with pytest.raises(NotHolomorphicError):
        adcore.grad(f, holomorphic=True)(1e-3 + 0j)


def test_holomorphic_needs_complex_arguments_and_complex_values():
    with pytest.raises(InvalidInputError, match="holomorphic=True needs complex arguments"):
        adcore.grad(anp.exp, holomorphic=True)(1.0)
    with pytest.raises(InvalidOutputError, match="holomorphic=True: f returned real values"):
        adcore.grad(lambda z: anp.abs(z), holomorphic=True)(1 + 1j)
    with pytest.raises(adcore.NonScalarOutputError, match="jacobian"):
        adcore.grad(anp.exp, holomorphic=True)(Z)


# --- what has no single complex answer is refused -------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_to_complex_without_holomorphic_says_what_to_do(backend):
    with pytest.raises(InvalidOutputError, match="holomorphic=True.*adcore.jvp / adcore.vjp"):
        adcore.jacobian(anp.exp, backend=backend)(Z)
    with pytest.raises(InvalidOutputError, match="grad needs a real-valued function.*holomorphic=True"):
        adcore.grad(anp.exp, backend=backend)(1 + 2j)
    with pytest.raises(InvalidOutputError, match="grad needs a real-valued function"):
        adcore.grad(lambda x: anp.exp(1j * x), backend=backend)(0.5)  # R->C too: grad wants a real f
    assert adcore.grad(lambda z: anp.abs(z) ** 2, backend=backend)(3 + 4j) == pytest.approx(6 - 8j)


def test_second_derivatives_and_user_ops_refuse_complex_arguments():
    f = lambda z: anp.abs(z) ** 2  # noqa: E731
    with pytest.raises(ComplexValueError, match="hessian of a complex argument"):
        adcore.hessian(f)(1 + 2j)
    with pytest.raises(ComplexValueError, match="hvp of a complex argument"):
        adcore.hvp(f)(1 + 2j, 1 + 0j)
    body = adcore.checkpoint(f)
    with pytest.raises(ComplexValueError, match="accepts_complex"):
        adcore.grad(lambda z: body(z))(1 + 2j)


# --- real to complex: d Re f + 1j d Im f ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_to_complex_jacobian_is_d_real_plus_1j_d_imag(backend):
    x = np.array([0.3, -1.2])
    d = adcore.jacobian(lambda x: anp.exp(1j * x) * x, backend=backend)(x)
    np.testing.assert_allclose(d, np.diag(np.exp(1j * x) * (1 + 1j * x)), **tolerance(backend))
    assert d.dtype == np.complex128
    d32 = adcore.jacobian(lambda x: anp.exp(1j * x), backend=backend)(x.astype(np.float32))
    assert d32.dtype == np.complex64
    tree = adcore.jacobian(lambda x: {"c": anp.exp(1j * x), "r": anp.sum(x**2)}, backend=backend)(x)
    np.testing.assert_allclose(tree["c"], np.diag(1j * np.exp(1j * x)), **tolerance(backend))
    np.testing.assert_allclose(tree["r"], 2 * x, **tolerance(backend))


# --- jvp and vjp: JAX's formulas -----------------------------------------------------------------


def z2_conj(z):
    return z * z * anp.conj(z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_and_vjp_of_a_non_holomorphic_function_follow_jax(backend):
    # f(z) = z^2 conj(z): df = a dz + b conj(dz), a = 2|z|^2, b = z^2;
    # JAX: jvp(t) = a t + b conj(t); vjp(ct) = a ct + conj(b ct)
    z, t, ct = Z, np.array([0.5 - 1j, 1j, 2.0 + 0j]), np.array([1 + 1j, -0.5j, 0.25 + 2j])
    a, b = 2 * np.abs(z) ** 2, z**2
    out, tangent = adcore.jvp(z2_conj, (z,), (t,), backend=backend)
    np.testing.assert_allclose(out, z * z * np.conj(z), rtol=1e-14)
    np.testing.assert_allclose(tangent, a * t + b * np.conj(t), **tolerance(backend))
    out, vjp_fn = adcore.vjp(z2_conj, z, backend=backend)
    (got,) = vjp_fn(ct)
    np.testing.assert_allclose(got, a * ct + np.conj(b * ct), **tolerance(backend))
    assert got.dtype == tangent.dtype == np.complex128


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_matches_torch_conjugated(backend):
    torch = pytest.importorskip("torch")
    ct = np.array([1 + 1j, -0.5j, 0.25 + 2j])
    t = torch.tensor(Z, requires_grad=True)
    out = torch.exp(t) * torch.conj(t) + torch.abs(t) * t
    (expected,) = torch.autograd.grad(out, t, grad_outputs=torch.tensor(np.conj(ct)))
    _, vjp_fn = adcore.vjp(lambda z: anp.exp(z) * anp.conj(z) + anp.abs(z) * z, Z, backend=backend)
    np.testing.assert_allclose(vjp_fn(ct)[0], np.conj(expected.numpy()), **tolerance(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_and_vjp_mixing_real_and_complex_arguments_and_outputs(backend):
    def f(z, x):
        return {"c": z * x, "r": anp.sum(anp.abs(z) ** 2 * x)}

    x = np.array([1.0, 2.0, 3.0])
    tz, tx = np.array([1j, 1.0, 1 - 1j]), np.array([0.5, -1.0, 2.0])
    _, tangent = adcore.jvp(f, (Z, x), (tz, tx), backend=backend)
    np.testing.assert_allclose(tangent["c"], tz * x + Z * tx, **tolerance(backend))
    expected_r = np.sum(2 * np.real(np.conj(Z) * tz) * x + np.abs(Z) ** 2 * tx)
    np.testing.assert_allclose(tangent["r"], expected_r, **tolerance(backend))
    _, vjp_fn = adcore.vjp(f, Z, x, backend=backend)
    cz, cx = vjp_fn({"c": np.array([1.0 + 0j, 1j, 2.0 + 0j]), "r": np.float64(1.0)})
    # c = z x: ct_z = ct x, ct_x = Re(ct z); r = sum |z|^2 x: ct_z = 2 conj(z) x, ct_x = |z|^2
    c = np.array([1.0, 1j, 2.0])
    np.testing.assert_allclose(cz, c * x + 2 * np.conj(Z) * x, **tolerance(backend))
    np.testing.assert_allclose(cx, np.real(c * Z) + np.abs(Z) ** 2, **tolerance(backend))
    assert cx.dtype == np.float64


def test_cotangents_and_tangents_must_fit_their_values():
    _, vjp_fn = adcore.vjp(anp.abs, Z)
    with pytest.raises(InvalidInputError, match="cotangent must be real numbers"):
        vjp_fn(Z)  # the output is real: a complex cotangent would drop its imaginary part
    _, vjp_fn = adcore.vjp(anp.exp, Z)
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], np.exp(Z))  # a real cotangent of a complex output
    with pytest.raises(InvalidInputError, match="dtype float64 but its primal has dtype complex128"):
        adcore.jvp(anp.exp, (Z,), (np.ones(3),))
    with pytest.raises(InvalidInputError, match="dtype complex128 but its primal has dtype float64"):
        adcore.jvp(anp.exp, (np.ones(3),), (Z,))
    assert adcore.jvp(anp.exp, (1j,), (1j,))[1] == pytest.approx(1j * np.exp(1j))


@pytest.mark.parametrize("outer", BACKENDS)
def test_complex_derivatives_nest_inside_other_derivatives(outer):
    # d/dx Re(grad |z|^2 at z = x(1+i)) = d/dx 2x = 2; d/dx Re(exp'(x)) = exp(x), checked holomorphic inside
    inner = adcore.grad(lambda z: anp.abs(z) ** 2)
    assert adcore.grad(lambda x: anp.real(inner(x * (1 + 1j))), backend=outer)(0.7) == pytest.approx(2.0)
    holomorphic = adcore.grad(anp.exp, holomorphic=True)
    got = adcore.grad(lambda x: anp.real(holomorphic(x + 0j)), backend=outer)(0.7)
    assert got == pytest.approx(np.exp(0.7), rel=1e-7)
    with pytest.raises(NotHolomorphicError):
        adcore.grad(lambda x: anp.real(adcore.grad(anp.conj, holomorphic=True)(x + 0j)), backend=outer)(0.7)
