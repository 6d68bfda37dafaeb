"""eig_packed and eigvals (adcore/ops/eig.py): np.linalg.eig / eigvals of general square matrices.

Values against NumPy (the eigenvectors up to the gauge eig_packed fixes); the rules' JVPs against
central differences of the op (eigenvectors included, real and complex a); each VJP the transpose
of its JVP under Re(sum(u * v)); eigenvalue gradients of a non-symmetric matrix against central
differences of np.linalg.eigvals and against torch.linalg.eig's backward; the refusals at
repeated eigenvalues.
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_forward.jvps.eig import _eig_packed_jvp, _eigvals_jvp
from adcore_reverse.vjps.eig import _eig_packed_vjp, _eigvals_vjp

import adcore
import adcore.numpy as anp
from adcore.errors import LinearAlgebraError
from adcore.ops import eig

NONSYMMETRIC = np.array(
    [[1.0, 2.0, 0.0], [-1.0, 3.0, 1.0], [0.5, 0.0, 2.0]]
)  # a conjugate pair and a real one
COMPLEX_OPS = all(name in adcore.ops for name in ("real", "imag", "conj"))
needs_complex_ops = pytest.mark.skipif(
    not COMPLEX_OPS, reason="the complex ops real/imag/conj (issue 19's part K) are not registered"
)
needs_complex_getitem = pytest.mark.skipif(
    not (COMPLEX_OPS and adcore.ops.getitem.accepts_complex),
    reason="np.linalg.eig's unpacking needs getitem on complex values (issue 19's part K)",
)


def samples(dtype):
    return [s.args[0] for s in eig._samples(np.random.default_rng(7), dtype)]


def random_like(rng, shape, complex_):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def pack(w, v):
    return np.concatenate([w[..., None, :], v], axis=-2)


# --- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_eig_packed_holds_numpys_eigenpairs_bit_for_bit(dtype):
    for a in samples(dtype):
        packed = eig._eig_packed(a)
        w, v = packed[..., 0, :], packed[..., 1:, :]
        assert packed.dtype == eig.complex_dtype(dtype)
        w_np, v_np = np.linalg.eig(a)
        np.testing.assert_array_equal(w, w_np)
        np.testing.assert_array_equal(v, v_np)
        # LAPACK's gauge, which the rules hold: the entry of largest modulus is real (either sign)
        pivot = np.take_along_axis(v, eig.largest_entry(v)[..., None, :], axis=-2)
        assert np.all(pivot.imag == 0)
        np.testing.assert_allclose(np.abs(pivot[..., 0, :]), np.max(np.abs(v), axis=-2), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_np_linalg_eig_and_eigvals_on_traced_values_are_numpys_dtype_and_bits(dtype):
    real_spectrum = np.array(
        [[2.0, 1.0], [0.5, -1.0]], dtype=dtype
    )  # real eigenvalues: NumPy gives real arrays
    for a in samples(dtype)[:3] + [real_spectrum]:
        seen = {}

        def f(a, seen=seen):
            seen["eig"], seen["eigvals"] = np.linalg.eig(a), np.linalg.eigvals(a)
            return anp.sum(anp.real(seen["eigvals"]))

        adcore.grad(f, backend="reverse")(a)
        for got, want in zip((*seen["eig"], seen["eigvals"]), (*np.linalg.eig(a), np.linalg.eigvals(a))):
            got = adcore.concrete(got)
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            np.testing.assert_array_equal(got, want)
        assert f(a) == np.sum(np.real(np.linalg.eigvals(a)))  # and the next call works


def test_eigvals_are_complex_even_when_every_eigenvalue_is_real():
    w = eig._eigvals(np.diag([1.0, 2.0]).astype(np.float32))
    assert w.dtype == np.complex64
    np.testing.assert_array_equal(w, [1.0, 2.0])


def test_eig_refuses_a_matrix_that_is_not_square():
    with pytest.raises(LinearAlgebraError, match="square"):
        eig._eig_packed(np.ones((2, 3)))


# --- the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_jvps_match_central_differences_of_the_op_eigenvectors_included(dtype):
    rng = np.random.default_rng(0)
    h = 1e-6
    for a in samples(dtype):
        t = random_like(rng, a.shape, np.iscomplexobj(a))
        centre = eig._eig_packed(a)
        ahead, behind = (eig.eig_packed.gauge(eig._eig_packed(a + s * h * t), centre) for s in (1, -1))
        fd = (ahead - behind) / (2 * h)
        np.testing.assert_allclose(_eig_packed_jvp(t[None], eig._eig_packed(a), a)[0], fd, atol=1e-7)
        np.testing.assert_allclose(_eigvals_jvp(t[None], eig._eigvals(a), a)[0], fd[..., 0, :], atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_each_vjp_is_the_transpose_of_its_jvp_under_the_real_pairing(dtype):
    rng = np.random.default_rng(1)
    for a in samples(dtype):
        ans = eig._eig_packed(a)
        t = random_like(rng, a.shape, np.iscomplexobj(a))
        g = random_like(rng, ans.shape, True)
        ga = _eig_packed_vjp(g, ans, a)
        assert ga.dtype == a.dtype  # a real a's cotangent is real
        lhs = np.real(np.sum(g * _eig_packed_jvp(t[None], ans, a)[0]))
        assert lhs == pytest.approx(np.real(np.sum(ga * t)), abs=1e-12)
        gw = g[..., 0, :]
        lhs = np.real(np.sum(gw * _eigvals_jvp(t[None], ans[..., 0, :], a)[0]))
        assert lhs == pytest.approx(np.real(np.sum(_eigvals_vjp(gw, ans[..., 0, :], a) * t)), abs=1e-12)


def eigenvalue_loss_cotangent(w):
    """L(w) = sum(c * Re(w) + d * Im(w)); in JAX's convention its cotangent is c - i d."""
    c = np.arange(1.0, 1.0 + w.shape[-1])
    d = np.linspace(-1.0, 0.5, w.shape[-1])
    return (lambda w: np.sum(c * w.real + d * w.imag)), c - 1j * d


