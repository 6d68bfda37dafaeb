"""Reverse mode carries complex values through f (issue 19, JAX's convention, docs/complex.md):
real losses through complex intermediates against closed forms and central differences; a complex
cotangent meeting a real primal gives its real part, explicitly (no ComplexWarning); complex64 stays
complex64; second derivatives; an op whose rules are for real inputs refuses a complex value by
name; and every core op that accepts complex agrees with numeric on the split real function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import ComplexValueError
from adcore.ops import CORE_OPS

X = np.array([0.3, -0.7, 1.2])
A = np.array([[1 + 2j, -0.5j, 0.3], [0.2 - 1j, 1.5, 2j]])

# f, its gradient at x by hand
LOSSES = {
    "sum |exp(ix)|^2 (= n)": (lambda x: anp.sum(anp.abs(anp.exp(1j * x)) ** 2), lambda x: 0 * x),
    "Re(z conj z), z = (1 + 2i) x": (
        lambda x: anp.sum(anp.real((x * (1 + 2j)) * anp.conj(x * (1 + 2j)))),
        lambda x: 10 * x,
    ),
    "Re exp(ix) (= cos x)": (lambda x: anp.sum(anp.real(anp.exp(1j * x))), lambda x: -np.sin(x)),
    "Im exp(ix) (= sin x)": (lambda x: anp.sum(np.exp(1j * x).imag), lambda x: np.cos(x)),
    "angle exp(ix) (= x)": (lambda x: anp.sum(anp.angle(anp.exp(1j * x))), lambda x: np.ones_like(x)),
    "|A x|^2": (lambda x: anp.sum(anp.abs(A @ x) ** 2), lambda x: 2 * np.real(A.conj().T @ A @ x)),
    "var (1 + i) x (= 2 var x)": (lambda x: anp.var(x * (1 + 1j)), lambda x: 4 * (x - x.mean()) / x.size),
    "std (1 + i) x (= sqrt 2 std x)": (
        lambda x: anp.std(x * (1 + 1j), ddof=1),
        lambda x: np.sqrt(2) * (x - x.mean()) / ((x.size - 1) * np.std(x, ddof=1)),
    ),
    "|x + 2i| (a real x meets a complex constant)": (
        lambda x: anp.sum(anp.abs(x + 2j)),
        lambda x: x / np.sqrt(x**2 + 4),
    ),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_a_real_loss_through_complex_intermediates_is_right(name):
    f, gradient = LOSSES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a complex cotangent meeting a real x: no ComplexWarning
        g = adcore.grad(f, backend="reverse")(X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, gradient(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g, adcore.grad(f, backend="numeric")(X), rtol=1e-7, atol=1e-9)


def test_the_pullback_of_a_complex_leaf_is_jaxs_cotangent():
    # JAX: grad(lambda z: abs(z)**2)(3+4j) == 6-8j == 2 conj(z); for a holomorphic f, f'(z) itself
    reverse = adcore.get_backend("reverse")
    _, pullback = reverse.vjp(lambda z: anp.abs(z) ** 2, (np.complex128(3 + 4j),), (0,))
    assert pullback(1.0)[0] == pytest.approx(6 - 8j)
    _, pullback = reverse.vjp(lambda z: anp.exp(z) * z, (np.complex128(0.5 + 1j),), (0,))
    z = 0.5 + 1j
    assert pullback(np.complex128(1.0))[0] == pytest.approx(np.exp(z) * (1 + z))


def test_float32_and_complex64_keep_their_precision():
    x = X.astype(np.float32)

    def f(x):
        z = anp.exp(x * np.complex64(1j)) * x  # float32 * Python complex is complex64 too
        assert z.dtype == np.complex64
        return anp.sum(anp.abs(z * (1 + 1j)) ** 2)

    g = adcore.grad(f, backend="reverse")(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 4 * X, rtol=1e-5)
    reverse = adcore.get_backend("reverse")
    z = (X + 1j).astype(np.complex64)
    _, pullback = reverse.vjp(lambda z: anp.sum(anp.sin(z) * z), (z,), (0,))
    cotangent = pullback(np.complex64(1.0))[0]
    assert cotangent.dtype == np.complex64
    np.testing.assert_allclose(cotangent, np.cos(z) * z + np.sin(z), rtol=1e-5)


@pytest.mark.parametrize("outer", ["forward", "reverse"])
def test_second_derivatives_through_complex_intermediates(outer):
    hessian = adcore.hessian(LOSSES["Re exp(ix) (= cos x)"][0], inner="reverse", outer=outer)(X)
    np.testing.assert_allclose(hessian, np.diag(-np.cos(X)), rtol=1e-12, atol=1e-14)
    hessian = adcore.hessian(LOSSES["|A x|^2"][0], inner="reverse", outer=outer)(X)
    np.testing.assert_allclose(hessian, 2 * np.real(A.conj().T @ A), rtol=1e-12)
    # abs, angle and conj's rules differentiated again: |x + iy|**3 and angle's Hessian
    hessian = adcore.hessian(
        lambda v: anp.abs(v[0] + 1j * v[1]) ** 3 + anp.angle(v[0] + 1j * v[1]), inner="reverse", outer=outer
    )(np.array([0.6, -0.8]))
    x, y = (
        0.6,
        -0.8,
    )  # |z| = 1: d2 r^3 = 3 (r I + z z^T / r); d2 atan2(y, x) = [[2xy, y2-x2], [y2-x2, -2xy]] / r^4
    expected = 3 * (np.eye(2) + np.outer([x, y], [x, y])) + np.array(
        [[2 * x * y, y * y - x * x], [y * y - x * x, -2 * x * y]]
    )
    np.testing.assert_allclose(hessian, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("f", "op"),
    [
        (lambda x: anp.sum(anp.abs(anp.maximum(x * 1j, 0.0))), "maximum"),
        (lambda x: anp.sum(anp.abs(anp.sort(x + 1j))), "sort"),
        (lambda x: anp.median(anp.abs(x * (1 + 1j) + anp.median(x * 1j))), "median"),
        (lambda x: anp.abs(anp.logsumexp(x * 1j)), "logsumexp"),
    ],
    ids=["maximum", "sort", "median", "logsumexp"],
)
def test_a_real_only_op_fed_a_complex_traced_value_is_refused_naming_it(f, op):
    with pytest.raises(ComplexValueError, match=f"op {op!r} on backend 'reverse' got a complex value"):
        adcore.grad(f, backend="reverse")(X)
    assert adcore.grad(lambda x: anp.sum(x * x), backend="reverse")(X) == pytest.approx(2 * X)


# --- which core ops accept complex values ---------------------------------------------------
# Every op marked accepts_complex is checked on complex128/complex64 samples, on every backend,
# by the conformance engine (`adcore conformance`, CI's main job; tests/conformance/test_complex.py).


def test_the_marks_are_the_ones_checked():
    names = {op.name for op in CORE_OPS if op.accepts_complex}
    assert {"exp", "matmul", "einsum", "getitem", "sum", "abs", "real", "angle", "where", "astype"} <= names
    assert not names & {
        "median",
        "ptp",
        "maximum",
        "sort",
        "sign",
        "cholesky",
        "logabsdet",
        "clip",
        "logsumexp",
    }


def test_vdot_conjugates_its_first_argument_and_its_rules_follow():
    # vdot(a, b) = sum(conj(a) b): a's cotangent is conj(g b), b's g conj(a) (JAX's jnp.vdot)
    a, b = A[0], A[1] + 0.5
    g = np.complex128(0.7 - 0.2j)
    out, pullback = adcore.get_backend("reverse").vjp(anp.vdot, (a, b), (0, 1))
    assert out == pytest.approx(np.vdot(a, b))
    ga, gb = pullback(g)
    np.testing.assert_allclose(ga, np.conj(g * b), rtol=1e-14)
    np.testing.assert_allclose(gb, g * np.conj(a), rtol=1e-14)


def test_an_eager_tensor_backward_through_complex_intermediates():
    # |e^{ix}(2 - i) + 1|^2 = 6 + 2 (2 cos x + sin x): d/dx = 2 (cos x - 2 sin x), d2/dx2 = -2 (sin x + 2 cos x)
    from adcore_reverse import Tensor

    x0 = np.array([0.3, -1.2])
    x = Tensor(x0, requires_grad=True)
    anp.sum(anp.abs(anp.exp(1j * x) * (2 - 1j) + 1) ** 2).backward(create_graph=True)
    first = x.grad
    np.testing.assert_allclose(adcore.concrete(first), 2 * (np.cos(x0) - 2 * np.sin(x0)), rtol=1e-13)
    assert adcore.concrete(first).dtype == np.float64  # a real leaf's gradient stays real
    x.grad = None
    anp.sum(first).backward()  # the gradient's own graph, through the complex intermediates
    np.testing.assert_allclose(adcore.concrete(x.grad), -2 * (np.sin(x0) + 2 * np.cos(x0)), rtol=1e-12)
