"""Complex np.linalg.norm, svd/svdvals and Hermitian eigh/eigvalsh on traced values (issue 32,
class 11): NumPy's values bit for bit, derivatives in JAX's convention (docs/complex.md) against
central differences of NumPy's own function and closed forms, and the phase of complex singular
and eigen vectors: a loss that depends on it is refused (reverse checks the cotangent, as torch's
svd/eigh backward do; forward cannot see the loss and refuses the vectors' tangents)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.conformance import engine
from adcore.errors import InvalidValueError, UnsupportedByBackendError

BACKENDS = ["reverse", "forward", "numeric"]
VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5]
MATRIX_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


def _complex(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _hermitian(rng: np.random.Generator, n: int) -> np.ndarray:
    a = _complex(rng, n, n)
    return a + a.conj().T


def _central(f, z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """df/dx - 1j df/dy entry by entry (JAX's gradient of a real f), by central differences of f."""
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[idx] = h
        dx = (f(z + e) - f(z - e)) / (2 * h)
        e[idx] = 1j * h
        dy = (f(z + e) - f(z - e)) / (2 * h)
        g[idx] = dx - 1j * dy
    return g


def _assert_grad(f, z, backends=BACKENDS, rtol=1e-7):
    expected = _central(f, z)
    for backend in backends:
        g = adcore.grad(f, backend=backend)(z)
        assert g.dtype == z.dtype
        np.testing.assert_allclose(
            g, expected, rtol=rtol, atol=rtol * np.max(np.abs(expected)), err_msg=backend
        )


# --- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_traced_values_are_numpys_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    a, h = _complex(rng, 4, 3).astype(dtype), _hermitian(rng, 3).astype(dtype)
    calls = [
        (lambda a, h: np.linalg.svd(a, full_matrices=False), ["reverse", "numeric"]),
        (lambda a, h: np.linalg.svd(a, compute_uv=False), BACKENDS),
        (lambda a, h: np.linalg.eigh(h), ["reverse", "numeric"]),
        (lambda a, h: np.linalg.eigh(h, UPLO="U"), ["reverse", "numeric"]),
        (lambda a, h: np.linalg.eigvalsh(h), BACKENDS),
        *((lambda a, h, o=o: np.linalg.norm(a[:, 0], o), BACKENDS) for o in VECTOR_ORDS),
        *((lambda a, h, o=o: np.linalg.norm(a, o), BACKENDS) for o in MATRIX_ORDS),
        (lambda a, h: np.linalg.norm(a, axis=0), BACKENDS),
    ]
    for call, backends in calls:
        plain = call(a, h)
        for backend in backends:
            traced = adcore.vjp(call, a, h, backend=backend)[0] if backend == "reverse" else None
            if backend != "reverse":
                traced = adcore.jvp(call, (a, h), (np.zeros_like(a), np.zeros_like(h)), backend=backend)[0]
            parts = (traced, plain) if isinstance(plain, tuple) else ((traced,), (plain,))
            for t, p in zip(*parts):
                assert np.asarray(t).dtype == np.asarray(p).dtype
                assert np.array_equal(t, p), backend


# --- closed forms --------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_norm_gradients_are_the_closed_forms(backend):
    z = _complex(np.random.default_rng(1), 5)
    tol = 1e-12 if backend != "numeric" else 1e-7
    grad = lambda f: adcore.grad(f, backend=backend)(z)  # noqa: E731
    # d||z|| = Re(sum conj(z) dz) / ||z||; d sum|z| = Re(sum conj(z)/|z| dz); d max|z|: that entry's
    np.testing.assert_allclose(grad(np.linalg.norm), np.conj(z) / np.linalg.norm(z), atol=tol)
    np.testing.assert_allclose(grad(lambda z: np.linalg.norm(z, 1)), np.conj(z) / np.abs(z), atol=tol)
    k = np.argmax(np.abs(z))
    expected = np.where(np.arange(5) == k, np.conj(z) / np.abs(z), 0)
    np.testing.assert_allclose(grad(lambda z: np.linalg.norm(z, np.inf)), expected, atol=tol)
    # ||z||_3: |z|^3 sums; d = |z| conj(z) / ||z||_3^2
    p3 = np.linalg.norm(z, 3)
    np.testing.assert_allclose(grad(lambda z: np.linalg.norm(z, 3)), np.abs(z) * np.conj(z) / p3**2, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_singular_value_gradients_are_conj_u_v_h(backend):
    a = _complex(np.random.default_rng(2), 3, 4)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    tol = 1e-12 if backend != "numeric" else 1e-7
    # d s_k = Re(u_k^H dA v_k): JAX's gradient of sum(s) is conj(U V^H)
    g = adcore.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=False)), backend=backend)(a)
    np.testing.assert_allclose(g, np.conj(u @ vh), atol=tol)
    g = adcore.grad(lambda a: np.linalg.norm(a, "nuc"), backend=backend)(a)
    np.testing.assert_allclose(g, np.conj(u @ vh), atol=tol)
    g = adcore.grad(lambda a: np.linalg.norm(a, 2), backend=backend)(a)
    np.testing.assert_allclose(g, np.conj(np.outer(u[:, 0], vh[0])), atol=tol)
    g = adcore.grad(lambda a: np.linalg.norm(a, "fro"), backend=backend)(a)
    np.testing.assert_allclose(g, np.conj(a) / np.linalg.norm(a), atol=tol)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hermitian_eigenvalues_gradient_is_conj_v_v_h_on_the_triangle_read(backend, uplo):
    h = _hermitian(np.random.default_rng(3), 3)
    w, v = np.linalg.eigh(h, UPLO=uplo)
    tol = 1e-11 if backend != "numeric" else 1e-7
    # d w_k = Re(v_k^H dM v_k) of the Hermitian M read from the triangle uplo: an entry off the
    # diagonal there stands for itself and its mirror (weight 2), the other triangle is not read
    ones = np.ones((3, 3))
    weights = np.tril(ones) + np.tril(ones, -1) if uplo == "L" else np.triu(ones) + np.triu(ones, 1)
    for k in range(3):
        expected = np.conj(np.outer(v[:, k], v[:, k].conj())) * weights
        g = adcore.grad(lambda h, k=k: np.linalg.eigvalsh(h, UPLO=uplo)[k], backend=backend)(h)
        np.testing.assert_allclose(g, expected, atol=tol)
        if backend != "forward":
            g = adcore.grad(lambda h, k=k: np.linalg.eigh(h, UPLO=uplo)[0][k], backend=backend)(h)
            np.testing.assert_allclose(g, expected, atol=tol)