def test_eigenvalue_gradient_of_a_nonsymmetric_matrix_matches_central_differences():
    a = NONSYMMETRIC
    loss, g = eigenvalue_loss_cotangent(eig._eigvals(a))
    expected = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = 1e-6
        expected[index] = (loss(eig._eigvals(a + step)) - loss(eig._eigvals(a - step))) / 2e-6
    np.testing.assert_allclose(_eigvals_vjp(g, eig._eigvals(a), a), expected, atol=1e-8)


def test_eigenvalue_gradient_of_a_nonsymmetric_matrix_matches_torch():
    torch = pytest.importorskip("torch")
    a = NONSYMMETRIC
    w = eig._eigvals(a)
    loss, g = eigenvalue_loss_cotangent(w)
    x = torch.tensor(a, requires_grad=True)
    tw = torch.linalg.eigvals(x)
    order = [int(np.argmin(np.abs(tw.detach().numpy() - value))) for value in w]  # torch's order may differ
    tw = tw[order]
    c = torch.tensor(np.arange(1.0, 1.0 + 3))
    d = torch.tensor(np.linspace(-1.0, 0.5, 3))
    # torch's gradient of a real loss is the conjugate of JAX's cotangent; of a real input, the same
    torch.sum(c * tw.real + d * tw.imag).backward()
    np.testing.assert_allclose(_eigvals_vjp(g, w, a), x.grad.numpy(), atol=1e-12)


# --- repeated eigenvalues ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "a",
    [np.diag([1.0, 1.0, 2.0]), np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[2.0, 1.0], [1e-30, 2.0]])],
    ids=["multiple", "defective", "nearly-defective"],
)
def test_repeated_eigenvalues_are_a_typed_error_on_every_rule(a):
    ans = eig._eig_packed(a)
    t = np.ones((1,) + a.shape)
    for call in (
        lambda: _eig_packed_jvp(t, ans, a),
        lambda: _eig_packed_vjp(np.ones(ans.shape, complex), ans, a),
        lambda: _eigvals_jvp(t, ans[..., 0, :], a),
        lambda: _eigvals_vjp(np.ones(a.shape[-1], complex), ans[..., 0, :], a),
    ):
        with pytest.raises(LinearAlgebraError, match="repeated eigenvalues"):
            call()


# --- through the backends (the complex ops real/imag/conj and complex-accepting core ops) -----


