"""eigh, eigvalsh, svd, svdvals, qr, norm, pinv, lstsq, matrix_rank (adcore/ops/decompositions.py).

Values against NumPy; gradients against torch.linalg (where both are defined the same way) and
against central differences of the NumPy function; the degenerate points of issue 17 (eigh at
the identity and at a repeated eigenvalue, svd of a rank-deficient matrix, norm at 0) against
central differences of functions invariant in the degenerate subspace; the typed refusals.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError, LinearAlgebraError, MissingRuleError, UnsupportedFunctionError

RULE_BACKENDS = ["reverse", "forward"]


def central_difference(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d f / d x by central differences of a NumPy function, entry by entry."""
    out = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        out[index] = (f(x + step) - f(x - step)) / (2 * h)
    return out


def with_eigenvalues(values, seed: int = 0) -> np.ndarray:
    """Q diag(values) Q^T for a random orthogonal Q."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(values), len(values))))
    return (q * np.asarray(values, dtype=float)) @ q.T


def with_singular_values(values, m: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = len(values)
    return (u[:, :k] * np.asarray(values, dtype=float)) @ v[:, :k].T


def lower_read(g: np.ndarray) -> np.ndarray:
    """A symmetric matrix's gradient as eigh(UPLO='L') sees it: on the lower triangle, off-diagonal doubled."""
    return np.tril(g) + np.tril(g, -1)


# --- values ------------------------------------------------------------------------------------


def test_linalg_functions_on_traced_values_return_numpys_namedtuples():
    a = with_eigenvalues([1.0, 2.0, 4.0])
    b = with_singular_values([3.0, 1.0], 4, 2)
    seen = {}

    def f(a, b):
        seen["eigh"] = np.linalg.eigh(a)
        seen["svd"] = np.linalg.svd(b, full_matrices=False)
        seen["qr"] = np.linalg.qr(b)
        seen["lstsq"] = np.linalg.lstsq(b, a[:, 0][:2].repeat(2), rcond=None)
        seen["rank"] = np.linalg.matrix_rank(b)
        return anp.sum(seen["eigh"].eigenvalues) + anp.sum(seen["svd"].S)

    adcore.grad(f, argnums=(0, 1))(a, b)
    # NumPy's values bit for bit, LAPACK's signs included
    for name, expected in (
        ("eigh", np.linalg.eigh(a)),
        ("svd", np.linalg.svd(b, full_matrices=False)),
        ("qr", np.linalg.qr(b)),
    ):
        assert type(seen[name]).__name__ == type(expected).__name__
        for got, want in zip(seen[name], expected):
            got = adcore.concrete(got)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    x, residuals, rank, sv = seen["lstsq"]
    expected = np.linalg.lstsq(b, a[:, 0][:2].repeat(2), rcond=None)
    for got, want in ((x, expected[0]), (residuals, expected[1]), (sv, expected[3])):  # bit for bit
        got = adcore.concrete(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert rank == expected[2] == 2 and type(rank) is type(expected[2])  # NumPy's own (np.int32)
    assert seen["rank"] == 2


# --- NumPy's values, LAPACK's signs (issue 32, class 1) ---------------------------------------

WEIGHTS = np.arange(1.0, 17.0).reshape(4, 4) / 8  # each vector's entries weighted differently


def eigh_vectors_loss(a):
    w, v = np.linalg.eigh(a)
    return anp.sum(v * WEIGHTS) + v[0, 1] * w[2]


def svd_vectors_loss(a):
    u, s, vh = np.linalg.svd(a)
    return anp.sum(u * WEIGHTS) + vh[1, 2] * s[0] + anp.sum(vh[:, 0])


def qr_vectors_loss(a):
    q, r = np.linalg.qr(a)
    return anp.sum(q * WEIGHTS) + r[0, 1] + anp.sum(r[:, 3])


def random_4x4(k: int, symmetric: bool) -> np.ndarray:
    x = np.random.default_rng(100 + k).standard_normal((4, 4))
    return x + x.T if symmetric else x


def eigh_vectors_gradient(a: np.ndarray) -> np.ndarray:
    """eigh_vectors_loss's gradient from the perturbation formulas, LAPACK's vectors held to their
    signs: dw_k = v_k^T dM v_k, dv_k = sum_{j != k} v_j (v_j^T dM v_k) / (w_k - w_j), M the
    symmetric matrix read from a's lower triangle (the analytic oracle)."""
    w, v = np.linalg.eigh(a)
    gv = WEIGHTS.copy()
    gv[0, 1] += w[2]
    gm = np.outer(v[:, 2], v[:, 2]) * v[0, 1]  # through w[2]
    for k in range(4):
        for j in range(4):
            if j != k:
                gm += (gv[:, k] @ v[:, j]) / (w[k] - w[j]) * np.outer(v[:, j], v[:, k])
    return lower_read((gm + gm.T) / 2)


LOSSES = [
    pytest.param(eigh_vectors_loss, True, id="eigh"),
    pytest.param(svd_vectors_loss, False, id="svd"),
    pytest.param(qr_vectors_loss, False, id="qr"),
]


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("shape", [(3, 5), (1, 3), (2, 2, 4), (4, 3)])
def test_qr_of_a_wide_or_tall_matrix_is_numpys_bit_for_bit(backend, shape):
    # a wide a's R past its first m columns is LAPACK's too (it was Q^T a2, a matmul off in the
    # last bits); the gradient, through Q and all of R, against central differences
    x = np.random.default_rng(5).standard_normal(shape)
    weights = np.random.default_rng(6).standard_normal((5, 5))

    def loss(a):
        q, r = np.linalg.qr(a)
        return anp.sum(q * weights[: q.shape[-2], : q.shape[-1]]) + anp.sum(np.linalg.qr(a, mode="r") * r)

    value, gradient = adcore.value_and_grad(loss, backend=backend)(x)
    assert value == loss(x)
    expected = central_difference(loss, x)
    np.testing.assert_allclose(gradient, expected, atol=1e-6 * np.max(np.abs(expected)))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (2, 0), (-1,), (-3, -1), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm_of_a_traced_value_is_numpys_bit_for_bit(axis, keepdims):
    # NumPy moves a tuple of axes first, in the order given, and sums there: the bits follow
    x = np.random.default_rng(8).standard_normal((2, 3, 4))
    for ord in (2, 1, np.inf, 3):
        seen = {}

        def f(x, ord=ord, seen=seen):
            seen["norm"] = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
            return anp.sum(seen["norm"] * np.arange(1.0, 1.0 + seen["norm"].size).reshape(seen["norm"].shape))

        expected = central_difference(f, x)
        gradient = adcore.grad(f)(x)
        got, want = (
            adcore.concrete(seen["norm"]),
            np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord),
        )
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(gradient, expected, atol=1e-6)