# --- against central differences of NumPy's function ------------------------------------------------


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_complex_vector_norms_match_central_differences(ord):
    z = _complex(np.random.default_rng(4), 2, 3)
    _assert_grad(lambda z: np.linalg.norm(z[0], ord), z)
    _assert_grad(lambda z: np.sum(np.linalg.norm(z, ord, axis=1) * [1.0, 2.0]), z)


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 2, 3)])
def test_complex_matrix_norms_match_central_differences(ord, shape):
    z = _complex(np.random.default_rng(5), *shape)
    axis = (1, 2) if len(shape) == 3 else None
    _assert_grad(lambda z: np.sum(np.linalg.norm(z, ord, axis=axis)), z)


def _svd_losses():
    def weighted(z):
        u, s, vh = np.linalg.svd(z, full_matrices=False)
        return np.sum(np.abs((u * np.sin(s)) @ vh) ** 2 * np.arange(z.size).reshape(z.shape))

    return {
        "s": lambda z: np.sum(np.linalg.svd(z, full_matrices=False)[1] ** 2 * np.arange(1, 1 + min(z.shape))),
        "|U|": lambda z: np.sum(np.abs(np.linalg.svd(z, full_matrices=False)[0]) ** 3),
        "|Vh|": lambda z: np.sum(np.abs(np.linalg.svd(z, full_matrices=False)[2]) ** 3),
        "U sin(s) Vh": weighted,
    }


@pytest.mark.parametrize("loss", list(_svd_losses()))
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_phase_free_functions_of_a_complex_svd_match_central_differences(loss, shape):
    a = _complex(np.random.default_rng(6), *shape)
    _assert_grad(_svd_losses()[loss], a, ["reverse", "numeric"])


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_phase_free_functions_of_a_complex_eigh_match_central_differences(uplo):
    rng = np.random.default_rng(7)
    weights = np.arange(9.0).reshape(3, 3)

    def loss(h):
        w, v = np.linalg.eigh(h, UPLO=uplo)
        return np.sum(np.abs(v) ** 3 * weights) + np.sum(w**2) + np.sum(np.abs((v * np.exp(w)) @ v.conj().T))

    _assert_grad(loss, _hermitian(rng, 3), ["reverse", "numeric"])
    _assert_grad(loss, _complex(rng, 3, 3), ["reverse", "numeric"])  # not Hermitian: one triangle is read