@needs_complex_ops
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_grad_of_a_real_loss_of_the_eigenvalues(backend):
    a = NONSYMMETRIC
    loss, g = eigenvalue_loss_cotangent(eig._eigvals(a))
    c = np.arange(1.0, 4.0)
    d = np.linspace(-1.0, 0.5, 3)

    def f(a):
        w = np.linalg.eigvals(a)  # the op eigvals, as NumPy code calls it
        return anp.sum(c * anp.real(w) + d * anp.imag(w))

    np.testing.assert_allclose(
        adcore.grad(f, backend=backend)(a), _eigvals_vjp(g, eig._eigvals(a), a), atol=1e-10
    )


@needs_complex_getitem
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_np_linalg_eig_on_a_traced_value_differentiates_the_vectors_as_numeric_does(backend):
    a = NONSYMMETRIC
    weights = np.array([[0.3, -1.0, 2.0], [1.0, 0.5, -0.2], [0.7, 0.1, 1.5]])

    def f(a):
        w, v = np.linalg.eig(a)
        return anp.sum(anp.real(w) * anp.imag(w)) + anp.sum(weights * anp.real(v * anp.conj(v)) + anp.imag(v))

    expected = adcore.grad(f, backend="numeric")(a)
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(a), expected, atol=1e-7)


@needs_complex_getitem
@pytest.mark.parametrize("outer", ["forward", "reverse"])
def test_second_derivatives_see_the_gap_matrix_change_with_a(outer):
    # a Hessian-vector product of an eigenvector loss against central differences of its gradient
    a = NONSYMMETRIC
    v = np.random.default_rng(3).uniform(-1, 1, a.shape)
    weights = np.array([[0.3, -1.0, 2.0], [1.0, 0.5, -0.2], [0.7, 0.1, 1.5]])

    def f(a):
        packed = anp.eig_packed(a)
        return anp.sum(weights * anp.real(packed[..., 1:, :])) + anp.sum(anp.imag(packed[..., 0, :]) ** 2)

    grad = adcore.grad(f, backend="reverse")
    expected = (grad(a + 1e-5 * v) - grad(a - 1e-5 * v)) / 2e-5
    got = adcore.jvp(grad, (a,), (v,), backend="forward")[1] if outer == "forward" else None
    if outer == "reverse":
        got = adcore.grad(lambda a: anp.sum(grad(a) * v), backend="reverse")(a)
    np.testing.assert_allclose(got, expected, atol=1e-6)


@needs_complex_ops
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_grad_at_repeated_eigenvalues_is_a_typed_error_not_inf_or_nan(backend):
    def f(a):
        return anp.sum(anp.abs(np.linalg.eigvals(a)))

    with pytest.raises(LinearAlgebraError, match="repeated eigenvalues"):
        adcore.grad(f, backend=backend)(np.array([[2.0, 1.0], [0.0, 2.0]]))


def test_eigenvector_gradient_of_a_phase_invariant_loss_matches_torch():
    # sum(W * |V|^2) does not depend on the eigenvectors' phases, so torch's gauge and ours agree
    torch = pytest.importorskip("torch")
    a = samples(np.float64)[-1]  # 4 x 4, two conjugate pairs or a pair and two real eigenvalues
    ans = eig._eig_packed(a)
    w, v = ans[0], ans[1:]
    weights = np.random.default_rng(4).uniform(-1, 1, v.shape)
    # the cotangent of L = sum(W |V|^2) + sum(Im(w)^2): dL = Re(sum(2 W conj(V) dV)) + Re(sum(-2i Im(w) dw))
    g = np.concatenate([(-2j * w.imag)[None, :], 2 * weights * np.conj(v)], axis=0)
    x = torch.tensor(a, requires_grad=True)
    tw, tv = torch.linalg.eig(x)
    order = [int(np.argmin(np.abs(tw.detach().numpy() - value))) for value in w]
    tw, tv = tw[order], tv[:, order]
    loss = torch.sum(torch.tensor(weights) * tv.abs() ** 2) + torch.sum(tw.imag**2)
    loss.backward()
    np.testing.assert_allclose(_eig_packed_vjp(g, ans, a), x.grad.numpy(), atol=1e-10)