@pytest.mark.parametrize("loss, symmetric", LOSSES)
@pytest.mark.parametrize("backend", adcore.backends())
def test_the_traced_value_of_a_function_of_the_vectors_is_numpys_bit_for_bit(backend, loss, symmetric):
    # f(x) == value_and_grad(f)(x)[0] exactly on 20 random 4 x 4 matrices (the re-signed vectors
    # made most of them differ), and the gradient is NumPy's function's: central differences of
    # f itself, and for eigh the perturbation formulas
    for k in range(20):
        x = random_4x4(k, symmetric)
        if backend == "symbolic":  # no sympy form of a decomposition: refused by name, then it works
            with pytest.raises(MissingRuleError, match="symbolic"):
                adcore.value_and_grad(loss, backend=backend)(x)
            assert adcore.grad(lambda x: anp.sum(x * x), backend=backend)(x) == pytest.approx(2 * x)
            continue
        value, gradient = adcore.value_and_grad(loss, backend=backend)(x)
        assert value.dtype == np.float64 and value == loss(x)  # bit for bit
        expected = central_difference(loss, x)
        if backend == "sparsity":  # a pattern: every entry the gradient has is in it
            assert np.all(gradient[np.abs(expected) > 1e-6] == 1)
            continue
        np.testing.assert_allclose(gradient, expected, atol=1e-6 * max(1.0, np.max(np.abs(expected))))
        if loss is eigh_vectors_loss and backend != "numeric":
            np.testing.assert_allclose(gradient, eigh_vectors_gradient(x), rtol=1e-9, atol=1e-9)


def test_conformance_differences_a_decomposition_on_lapacks_branch_of_signs():
    # a finite difference of eigh's vectors at a point where LAPACK flips a sign nearby would be
    # meaningless; the op's gauge aligns the perturbed vectors to the centre's, exactly at the centre
    op = adcore.ops.eigh_packed
    a = random_4x4(0, True)
    centre = op(a)
    flipped = np.concatenate([centre[:1], centre[1:] * np.array([1.0, -1.0, 1.0, -1.0])])  # vectors 1, 3
    np.testing.assert_array_equal(op.gauge(flipped, centre, a), centre)
    np.testing.assert_array_equal(op.gauge(centre, centre, a), centre)
    for name, a in (("svd_packed", random_4x4(1, False)), ("qr_packed", random_4x4(2, False))):
        op = adcore.ops[name]
        centre = op(a)
        signs = np.array([-1.0, 1.0, -1.0, 1.0])
        if name == "svd_packed":  # u_k and v_k flip together
            flipped = np.concatenate([centre[:4] * signs, centre[4:5], centre[5:] * signs])
        else:  # Q's column k with R's row k
            flipped = np.concatenate([centre[:4] * signs, centre[4:] * signs[:, None]])
        np.testing.assert_array_equal(op.gauge(flipped, centre, a), centre)