def test_complex64_gives_complex64_derivatives():
    a = _complex(np.random.default_rng(8), 3, 2).astype(np.complex64)
    for backend in BACKENDS:
        g = adcore.grad(lambda a: np.linalg.norm(a, "nuc"), backend=backend)(a)
        assert g.dtype == np.complex64
        u, _, vh = np.linalg.svd(a.astype(np.complex128), full_matrices=False)
        np.testing.assert_allclose(g, np.conj(u @ vh), atol=1e-3)


# --- the phase of complex vectors ------------------------------------------------------------------


def test_reverse_refuses_a_loss_that_depends_on_a_vectors_phase_then_works():
    rng = np.random.default_rng(9)
    a, h = _complex(rng, 3, 3), _hermitian(rng, 3)
    with pytest.raises(InvalidValueError, match=r"e\^\{i phi\}.*svd_packed|svd_packed.*e\^\{i phi\}"):
        adcore.grad(lambda a: np.real(np.sum(np.linalg.svd(a)[0])))(a)
    with pytest.raises(InvalidValueError, match="eigh_packed"):
        adcore.grad(lambda h: np.real(np.linalg.eigh(h)[1][1, 0]))(h)
    # a pullback given a cotangent of U alone: as phase-dependent
    _, pullback = adcore.vjp(lambda a: np.linalg.svd(a)[0], a)
    with pytest.raises(InvalidValueError, match="ill-defined"):
        pullback(np.ones((3, 3), complex))
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(
        adcore.grad(lambda a: np.linalg.norm(a, "nuc"))(a), np.conj(u @ vh), atol=1e-12
    )


def test_forward_refuses_complex_vectors_tangents_then_works():
    rng = np.random.default_rng(10)
    a, h = _complex(rng, 3, 3), _hermitian(rng, 3)
    with pytest.raises(UnsupportedByBackendError, match="'svd_packed' on backend 'forward'"):
        adcore.grad(lambda a: np.sum(np.abs(np.linalg.svd(a)[0])), backend="forward")(a)
    with pytest.raises(UnsupportedByBackendError, match="'eigh_packed' on backend 'forward'"):
        adcore.grad(lambda h: np.linalg.eigh(h)[0][0], backend="forward")(h)
    w, v = np.linalg.eigh(h)
    g = adcore.grad(lambda h: np.linalg.eigvalsh(h)[0], backend="forward")(h)
    np.testing.assert_allclose(
        g, np.conj(np.outer(v[:, 0], v[:, 0].conj())) * (np.tril(np.ones((3, 3))) * 2 - np.eye(3)), atol=1e-12
    )


def test_real_inputs_keep_their_real_derivatives():
    a = np.random.default_rng(11).standard_normal((3, 3))
    u, _, vh = np.linalg.svd(a)
    for backend in BACKENDS:
        g = adcore.grad(lambda a: np.linalg.norm(a, "nuc"), backend=backend)(a)
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, u @ vh, atol=1e-7)


def test_conformance_checks_the_complex_decompositions_on_every_complex_backend():
    ops = ["norm", "svdvals", "eigvalsh", "eigh_packed", "svd_packed"]
    result = engine.run(BACKENDS, ops=ops, dtypes=["complex128", "complex64"])
    assert result.ok
    cells = {(c.subject, c.backend): c for c in result.cells if c.dtype == "complex128"}
    for op in ops:
        assert cells[op, "reverse"].status == cells[op, "numeric"].status == "agrees"
        assert cells[op, "reverse"].checks > 0
    for op in ["norm", "svdvals", "eigvalsh"]:
        assert cells[op, "forward"].status == "agrees"
    for op in [
        "eigh_packed",
        "svd_packed",
    ]:  # forward declines: it cannot see whether the loss uses the phase
        assert cells[op, "forward"].status == "unsupported"
