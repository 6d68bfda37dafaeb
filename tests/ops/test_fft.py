"""The np.fft ops (adcore/ops/fft.py): fftn, ifftn, rfftn, irfftn and NumPy's fft functions on
traced values. Jacobians against the exact ones (each transform is linear: its columns are the
transforms of unit vectors), every n / s (pad and crop), axes and norm; the transposes by the
dot-product test <u, J v> = <J^T u, v> under Re(sum(u * v)); a spectral filter's gradient against
finite differences and torch; real losses of complex inputs against autograd; second order; the
refusals."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import ComplexValueError, InvalidValueError, UnsupportedFunctionError

pytestmark = pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")

BACKENDS = ["reverse", "forward", "numeric"]
RULE_BACKENDS = ["reverse", "forward"]
RNG = np.random.default_rng(19)


def exact_jacobian(f, x: np.ndarray) -> np.ndarray:
    """The Jacobian of a linear f of real x: f of each unit vector (complex for a complex f)."""
    columns = [np.asarray(f(e.reshape(x.shape))) for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(np.shape(columns[0]) + x.shape)


def tolerance(backend: str) -> dict:
    return {"atol": 1e-6} if backend == "numeric" else {"atol": 1e-12}


# (name, f, input shape): every function, norm, pad and crop, axes form
CALLS = [
    ("fft", lambda x: np.fft.fft(x), (6,)),
    ("fft n pad ortho", lambda x: np.fft.fft(x, n=9, norm="ortho"), (6,)),
    ("fft n crop forward", lambda x: np.fft.fft(x, 4, 0, "forward"), (7,)),
    ("fft axis 0", lambda x: np.fft.fft(x, axis=0), (3, 2)),
    ("ifft", lambda x: np.fft.ifft(x), (5,)),
    ("ifft n pad", lambda x: np.fft.ifft(x, n=8), (5,)),
    ("ifft n crop ortho", lambda x: np.fft.ifft(x, n=3, norm="ortho"), (5,)),
    ("rfft even", lambda x: np.fft.rfft(x), (8,)),
    ("rfft odd", lambda x: np.fft.rfft(x), (7,)),
    ("rfft n pad ortho", lambda x: np.fft.rfft(x, n=10, norm="ortho"), (7,)),
    ("rfft n crop forward", lambda x: np.fft.rfft(x, n=5, norm="forward"), (8,)),
    ("rfft axis 0", lambda x: np.fft.rfft(x, axis=0), (4, 3)),
    ("irfft", lambda x: np.fft.irfft(x), (5,)),
    ("irfft n odd", lambda x: np.fft.irfft(x, n=9), (5,)),
    ("irfft n crop ortho", lambda x: np.fft.irfft(x, n=4, norm="ortho"), (6,)),
    ("irfft forward axis 0", lambda x: np.fft.irfft(x, axis=0, norm="forward"), (4, 2)),
    ("fft2", lambda x: np.fft.fft2(x), (2, 3, 4)),
    ("fft2 s", lambda x: np.fft.fft2(x, s=(3, 2)), (2, 3)),
    ("ifft2 ortho", lambda x: np.fft.ifft2(x, norm="ortho"), (3, 4)),
    ("rfft2", lambda x: np.fft.rfft2(x), (3, 4)),
    ("rfft2 axes s", lambda x: np.fft.rfft2(x, s=(4, 3), axes=(0, 2)), (2, 2, 5)),
    ("irfft2", lambda x: np.fft.irfft2(x), (3, 4)),
    ("irfft2 s forward", lambda x: np.fft.irfft2(x, s=(2, 7), norm="forward"), (3, 4)),
    ("fftn", lambda x: np.fft.fftn(x), (2, 3, 2)),
    ("fftn s axes", lambda x: np.fft.fftn(x, s=(4, 2), axes=(2, 0)), (3, 2, 3)),
    ("fftn s only", lambda x: np.fft.fftn(x, s=(3, 5)), (2, 4)),  # NumPy warns: axes=None with s
    ("ifftn axes", lambda x: np.fft.ifftn(x, axes=(1,), norm="forward"), (2, 3)),
    ("rfftn", lambda x: np.fft.rfftn(x), (2, 3, 4)),
    ("rfftn s axes ortho", lambda x: np.fft.rfftn(x, s=(3, 3), axes=(-1, 0), norm="ortho"), (2, 3, 4)),
    ("irfftn", lambda x: np.fft.irfftn(x), (2, 3, 3)),
    ("irfftn s axes", lambda x: np.fft.irfftn(x, s=(3, 6), axes=(0, 1)), (2, 3)),
    ("hfft", lambda x: np.fft.hfft(x), (5,)),
    ("hfft n odd ortho", lambda x: np.fft.hfft(x, n=7, norm="ortho"), (5,)),
    ("ihfft", lambda x: np.fft.ihfft(x), (6,)),
    ("ihfft n crop forward", lambda x: np.fft.ihfft(x, n=4, norm="forward"), (6,)),
    ("fftshift", lambda x: np.fft.fftshift(x), (3, 4)),
    ("fftshift axes", lambda x: np.fft.fftshift(x, axes=1), (3, 5)),
    ("ifftshift", lambda x: np.fft.ifftshift(x), (5,)),
    ("ifftshift axes", lambda x: np.fft.ifftshift(x, axes=(0,)), (3, 2)),
]
IDS = [c[0] for c in CALLS]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, f, shape", CALLS, ids=IDS)
def test_real_input_jacobian_is_the_exact_one(backend, name, f, shape):
    # real x: the Jacobian of a complex output is d Re f/dx + i d Im f/dx, f(e_i) for linear f
    x = RNG.normal(size=shape)
    np.testing.assert_allclose(
        adcore.jacobian(f, backend=backend)(x), exact_jacobian(f, x), **tolerance(backend)
    )


def pairing(u, v) -> float:
    return float(np.real(np.sum(np.asarray(u) * np.asarray(v))))


REAL_ONLY = ("rfft", "ihfft")  # real input only: a complex one is refused
COMPLEX_IN = [c for c in CALLS if not c[0].startswith(REAL_ONLY)]


@pytest.mark.parametrize("name, f, shape", COMPLEX_IN, ids=[c[0] for c in COMPLEX_IN])
def test_complex_input_jvp_is_the_map_and_vjp_its_transpose(name, f, shape):
    # each function is R-linear: its JVP at any z is f(t); its VJP is the transpose under
    # Re(sum(u * v)) (JAX's convention): <u, f(t)> == <vjp(u), t>, for irfft's real output too
    z = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    t = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    _, tangent = adcore.jvp(f, (z,), (t,), backend="forward")
    np.testing.assert_allclose(tangent, f(t), atol=1e-12)
    out, pullback = adcore.vjp(f, z, backend="reverse")
    u = RNG.normal(size=out.shape) + (1j * RNG.normal(size=out.shape) if np.iscomplexobj(out) else 0)
    (back,) = pullback(u)
    assert back.dtype == z.dtype and back.shape == z.shape
    assert pairing(u, f(t)) == pytest.approx(pairing(back, t), abs=1e-10)


HOLOMORPHIC = [c for c in COMPLEX_IN if not c[0].startswith(("irfft", "hfft"))]  # real outputs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, f, shape", HOLOMORPHIC, ids=[c[0] for c in HOLOMORPHIC])
def test_holomorphic_jacobian_is_the_transform_matrix(backend, name, f, shape):
    # fft, ifft and the shifts are C-linear: holomorphic=True gives the complex matrix itself
    z = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    got = adcore.jacobian(f, backend=backend, holomorphic=True)(z)
    np.testing.assert_allclose(got, exact_jacobian(f, np.zeros(shape)), **tolerance(backend))


# --- a spectral filter: the worked check ---------------------------------------------

N_EVEN, N_ODD = 64, 63


def spectral_loss(x, h, n, norm=None):
    """sum(irfft(rfft(x) * H, n)**2): x filtered by H in the frequency domain, its energy."""
    return np.sum(np.fft.irfft(np.fft.rfft(x, norm=norm) * h, n, norm=norm) ** 2)


def central_differences(f, x, step=1e-6):
    out = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = step
        out.flat[i] = (f(x + e) - f(x - e)) / (2 * step)
    return out


FILTERS = {
    "real H": lambda m: RNG.normal(size=m),
    "complex H": lambda m: RNG.normal(size=m) + 1j * RNG.normal(size=m),
}


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("n", [N_EVEN, N_ODD])
@pytest.mark.parametrize("kind", sorted(FILTERS))
def test_spectral_filter_gradient_matches_finite_differences(backend, norm, n, kind):
    x = RNG.normal(size=n)
    h = FILTERS[kind](n // 2 + 1)
    got = adcore.grad(lambda x: spectral_loss(x, h, n, norm), backend=backend)(x)
    expected = central_differences(lambda x: spectral_loss(x, h, n, norm), x)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", sorted(FILTERS))
def test_spectral_filter_hessian_is_exact(kind):
    # the loss is |A x|^2 with A the filter's matrix: its Hessian is 2 A^T A, second order
    # through every rule (forward over reverse)
    n = 12
    h = FILTERS[kind](n // 2 + 1)
    a = exact_jacobian(lambda x: np.fft.irfft(np.fft.rfft(x) * h, n), np.zeros(n))
    got = adcore.hessian(lambda x: spectral_loss(x, h, n))(RNG.normal(size=n))
    np.testing.assert_allclose(got, 2 * a.T @ a, atol=1e-12)


def test_spectral_filter_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    n = 256
    x = RNG.normal(size=n)
    h = FILTERS["complex H"](n // 2 + 1)
    xt = torch.tensor(x, requires_grad=True)
    torch.sum(torch.fft.irfft(torch.fft.rfft(xt) * torch.tensor(h), n) ** 2).backward()
    for backend in RULE_BACKENDS:
        got = adcore.grad(lambda x: spectral_loss(x, h, n), backend=backend)(x)
        np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-10, atol=1e-10)


def loss_2d(x, w):
    """A real loss of real x through fft2, ifftn, irfftn and rfftn, with s, axes and norm."""
    y = np.fft.fft2(x, s=(5, 4), norm="ortho") * w
    z = np.fft.irfftn(np.fft.ifftn(y, axes=(0,)), s=(5, 6), axes=(0, 1), norm="forward")
    return np.sum(z**2) + np.sum(np.real(np.fft.rfftn(x, s=(3, 7), axes=(1, 0))))


def torch_loss_2d(x, w, torch):
    y = torch.fft.fft2(x, s=(5, 4), norm="ortho") * w
    z = torch.fft.irfftn(torch.fft.ifftn(y, dim=(0,)), s=(5, 6), dim=(0, 1), norm="forward")
    return torch.sum(z**2) + torch.sum(torch.fft.rfftn(x, s=(3, 7), dim=(1, 0)).real)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_2d_loss_matches_torch(backend):
    # for a real loss of real x, torch's convention (the conjugate of JAX's) gives the same gradient
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(4, 6))
    w = RNG.normal(size=(5, 4)) + 1j * RNG.normal(size=(5, 4))
    xt = torch.tensor(x, requires_grad=True)
    torch_loss_2d(xt, torch.tensor(w), torch).backward()
    np.testing.assert_allclose(loss_2d(x, w), torch_loss_2d(torch.tensor(x), torch.tensor(w), torch).item())
    got = adcore.grad(lambda x: loss_2d(x, w), backend=backend)(x)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-10, atol=1e-10)


# real losses of complex z through the transforms (fft the module: NumPy's, or autograd's)
AUTOGRAD_LOSSES = {
    "fft then irfft": lambda z, fft, np_: np_.sum((fft.irfft(fft.fft(z, axis=0), n=10) * W10) ** 2),
    "ifft2 with s": lambda z, fft, np_: np_.sum(np_.abs(fft.ifft2(z, s=(2, 8))) ** 2),
    "fftn then irfftn": lambda z, fft, np_: np_.sum(np_.sin(fft.irfftn(fft.fftn(z, norm="ortho")))),
    "shifted spectrum": lambda z, fft, np_: np_.sum(np_.real(fft.fftshift(fft.fft(z)) * W36)),
    "rfft2 of a real part": lambda z, fft, np_: np_.sum(np_.abs(fft.rfft2(np_.real(z) * np_.imag(z))) ** 2),
}
W10 = RNG.normal(size=(3, 10))
W36 = RNG.normal(size=(3, 6)) + 1j * RNG.normal(size=(3, 6))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name", sorted(AUTOGRAD_LOSSES))
def test_real_losses_of_complex_inputs_match_autograd(backend, name):
    # HIPS autograd returns JAX's form for a real f of complex z (grad |z|^2 = 2 conj(z)); its
    # real-fft gradients take even lengths only
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as agnp

    loss = AUTOGRAD_LOSSES[name]
    z = RNG.normal(size=(3, 6)) + 1j * RNG.normal(size=(3, 6))
    expected = autograd.grad(lambda z: loss(z, agnp.fft, agnp))(z)
    got = adcore.grad(lambda z: loss(z, np.fft, np), backend=backend)(z)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_fft_vjp_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    z = RNG.normal(size=(3, 5)) + 1j * RNG.normal(size=(3, 5))
    u = RNG.normal(size=(3, 8)) + 1j * RNG.normal(size=(3, 8))
    for call in (lambda z, fft: fft.fft(z, n=8), lambda z, fft: fft.ifft(z, n=8, norm="ortho")):
        _, pull = adcore.vjp(lambda z, call=call: call(z, np.fft), z)
        _, jax_pull = jax.vjp(lambda z, call=call: call(z, jax.numpy.fft), z)
        np.testing.assert_allclose(pull(u)[0], jax_pull(u)[0], atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_float32_stays_float32(backend):
    x = RNG.normal(size=16).astype(np.float32)
    h = FILTERS["complex H"](9).astype(np.complex64)
    g = adcore.grad(lambda x: spectral_loss(x, h, 16), backend=backend)(x)
    assert g.dtype == np.float32
    expected = adcore.grad(lambda x: spectral_loss(x, h, 16), backend=backend)(x.astype(np.float64))
    np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-4)


# --- refusals: never a plausible wrong number -------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_rfft_of_a_complex_value_is_refused(backend):
    # NumPy's rfft drops the imaginary part silently; its derivative would too
    z = RNG.normal(size=4) + 1j * RNG.normal(size=4)
    with pytest.raises(ComplexValueError, match="rfftn"):
        adcore.grad(lambda z: np.sum(np.abs(np.fft.rfft(z)) ** 2), backend=backend)(z)
    with pytest.raises(ComplexValueError, match="rfftn"):
        adcore.grad(lambda x: np.sum(np.abs(np.fft.rfft(x * 1j)) ** 2), backend=backend)(z.real)
    with pytest.raises(ComplexValueError, match="rfftn"):
        adcore.grad(lambda z: np.sum(np.abs(np.fft.ihfft(z)) ** 2), backend=backend)(z)


def test_repeated_axes_are_refused():
    with pytest.raises(UnsupportedFunctionError, match="repeat"):
        adcore.grad(lambda x: np.sum(np.abs(np.fft.fftn(x, axes=(0, 0)))))(RNG.normal(size=(3, 2)))


def test_out_and_a_bad_norm_are_refused():
    x = RNG.normal(size=4)
    with pytest.raises(UnsupportedFunctionError, match="out="):
        adcore.grad(lambda x: np.sum(np.abs(np.fft.fft(x, out=np.empty(4, complex)))))(x)
    with pytest.raises(InvalidValueError, match="norm"):
        adcore.grad(lambda x: np.sum(np.abs(np.fft.fft(x, norm="unitary"))))(x)


def test_values_are_numpys():
    x = RNG.normal(size=(3, 4))
    for name, f, shape in CALLS:
        x = RNG.normal(size=shape)
        value, _ = adcore.vjp(f, x)
        np.testing.assert_allclose(value, f(x), atol=1e-12, err_msg=name)