@pytest.mark.parametrize(
    "ord, axis, shape",
    [
        (None, None, (2, 3, 2)),
        (2, None, (4,)),
        (1, 0, (3, 2)),
        (np.inf, -1, (3, 2)),
        (-np.inf, 1, (3, 2)),
        (0, None, (4,)),
        (3.5, None, (4,)),
        ("fro", None, (3, 2)),
        ("nuc", None, (3, 2)),
        (2, None, (3, 3)),
        (-2, (0, 1), (3, 3)),
        (1, None, (2, 3)),
        (-np.inf, (2, 0), (3, 2, 2)),
    ],
)
def test_norm_values_match_numpy(ord, axis, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    for keepdims in (False, True):
        expected = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(anp.norm(x, ord=ord, axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(
    "call",
    [
        lambda x: np.linalg.vector_norm(x),
        lambda x: np.linalg.vector_norm(x, ord=3, axis=(0, 2), keepdims=True),
        lambda x: np.linalg.vector_norm(x, ord=1, axis=1),
        lambda x: np.linalg.vector_norm(x, axis=None, keepdims=True),
        lambda x: np.linalg.matrix_norm(x),
        lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True),
        lambda x: np.linalg.matrix_norm(x, ord=-np.inf),
    ],
)
def test_numpy_2_vector_and_matrix_norms_on_traced_values(backend, call):
    x = np.random.default_rng(7).standard_normal((2, 3, 4))
    seen = []

    def f(x):
        seen.append(adcore.concrete(call(x)))
        return anp.sum(call(x))

    g = adcore.grad(f, backend=backend)(x)
    np.testing.assert_allclose(seen[0], call(x))
    np.testing.assert_allclose(g, central_difference(lambda x: np.sum(call(x)), x), atol=1e-6)


# --- gradients at generic points ----------------------------------------------------------------


def spectral_loss(b):
    """A loss of eigh's eigenvalues and eigenvectors (sign-invariant) of the symmetric b + b^T."""
    w, v = np.linalg.eigh(b + b.T)
    return anp.sum(w**3) + anp.sum(v[:, 0] ** 4) + anp.sum(v * v * np.arange(9.0).reshape(3, 3))


def svd_loss(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return anp.sum(s**3) + anp.sum(u**4) + anp.sum(vh[0] ** 4)


def qr_loss(a):
    q, r = np.linalg.qr(a)
    return anp.sum(r**2 * np.arange(1.0, 1.0 + r.size).reshape(r.shape)) + anp.sum(q**4)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(
    "loss, shape",
    [(spectral_loss, (3, 3)), (svd_loss, (4, 3)), (svd_loss, (2, 4)), (qr_loss, (4, 3)), (qr_loss, (2, 4))],
)
def test_decomposition_gradients_match_torch(backend, loss, shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal(shape)
    t = torch.tensor(x, requires_grad=True)

    class TorchNumpy:  # the same loss with torch.linalg (sign-invariant, so conventions do not matter)
        @staticmethod
        def run(t):
            if loss is spectral_loss:
                w, v = torch.linalg.eigh(t + t.T)
                return (w**3).sum() + (v[:, 0] ** 4).sum() + (v * v * torch.arange(9.0).reshape(3, 3)).sum()
            if loss is svd_loss:
                u, s, vh = torch.linalg.svd(t, full_matrices=False)
                return (s**3).sum() + (u**4).sum() + (vh[0] ** 4).sum()
            q, r = torch.linalg.qr(t)
            signs = torch.sign(torch.diagonal(r))
            q, r = q * signs, r * signs[:, None]
            return (r**2 * torch.arange(1.0, 1.0 + r.numel()).reshape(r.shape)).sum() + (q**4).sum()

    TorchNumpy.run(t).backward()
    np.testing.assert_allclose(adcore.grad(loss, backend=backend)(x), t.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_pinv_lstsq_and_norm_gradients_match_torch(backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)

    def f(a, b):
        x = np.linalg.lstsq(a, b, rcond=None)[0]
        return (
            anp.sum(np.linalg.pinv(a) ** 3)
            + anp.sum(x**2)
            + np.linalg.norm(a, "nuc")
            + np.linalg.norm(a, 2)
            + np.linalg.norm(a, -np.inf)
            + anp.sum(np.linalg.norm(a, 3, axis=0))
            + np.linalg.norm(b, 1)
            + np.linalg.norm(b, np.inf)
        )

    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    tx = torch.linalg.pinv(ta) @ tb
    (
        (torch.linalg.pinv(ta) ** 3).sum()
        + (tx**2).sum()
        + torch.linalg.matrix_norm(ta, "nuc")
        + torch.linalg.matrix_norm(ta, 2)
        + torch.linalg.matrix_norm(ta, -float("inf"))
        + torch.linalg.vector_norm(ta, 3, dim=0).sum()
        + torch.linalg.vector_norm(tb, 1)
        + torch.linalg.vector_norm(tb, float("inf"))
    ).backward()
    ga, gb = adcore.grad(f, argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gradient_lives_on_the_triangle_numpy_reads(uplo):
    # np.linalg.eigh(a) reads one triangle of a only: the other has derivative 0, as central
    # differences of NumPy's own function show
    a = with_eigenvalues([1.0, 2.0, 4.0]) + np.triu(np.ones((3, 3)), 1)

    def numpy_loss(a):
        w, v = np.linalg.eigh(a, UPLO=uplo)
        return np.sum(w**3) + np.sum(v[:, 1] ** 4)

    def f(a):
        w, v = np.linalg.eigh(a, UPLO=uplo)
        return anp.sum(w**3) + anp.sum(v[:, 1] ** 4)

    expected = central_difference(numpy_loss, a)
    for backend in RULE_BACKENDS:
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(a), expected, atol=1e-7)


def test_batched_decompositions():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 3))
    a = a + np.swapaxes(a, -1, -2)

    def f(a):
        w, v = np.linalg.eigh(a)
        return (
            anp.sum(w**2 * np.arange(3.0)) + anp.sum(v**4) + anp.sum(np.linalg.svd(a, compute_uv=False) ** 3)
        )

    def numpy_f(a):
        w, v = np.linalg.eigh(a)
        return np.sum(w**2 * np.arange(3.0)) + np.sum(v**4) + np.sum(np.linalg.svd(a, compute_uv=False) ** 3)

    expected = central_difference(numpy_f, a)
    for backend in RULE_BACKENDS:
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(a), expected, atol=1e-6)


@pytest.mark.parametrize(
    "inner, outer", [("reverse", "forward"), ("reverse", "reverse"), ("forward", "forward")]
)
def test_second_derivatives_at_distinct_values(inner, outer):
    a = np.random.default_rng(5).standard_normal((3, 2))

    def f(a):
        s = np.linalg.svd(a, compute_uv=False)
        w = np.linalg.eigvalsh(a.T @ a + np.eye(2) * np.arange(1.0, 3.0))
        q, r = np.linalg.qr(a)
        return (
            anp.sum(s**3) + anp.sum(w * np.array([1.0, 3.0])) + anp.sum(r**2 * 0.5) + np.linalg.norm(a, "nuc")
        )

    hessian = adcore.hessian(f, inner=inner, outer=outer)(a)
    gradient = adcore.grad(f, backend="reverse")
    expected = np.stack(
        [central_difference(lambda a, index=index: gradient(a)[index], a) for index in np.ndindex(a.shape)]
    )
    np.testing.assert_allclose(hessian.reshape(6, 3, 2), expected, atol=1e-5)


# --- degenerate points (issue 17) -----------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_sum_of_eigenvalues_at_the_identity_has_gradient_identity(backend):
    g = adcore.grad(lambda a: anp.sum(np.linalg.eigvalsh(a)), backend=backend)(np.eye(3))
    np.testing.assert_array_equal(g, np.eye(3))


def test_eigenvalues_of_eigh_at_the_identity_reverse_gives_identity_forward_refuses():
    # reverse sees that the eigenvectors' cotangent is 0; forward computes their tangent, which is
    # not determined inside the eigenspace of 1, whether or not they are used: eigvalsh is the way
    f = lambda a: anp.sum(np.linalg.eigh(a).eigenvalues)  # noqa: E731
    np.testing.assert_array_equal(adcore.grad(f, backend="reverse")(np.eye(3)), np.eye(3))
    with pytest.raises(
        InvalidValueError, match="'eigh_packed': no derivative at the degenerate.*use np.linalg.eigvalsh"
    ):
        adcore.grad(f, backend="forward")(np.eye(3))


def trace_of_exp(a):
    """trace(exp(A)) through the eigenvectors: trace(V exp(w) V^T)."""
    w, v = np.linalg.eigh(a)
    return anp.sum(v * v * anp.exp(w))


def projector_loss(a):
    """<C, P> with P the projector onto the eigenspace of the two smallest eigenvalues."""
    _, v = np.linalg.eigh(a)
    p = v[:, :2] @ v[:, :2].T
    return anp.sum(p * np.arange(9.0).reshape(3, 3))


def numpy_projector_loss(a):
    _, v = np.linalg.eigh(a)
    return np.sum((v[:, :2] @ v[:, :2].T) * np.arange(9.0).reshape(3, 3))


REPEATED = [(1.0, 1.0, 1.0), (1.0, 1.0, 3.0), (2.0, -1.0, -1.0)]


def at_eigenvalues(eigenvalues) -> np.ndarray:
    return np.eye(3) if eigenvalues == (1.0, 1.0, 1.0) else with_eigenvalues(sorted(eigenvalues))


@pytest.mark.parametrize(
    "backends, f, numpy_f",
    [
        (["reverse"], trace_of_exp, lambda a: np.sum(np.exp(np.linalg.eigvalsh(a)))),
        (
            RULE_BACKENDS,
            lambda a: anp.sum(anp.exp(np.linalg.eigvalsh(a))),
            lambda a: np.sum(np.exp(np.linalg.eigvalsh(a))),
        ),
        (
            RULE_BACKENDS,
            lambda a: anp.sum(np.linalg.eigvalsh(a) ** 2),
            lambda a: np.sum(np.linalg.eigvalsh(a) ** 2),
        ),
        (
            ["reverse"],
            lambda a: anp.sum(np.linalg.eigh(a)[0] ** 3),
            lambda a: np.sum(np.linalg.eigvalsh(a) ** 3),
        ),
    ],
    ids=["trace_of_exp", "sum_of_exp", "sum_of_squares", "sum_of_cubes"],
)
@pytest.mark.parametrize("eigenvalues", REPEATED)
def test_eigh_at_repeated_eigenvalues_is_right_for_invariant_functions(backends, f, numpy_f, eigenvalues):
    a = at_eigenvalues(eigenvalues)
    for backend in backends:
        g = adcore.grad(f, backend=backend)(a)
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, central_difference(numpy_f, a), atol=2e-6)


@pytest.mark.parametrize("eigenvalues", REPEATED)
@pytest.mark.parametrize(
    "f", [trace_of_exp, lambda a: anp.sum(np.linalg.eigh(a)[0] ** 3)], ids=["trace_of_exp", "sum_of_cubes"]
)
def test_eigenvectors_at_repeated_eigenvalues_refuse_on_forward(f, eigenvalues):
    with pytest.raises(InvalidValueError, match="'eigh_packed'.*tangent's projection"):
        adcore.grad(f, backend="forward")(at_eigenvalues(eigenvalues))


def test_the_projector_onto_a_repeated_eigenspace_refuses():
    # its cotangent has a part inside the eigenspace of 1, as P A P's has: the two cannot be told
    # apart from their cotangents, and P A P's derivative there needs what they do not carry
    a = with_eigenvalues([1.0, 1.0, 3.0])
    with pytest.raises(InvalidValueError, match="'eigh_packed'.*cotangent has a part inside"):
        adcore.grad(projector_loss, backend="reverse")(a)
    with pytest.raises(InvalidValueError, match="'eigh_packed'.*tangent's projection"):
        adcore.grad(projector_loss, backend="forward")(a)
    # away from the repeated eigenvalue it is right
    b = with_eigenvalues([1.0, 1.5, 3.0])
    for backend in RULE_BACKENDS:
        g = adcore.grad(projector_loss, backend=backend)(b)
        np.testing.assert_allclose(g, central_difference(numpy_projector_loss, b), atol=1e-6)


def rebuilt(c, f):
    """sum(C * V f(w) V^T): a matrix function through the eigenvectors (f = identity rebuilds a)."""

    def loss(a):
        w, v = np.linalg.eigh(a)
        return anp.sum(c * ((v * f(w)) @ v.T))

    return loss


C = np.arange(9.0).reshape(3, 3)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(
    "f, a",
    [
        (
            rebuilt(C, lambda w: w),
            np.eye(3),
        ),  # sum(C * a): gradient lower_read(sym(C)), not what the mask gives
        (rebuilt(C, anp.exp), np.eye(3)),  # expm: f'(1) != 0 inside the eigenspace
        (rebuilt(C, anp.sqrt), with_eigenvalues([2.0, 2.0, 5.0])),  # sqrtm
        (rebuilt(C, anp.log), np.eye(3)),  # logm at I: f(1) = 0, V's cotangent vanishes, w's differs
        (lambda a: np.linalg.eigh(a)[1][0, 0], with_eigenvalues([1.0, 1.0, 3.0])),  # no derivative at all
        (lambda a: np.linalg.eigh(a)[0][0], np.eye(3)),  # the smallest eigenvalue through eigh
    ],
    ids=["rebuild", "expm", "sqrtm", "logm", "entry", "smallest"],
)
def test_functions_the_cotangent_cannot_settle_at_repeated_eigenvalues_refuse(backend, f, a):
    # the rule's masked 1 / (w_j - w_i) would silently drop a term here (F's strict xfail before)
    with pytest.raises(InvalidValueError, match="'eigh_packed': no derivative at the degenerate values"):
        adcore.grad(f, backend=backend)(a)


@pytest.mark.xfail(
    strict=True, reason="known limit (docs/conventions.md): first-order cotangents cannot show it"
)
@pytest.mark.parametrize(
    "f, a",
    [
        # logm at I with C's diagonal constant: V's cotangent is 0 (log 1 = 0), w's is equal, as for
        # a constant times sum(log(w)); the derivative lower_read(sym(C)) needs log'(1) inside the block
        (rebuilt(np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 5.0], [6.0, 7.0, 1.0]]), anp.log), np.eye(3)),
        # V[0, 0] at exactly I, where LAPACK's V is I: its cotangent e0 e0^T is that of |v_0|^2 / 2
        (lambda a: np.linalg.eigh(a)[1][0, 0], np.eye(3)),
    ],
    ids=["logm-constant-diagonal", "entry-at-identity"],
)
def test_what_reverse_cannot_tell_at_repeated_eigenvalues_is_the_known_limit(f, a):
    with pytest.raises(InvalidValueError):
        adcore.grad(f, backend="reverse")(a)


def test_the_rebuild_is_right_where_the_eigenvalues_are_distinct():
    a = with_eigenvalues([1.0, 2.0, 4.0])
    for backend in RULE_BACKENDS:
        np.testing.assert_allclose(
            adcore.grad(rebuilt(C, lambda w: w), backend=backend)(a), lower_read((C + C.T) / 2), atol=1e-10
        )


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_eigvalsh_ties_split_at_a_repeated_eigenvalue(backend):
    # w[0] of a repeated eigenvalue has no derivative: eigvalsh gives the average over the tie (as
    # max's), I / 2 on the eigenspace of 1 at diag(1, 1, 3) rotated, independent of LAPACK's basis
    a = with_eigenvalues([1.0, 1.0, 3.0])
    v = np.linalg.eigh(a)[1]
    projector = v[:, :2] @ v[:, :2].T
    for k in (0, 1):
        g = adcore.grad(lambda a, k=k: np.linalg.eigvalsh(a)[k], backend=backend)(a)
        np.testing.assert_allclose(g, lower_read(projector / 2), atol=1e-12)
    g = adcore.grad(lambda a: np.linalg.eigvalsh(a)[2], backend=backend)(a)
    np.testing.assert_allclose(g, lower_read(np.outer(v[:, 2], v[:, 2])), atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_svdvals_ties_split_at_a_repeated_singular_value(backend):
    a = with_singular_values([2.0, 2.0, 1.0], 4, 3)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    g = adcore.grad(lambda a: np.linalg.svd(a, compute_uv=False)[0], backend=backend)(a)
    np.testing.assert_allclose(g, u[:, :2] @ vh[:2] / 2, atol=1e-12)
    g = adcore.grad(lambda a: anp.sum(np.linalg.svd(a, compute_uv=False)), backend=backend)(a)
    np.testing.assert_allclose(g, u @ vh, atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(
    "f, a",
    [
        # U S Vh rebuilt: sum(C * a) has gradient C (F's strict xfail before)
        (
            lambda a: anp.sum(
                np.arange(12.0).reshape(4, 3)
                * ((lambda u, s, vh: (u * s) @ vh)(*np.linalg.svd(a, full_matrices=False)))
            ),
            with_singular_values([2.0, 1.0], 4, 3),
        ),
        (
            lambda a: anp.sum(
                np.arange(9.0).reshape(3, 3) * ((lambda u, s, vh: (u * s) @ vh)(*np.linalg.svd(a)))
            ),
            with_singular_values([1.0, 1.0, 1.0], 3, 3),
        ),
        (
            lambda a: anp.sum(
                np.arange(8.0).reshape(2, 4)
                * ((lambda u, s, vh: (u * s) @ vh)(*np.linalg.svd(a, full_matrices=False)))
            ),
            with_singular_values([2.0], 2, 4),
        ),
        (
            lambda a: np.linalg.svd(a, full_matrices=False)[0][0, 0],
            with_singular_values([2.0, 2.0, 1.0], 4, 3),
        ),
        (lambda a: np.linalg.svd(a)[1][0], with_singular_values([2.0, 2.0, 1.0], 3, 3)),
    ],
    ids=["rebuild-rank-deficient", "rebuild-orthogonal", "rebuild-wide", "entry", "largest"],
)
def test_functions_the_cotangent_cannot_settle_at_degenerate_singular_values_refuse(backend, f, a):
    with pytest.raises(InvalidValueError, match="'svd_packed': no derivative at the degenerate values"):
        adcore.grad(f, backend=backend)(a)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_qr_of_a_rank_deficient_matrix_refuses(backend):
    a = with_singular_values([2.0, 1.0], 4, 3)
    with pytest.raises(LinearAlgebraError, match="'qr_packed': no derivative at a rank-deficient a"):
        adcore.grad(lambda a: anp.sum(np.linalg.qr(a).Q ** 4), backend=backend)(a)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("shape, values", [((3, 3), (2.0, 1.0)), ((4, 3), (3.0, 1.0)), ((2, 4), (2.0,))])
def test_svd_of_a_rank_deficient_matrix(backend, shape, values):
    a = with_singular_values(values, *shape)
    r = len(values)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    subgradient = u[:, :r] @ vh[:r]
    # the nuclear norm and the sum of singular values: U_r V_r^T, which central differences also give
    # (the zero singular values' |.| cancels), and a subgradient
    for f in (lambda a: np.linalg.norm(a, "nuc"), lambda a: anp.sum(np.linalg.svd(a, compute_uv=False))):
        g = adcore.grad(f, backend=backend)(a)
        np.testing.assert_allclose(g, subgradient, atol=1e-10)
        np.testing.assert_allclose(g, central_difference(lambda a: np.linalg.norm(a, "nuc"), a), atol=1e-6)
    # smooth functions: sum s^2 = |A|^2 and the top singular subspace's projection of A
    g = adcore.grad(lambda a: anp.sum(np.linalg.svd(a, compute_uv=False) ** 2), backend=backend)(a)
    np.testing.assert_allclose(g, 2 * a, atol=1e-10)

    def top(a):
        u = np.linalg.svd(a, full_matrices=False)[0][:, :1]
        return anp.sum((u @ (u.T @ a)) * np.arange(a.size).reshape(a.shape))

    def numpy_top(a):
        u = np.linalg.svd(a, full_matrices=False)[0][:, :1]
        return np.sum((u @ (u.T @ a)) * np.arange(a.size).reshape(a.shape))

    s_of_svd = lambda a: anp.sum(np.linalg.svd(a, full_matrices=False).S)  # noqa: E731
    if backend == "reverse":  # the cotangents show U and V unused past the top one, S used alone
        np.testing.assert_allclose(
            adcore.grad(top, backend=backend)(a), central_difference(numpy_top, a), atol=1e-6
        )
        np.testing.assert_allclose(adcore.grad(s_of_svd, backend=backend)(a), subgradient, atol=1e-10)
    else:  # forward computes U's and V's tangents whether or not they are used: svdvals, norm are the way
        for f in (top, s_of_svd):
            with pytest.raises(
                InvalidValueError, match="'svd_packed'.*use np.linalg.svd\\(a, compute_uv=False\\)"
            ):
                adcore.grad(f, backend=backend)(a)


@pytest.mark.parametrize("backend", [*RULE_BACKENDS, "symbolic"])
@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.linalg.norm(x),
        lambda x: np.linalg.norm(x, "fro"),
        lambda x: np.linalg.norm(x[0], 2),
        lambda x: anp.sum(np.linalg.norm(x, axis=1)),
    ],
    ids=["all", "fro", "vector-2", "rows"],
)
def test_norm_at_zero_has_gradient_zero(backend, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # symbolic's code evaluates the branch not taken
        g = adcore.grad(f, backend=backend)(np.zeros((2, 3)))
    np.testing.assert_array_equal(g, np.zeros((2, 3)))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_norm_gradient_zero_only_on_the_zero_slice(backend):
    x = np.array([[0.0, 0.0], [3.0, 4.0]])
    g = adcore.grad(lambda x: anp.sum(np.linalg.norm(x, axis=1)), backend=backend)(x)
    np.testing.assert_allclose(g, [[0.0, 0.0], [0.6, 0.8]])


@pytest.mark.parametrize(
    "inner, outer", [("reverse", "forward"), ("reverse", "reverse"), ("forward", "forward")]
)
def test_norm_second_derivative_at_zero_is_refused(inner, outer):
    # the gradient x / |x| is unbounded near 0 (its derivative (I - x x^T / |x|^2) / |x|): the 0
    # this used to give was the derivative of no function (issue 32, class 3)
    with pytest.raises(InvalidValueError, match="'norm': ord=None has no second derivative at x = 0"):
        adcore.hessian(lambda x: np.linalg.norm(x), inner=inner, outer=outer)(np.zeros(3))
    x = np.array([3.0, 0.0, 4.0])
    h = adcore.hessian(lambda x: np.linalg.norm(x), inner=inner, outer=outer)(x)
    np.testing.assert_allclose(h, (np.eye(3) - np.outer(x, x) / 25) / 5, atol=1e-15)


@pytest.mark.parametrize(
    "inner, outer", [("reverse", "forward"), ("reverse", "reverse"), ("forward", "forward")]
)
@pytest.mark.parametrize(
    "f, x",
    [
        (lambda a: anp.sum(np.linalg.eigvalsh(a) ** 2), np.eye(3)),
        (lambda a: projector_loss(a), with_eigenvalues([1.0, 1.0, 3.0])),
        (lambda a: anp.sum(np.linalg.svd(a, compute_uv=False) ** 3), with_singular_values([2.0, 1.0], 3, 3)),
        (lambda a: np.linalg.norm(a, "nuc"), with_singular_values([2.0, 2.0], 3, 2)),
    ],
    ids=["eigvalsh-identity", "eigh-repeated", "svdvals-rank-deficient", "nuc-repeated"],
)
def test_second_derivatives_at_degenerate_points_refuse(inner, outer, f, x):
    # an outer forward's tangent of the eigenvectors is refused first, at first order
    with pytest.raises(
        InvalidValueError, match="no second derivative at repeated|no derivative at the degenerate"
    ):
        adcore.hessian(f, inner=inner, outer=outer)(x)


# --- refusals -------------------------------------------------------------------------------


def test_bad_inputs_are_typed_errors_naming_the_op():
    # shapes: LinearAlgebraError, also NumPy's LinAlgError (as the solve family's); values: InvalidValueError
    with pytest.raises(LinearAlgebraError, match="'eigvalsh': argument 'a' must be a square"):
        anp.eigvalsh(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="'svdvals': argument 'a' must be a matrix"):
        anp.svdvals(np.ones(3))
    with pytest.raises(LinearAlgebraError, match="'qr_packed': argument 'a' must be a matrix"):
        anp.qr_packed(np.ones(3))
    with pytest.raises(LinearAlgebraError, match="'lstsq_solution'"):
        anp.lstsq_solution(np.ones((3, 2)), np.ones(2))
    with pytest.raises(InvalidValueError, match="'eigh_packed': UPLO"):
        anp.eigh_packed(np.eye(2), UPLO="X")
    with pytest.raises(InvalidValueError, match="'norm'.*matrix ord"):
        anp.norm(np.ones((2, 2)), ord=3)
    with pytest.raises(InvalidValueError, match="'norm'.*vector ord"):
        anp.norm(np.ones(2), ord="nuc")
    with pytest.raises(InvalidValueError, match="'pinv': give rcond or rtol"):
        anp.pinv(np.eye(2), rcond=1e-3, rtol=1e-3)
    # integers are NumPy's linear algebra's inputs too
    np.testing.assert_allclose(anp.eigvalsh(np.eye(2, dtype=int)), [1.0, 1.0])
    np.testing.assert_allclose(anp.norm(np.array([3, 4])), 5.0)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_refusals_on_traced_values(backend):
    grad = lambda f, x: adcore.grad(f, backend=backend)(x)  # noqa: E731
    a = with_singular_values([2.0, 1.0], 3, 2)
    with pytest.raises(UnsupportedFunctionError, match="full_matrices=False"):
        grad(lambda a: anp.sum(np.linalg.svd(a).S), a)
    with pytest.raises(UnsupportedFunctionError, match="mode='reduced'"):
        grad(lambda a: anp.sum(np.linalg.qr(a, mode="complete")[1]), a)
    with pytest.raises(UnsupportedFunctionError, match="hermitian"):
        grad(lambda a: anp.sum(np.linalg.pinv(a, hermitian=True)), a)
    with pytest.raises(InvalidValueError, match="ord=0.5 has no derivative"):
        grad(lambda x: np.linalg.norm(x, 0.5), np.array([0.0, 1.0]))


def test_square_svd_takes_numpys_default_full_matrices():
    a = with_singular_values([3.0, 2.0, 1.0], 3, 3)
    g = adcore.grad(lambda a: anp.sum(np.linalg.svd(a).S * np.array([1.0, 2.0, 3.0])))(a)
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(g, (u * np.array([1.0, 2.0, 3.0])) @ vh, atol=1e-12)


def test_symbolic_refuses_the_decompositions_by_name():
    with pytest.raises(MissingRuleError, match="'eigvalsh' has no 'sympy' rule.*reverse"):
        adcore.grad(lambda a: anp.sum(np.linalg.eigvalsh(a)), backend="symbolic")(np.eye(2))


@pytest.mark.parametrize("ord", [None, 1, 3, np.inf, -np.inf, 0.5])
def test_symbolic_vector_norms_agree_with_reverse(ord):
    x = np.array([3.0, -4.0, 1.0])

    def f(x):
        return np.linalg.norm(x, ord)

    np.testing.assert_allclose(adcore.grad(f, backend="symbolic")(x), adcore.grad(f)(x), rtol=1e-12)


def test_matrix_rank_of_a_traced_value_is_a_plain_int():
    ranks = []

    def f(a):
        ranks.append(np.linalg.matrix_rank(a))
        return anp.sum(a)

    adcore.grad(f)(with_singular_values([1.0], 3, 3))
    assert ranks == [1] and isinstance(ranks[0], (int, np.integer))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_lstsq_residuals_are_differentiable(backend):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((5, 2)), rng.standard_normal(5)
    g = adcore.grad(lambda b: anp.sum(np.linalg.lstsq(a, b, rcond=None)[1]), backend=backend)(b)
    # residual |b - A x|^2 with x the least-squares solution: 2 (I - A A^+) b
    np.testing.assert_allclose(g, 2 * (b - a @ np.linalg.pinv(a) @ b), atol=1e-12)
