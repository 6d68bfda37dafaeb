"""The solve family of adcore/ops/linalg.py (inv, solve, cholesky, det, logabsdet / slogdet,
solve_triangular, cho_solve): values against NumPy and scipy, derivatives against finite
differences and torch on every backend, second derivatives, degenerate points, bad input."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import LinearAlgebraError

RULE_BACKENDS = ("reverse", "forward", "symbolic")
RNG = np.random.default_rng(17)


def _general(shape, rng=RNG):
    """Diagonally dominant, so well conditioned: uniform in [-1, 1] plus (n + 1) I."""
    n = shape[-1]
    return rng.uniform(-1, 1, shape) + (n + 1) * np.eye(n)


def _spd(shape, rng=RNG):
    b = rng.uniform(-2, 2, shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


A = _general((3, 3))
A_BATCH = _general((2, 3, 3))
SPD = _spd((3, 3))
SPD_BATCH = _spd((2, 3, 3))
V = RNG.uniform(-2, 2, 3)
M = RNG.uniform(-2, 2, (3, 2))
M_BATCH = RNG.uniform(-2, 2, (2, 3, 2))

# (id, function, arguments): every op, each way of calling it
CALLS = [
    ("inv", anp.inv, (A,)),
    ("inv-batched", anp.inv, (A_BATCH,)),
    ("solve-vector", anp.solve, (A, V)),
    ("solve-matrix", anp.solve, (A, M)),
    ("solve-batched-a-vector-b", anp.solve, (A_BATCH, V)),
    ("solve-b-broadcast", anp.solve, (A_BATCH, M)),
    ("solve-a-broadcast", anp.solve, (A, M_BATCH)),
    ("cholesky", anp.cholesky, (SPD,)),
    ("cholesky-upper", lambda a: anp.cholesky(a, upper=True), (SPD,)),
    ("cholesky-batched", anp.cholesky, (SPD_BATCH,)),
    ("det", anp.det, (A,)),
    ("det-batched", anp.det, (A_BATCH,)),
    ("det-singular", anp.det, (np.outer(V, M[:, 0]) + np.outer(M[:, 1], V),)),  # rank 2: cofactors by minors
    ("det-empty", anp.det, (np.zeros((2, 0, 0)),)),
    ("logabsdet", anp.logabsdet, (np.diag([-1.0, 1.0, 1.0]) @ A,)),
    ("logabsdet-batched", anp.logabsdet, (A_BATCH,)),
    ("solve_triangular-upper", anp.solve_triangular, (A, V)),
    ("solve_triangular-lower", lambda a, b: anp.solve_triangular(a, b, lower=True), (A, M)),
    ("solve_triangular-trans", lambda a, b: anp.solve_triangular(a, b, trans=1, lower=True), (A_BATCH, V)),
    (
        "solve_triangular-unit",
        lambda a, b: anp.solve_triangular(a, b, trans="T", unit_diagonal=True),
        (A_BATCH, M),
    ),
    ("cho_solve-lower", anp.cho_solve, (np.linalg.cholesky(SPD), M)),
    ("cho_solve-upper", lambda c, b: anp.cho_solve(c, b, lower=False), (np.linalg.cholesky(SPD_BATCH).mT, V)),
]


def _jacobians(f, args, backend):
    return adcore.jacobian(f, argnums=tuple(range(len(args))), backend=backend)(*args)


# --- values ----------------------------------------------------------------------------------


def test_values_are_numpys():
    assert np.array_equal(anp.inv(A_BATCH), np.linalg.inv(A_BATCH))
    assert np.array_equal(anp.solve(A_BATCH, V), np.linalg.solve(A_BATCH, V))
    assert np.array_equal(anp.cholesky(SPD, upper=True), np.linalg.cholesky(SPD, upper=True))
    assert np.array_equal(anp.det(A_BATCH), np.linalg.det(A_BATCH))
    assert np.array_equal(anp.logabsdet(A_BATCH), np.linalg.slogdet(A_BATCH).logabsdet)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_is_scipys(trans, lower, unit_diagonal):
    linalg = pytest.importorskip("scipy.linalg")
    for n in (4, 150):  # 150: solved by blocks of at most 64
        a = RNG.uniform(-1, 1, (n, n)) / np.sqrt(n) + 3 * np.eye(n)
        for b in (RNG.uniform(-1, 1, n), RNG.uniform(-1, 1, (n, 3))):
            got = anp.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
            expected = linalg.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
            np.testing.assert_allclose(got, expected, rtol=1e-11)


def test_batched_blocked_triangular_solve_is_numpys_solve_of_the_triangle():
    a = RNG.uniform(-1, 1, (2, 150, 150)) / 12 + 3 * np.eye(150)
    b = RNG.uniform(-1, 1, (3, 1, 150, 2))  # batch axes broadcast: x is (3, 2, 150, 2)
    got = anp.solve_triangular(a, b, lower=True, trans=1)
    np.testing.assert_allclose(got, np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), b), rtol=1e-11)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_is_scipys(lower):
    linalg = pytest.importorskip("scipy.linalg")
    c, _ = linalg.cho_factor(SPD, lower=lower)  # the other triangle holds leftovers: never read
    np.testing.assert_allclose(anp.cho_solve(c, M, lower=lower), linalg.cho_solve((c, lower), M), rtol=1e-12)


def test_numpy_functions_on_traced_values_are_the_ops():
    def f(a):
        x = np.linalg.solve(a, V) + np.linalg.inv(a) @ V
        return np.linalg.det(a) * np.sum(x) + np.sum(np.linalg.cholesky(a @ a.T, upper=True))

    expected = adcore.grad(
        lambda a: (
            anp.det(a) * anp.sum(anp.solve(a, V) + anp.inv(a) @ V)
            + anp.sum(anp.cholesky(a @ a.T, upper=True))
        )
    )(A)
    np.testing.assert_allclose(adcore.grad(f)(A), expected, rtol=1e-12)


# --- first derivatives -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name, f, args", CALLS, ids=[c[0] for c in CALLS])
def test_jacobian_matches_finite_differences(name, f, args, backend):
    expected = _jacobians(f, args, "numeric")
    for got, want in zip(_jacobians(f, args, backend), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _torch_grads(torch_f, args, weights):
    torch = pytest.importorskip("torch")
    leaves = [torch.tensor(x, requires_grad=True) for x in args]
    (torch_f(*leaves) * torch.tensor(weights)).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_gradients_match_torch(backend):
    torch = pytest.importorskip("torch")
    cases = [
        (anp.inv, torch.linalg.inv, (A_BATCH,)),
        (anp.solve, torch.linalg.solve, (A_BATCH, M)),
        (anp.solve, torch.linalg.solve, (A_BATCH, V)),  # torch reads a 1-d b as a vector too
        (anp.det, torch.linalg.det, (A_BATCH,)),
        (anp.logabsdet, lambda a: torch.linalg.slogdet(a).logabsdet, (A_BATCH,)),
        (
            lambda a, b: anp.solve_triangular(a, b, lower=True),
            lambda a, b: torch.linalg.solve_triangular(torch.tril(a), b, upper=False),
            (A_BATCH, M),
        ),
        (
            lambda a, b: anp.solve_triangular(a, b, lower=False, trans=1),
            lambda a, b: torch.linalg.solve_triangular(torch.triu(a).mT, b, upper=False),
            (A, M_BATCH),
        ),
        (
            anp.cho_solve,
            lambda c, b: torch.cholesky_solve(b, torch.tril(c)),
            (np.linalg.cholesky(SPD_BATCH), M),
        ),
    ]
    for f, torch_f, args in cases:
        weights = RNG.uniform(-1, 1, np.shape(f(*args)))
        got = adcore.grad(
            lambda *xs, f=f, weights=weights: anp.sum(f(*xs) * weights),
            argnums=tuple(range(len(args))),
            backend=backend,
        )(*args)
        for g, t in zip(got, _torch_grads(torch_f, args, weights)):
            np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_cholesky_gradient_lives_on_the_triangle_numpy_reads(backend):
    # np.linalg.cholesky reads a's lower triangle (upper=True: its upper one), so the gradient is
    # there; folded symmetric (each off-diagonal entry split over its two places) it is torch's,
    # which symmetrizes a
    torch = pytest.importorskip("torch")
    weights = RNG.uniform(-1, 1, (2, 3, 3))
    for upper in (False, True):
        got = adcore.grad(
            lambda a, upper=upper: anp.sum(anp.cholesky(a, upper=upper) * weights), backend=backend
        )(SPD_BATCH)
        kept = np.triu(got) if upper else np.tril(got)
        np.testing.assert_array_equal(got, kept)
        (expected,) = _torch_grads(
            lambda a, upper=upper: torch.linalg.cholesky(a, upper=upper), (SPD_BATCH,), weights
        )
        symmetric = (got + got.swapaxes(-1, -2)) / 2
        np.testing.assert_allclose(
            symmetric, (expected + expected.swapaxes(-1, -2)) / 2, rtol=1e-9, atol=1e-12
        )


# --- second derivatives ------------------------------------------------------------------------

SECOND_CALLS = [c for c in CALLS if c[0] in {
    "inv", "solve-batched-a-vector-b", "solve-matrix", "cholesky-upper", "cholesky-batched", "det-batched",
    "det-singular", "logabsdet", "solve_triangular-trans", "solve_triangular-unit", "cho_solve-lower", "cho_solve-upper",
}]  # fmt: skip


def _weighted_loss(name: str):
    f, args = next((f, args) for n, f, args in SECOND_CALLS if n == name)
    weights = np.random.default_rng(3).uniform(-1, 1, np.shape(f(*args)))
    return (lambda *xs: anp.sum(f(*xs) * weights)), args


@functools.cache
def _symbolic_hessian(name: str):
    """The exact Hessian (sympy's), computed once per call for the four ways of nesting."""
    loss, args = _weighted_loss(name)
    return adcore.hessian(loss, argnums=tuple(range(len(args))), backend="symbolic")(*args)


@pytest.mark.parametrize(
    "inner, outer",
    [("reverse", "forward"), ("reverse", "reverse"), ("forward", "forward"), ("forward", "reverse")],
)
@pytest.mark.parametrize("name", [c[0] for c in SECOND_CALLS])
def test_hessian_matches_symbolic(name, inner, outer):
    loss, args = _weighted_loss(name)
    got = adcore.hessian(loss, argnums=tuple(range(len(args))), inner=inner, outer=outer)(*args)
    for got_row, expected_row in zip(got, _symbolic_hessian(name)):
        for g, e in zip(got_row, expected_row):
            np.testing.assert_allclose(g, e, rtol=1e-8, atol=1e-10)


# --- degenerate points -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(backend):
    a = np.array([[1.0, 2.0], [2.0, 4.0]])  # rank 1; d det / d a = [[d, -c], [-b, a]] for [[a, b], [c, d]]
    np.testing.assert_allclose(
        adcore.grad(anp.det, backend=backend)(a), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12
    )
    u, w = np.array([1.0, -2.0, 0.5]), np.array([0.3, 1.0, 2.0])
    rank_two = np.outer(u, w) + np.outer(w, u)
    expected = adcore.jacobian(anp.det, backend="numeric")(rank_two)
    got = adcore.grad(anp.det, backend=backend)(rank_two)
    assert np.all(np.isfinite(got)) and np.abs(got).max() > 0.1  # the adjugate of a rank n-1 matrix is not 0
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_det_second_derivative_at_zero(backend):
    # det [[a, b], [c, d]] = ad - bc: gradient 0 at the zero matrix, Hessian the constant pairing
    zero = np.zeros((2, 2))
    np.testing.assert_array_equal(adcore.grad(anp.det, backend=backend)(zero), np.zeros((2, 2)))
    hessian = adcore.hessian(anp.det, backend=backend)(zero).reshape(4, 4)
    expected = np.zeros((4, 4))
    expected[0, 3] = expected[3, 0] = 1.0
    expected[1, 2] = expected[2, 1] = -1.0
    np.testing.assert_allclose(hessian, expected, atol=1e-12)


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_det_gradient_of_a_batch_with_one_singular_matrix(backend):
    batch = np.stack(
        [np.outer([1.0, 2.0, 3.0], [1.0, 0.0, -1.0]) + np.outer([0.0, 1.0, 1.0], [2.0, 1.0, 0.0]), A]
    )
    expected = adcore.jacobian(anp.det, backend="numeric")(batch)
    np.testing.assert_allclose(
        adcore.jacobian(anp.det, backend=backend)(batch), expected, rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(
        adcore.grad(anp.det, backend=backend)(A), np.linalg.det(A) * np.linalg.inv(A).T
    )


@pytest.mark.parametrize("backend", ("reverse", "forward", "numeric"))
@pytest.mark.parametrize("op", [anp.inv, lambda a: anp.solve(a, V)])
def test_singular_inv_and_solve_raise_naming_the_op(op, backend):
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
    with pytest.raises(LinearAlgebraError, match="op '(inv|solve)'") as info:
        adcore.jacobian(lambda a: op(a), backend=backend)(singular)
    assert isinstance(info.value, np.linalg.LinAlgError)  # NumPy code catching LinAlgError still does


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_logabsdet_of_a_singular_matrix_is_minus_inf_without_a_derivative(backend):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert anp.logabsdet(singular) == -np.inf  # as NumPy's slogdet
    with pytest.raises(LinearAlgebraError, match="logabsdet.*singular"):
        adcore.grad(anp.logabsdet, backend=backend)(singular)


def test_cholesky_of_a_matrix_that_is_not_positive_definite():
    with pytest.raises(LinearAlgebraError, match="op 'cholesky'.*positive definite"):
        adcore.grad(lambda a: anp.sum(np.linalg.cholesky(a)))(np.diag([1.0, -1.0]))


# --- slogdet: NumPy's namedtuple on traced values ------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_slogdet_unpacks_and_names_its_fields(backend):
    flipped = np.stack([np.diag([-1.0, 1.0, 1.0]) @ A, A])
    seen = {}

    def f(a):
        sign, logdet = np.linalg.slogdet(a)
        result = np.linalg.slogdet(a)
        seen["sign"] = sign
        assert result.logabsdet is not None and result.sign is not None
        return np.sum(sign * logdet) + np.sum(result.logabsdet)

    got = adcore.grad(f, backend=backend)(flipped)
    if backend != "symbolic":  # the symbolic trace has no numbers: its sign is sign(det a), traced
        np.testing.assert_array_equal(seen["sign"], [-1.0, 1.0])
    sign = np.array([-1.0, 1.0])[:, None, None]
    np.testing.assert_allclose(got, (sign + 1) * np.linalg.inv(flipped).swapaxes(-1, -2), rtol=1e-10)


def test_slogdet_on_plain_arrays_is_numpys():
    assert tuple(anp.slogdet(A_BATCH)[0]) == tuple(np.linalg.slogdet(A_BATCH).sign)
    np.testing.assert_array_equal(anp.slogdet(A_BATCH).logabsdet, np.linalg.slogdet(A_BATCH).logabsdet)


def test_anp_slogdet_is_differentiable():
    got = adcore.grad(lambda a: anp.slogdet(a).logabsdet, backend="forward")(A)
    np.testing.assert_allclose(got, np.linalg.inv(A).T, rtol=1e-12)


# --- bad input ---------------------------------------------------------------------------------

SQUARE_OPS = [
    ("inv", lambda a: anp.inv(a)),
    ("solve", lambda a: anp.solve(a, V)),
    ("cholesky", lambda a: anp.cholesky(a)),
    ("det", lambda a: anp.det(a)),
    ("logabsdet", lambda a: anp.logabsdet(a)),
    ("solve_triangular", lambda a: anp.solve_triangular(a, V)),
    ("cho_solve", lambda a: anp.cho_solve(a, V)),
]


@pytest.mark.parametrize("backend", (None, "reverse", "forward", "symbolic", "numeric"))
@pytest.mark.parametrize("name, op", SQUARE_OPS, ids=[n for n, _ in SQUARE_OPS])
def test_non_square_input_is_a_typed_error_naming_the_op(name, op, backend):
    for shape in ((3, 2), (3,)):
        a = np.ones(shape)
        with pytest.raises(LinearAlgebraError, match=rf"op '{name}'.*argument '(a|c)'.*square"):
            op(a) if backend is None else adcore.jacobian(op, backend=backend)(a)


@pytest.mark.parametrize("backend", (None, "reverse", "forward"))
@pytest.mark.parametrize("name", ["solve", "solve_triangular", "cho_solve"])
def test_right_hand_side_that_does_not_fit_is_a_typed_error(name, backend):
    op = getattr(anp, name)
    for b in (np.ones(2), np.ones((2, 3)), np.ones((4, 3, 1)), np.float64(1.0)):
        with pytest.raises(LinearAlgebraError, match=rf"op '{name}'.*argument 'b'"):
            if backend is None:
                op(A_BATCH, b)
            else:
                adcore.jacobian(lambda a, b=b: op(a, b), backend=backend)(A_BATCH)


def test_bad_trans_is_a_typed_error():
    with pytest.raises(adcore.InvalidValueError, match="solve_triangular.*trans"):
        anp.solve_triangular(A, V, trans="X")


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name", ["matmul", "solve", "solve_triangular", "cho_solve"])
def test_constant_arguments_may_be_lists(name, backend):
    op = getattr(anp, name)
    b, eye = [1.0, -2.0, 0.5], np.eye(3).tolist()
    for f, g in (
        (lambda a: op(a, b), lambda a: op(a, np.array(b))),
        (lambda a: op(eye, a), lambda a: op(np.array(eye), a)),
    ):
        expected = adcore.jacobian(g, backend=backend)(SPD)
        np.testing.assert_allclose(adcore.jacobian(f, backend=backend)(SPD), expected, rtol=1e-12)


@pytest.mark.parametrize(
    "name", ["inv", "solve", "cholesky", "det", "logabsdet", "solve_triangular", "cho_solve"]
)
def test_rules_keep_float32_float32(name):
    # the masks the rules multiply by are made in the cotangent's dtype, not NumPy's float64
    from adcore_forward.jvps import JVPS
    from adcore_reverse.vjps import VJPS
    from adcore_reverse.zeros import Masked

    f32 = np.float32
    a, spd = A.astype(f32), SPD.astype(f32)
    args = {"cholesky": (spd,), "cho_solve": (np.linalg.cholesky(spd), V.astype(f32))}.get(name)
    if args is None:
        args = (a, V.astype(f32)) if name.startswith("solve") else (a,)
    ans = getattr(anp, name)(*args)
    for i, (vjp, jvp) in enumerate(zip(VJPS[name], JVPS[name])):
        cotangent = vjp(np.ones(np.shape(ans), f32), ans, *args)
        if isinstance(cotangent, Masked):  # the triangle the solve does not read: a structural zero
            cotangent = cotangent.cotangent
        assert cotangent.dtype == f32
        assert jvp(np.ones((2,) + args[i].shape, f32), ans, *args).dtype == f32


# --- slogdet in one LU: op slogdet_packed ------------------------------------------------------


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_slogdet_of_a_traced_value_runs_one_lu(backend, monkeypatch):
    calls = []
    numpy_slogdet = np.linalg.slogdet

    def counted(a):
        calls.append(np.shape(a))
        return numpy_slogdet(a)

    monkeypatch.setattr(np.linalg, "slogdet", counted)  # the impl looks it up per call
    got = adcore.grad(lambda a: anp.sum(anp.slogdet(a).logabsdet), backend=backend)(A_BATCH)
    assert calls == [A_BATCH.shape]  # once for sign and log|det| together, not once each
    np.testing.assert_allclose(got, np.linalg.inv(A_BATCH).swapaxes(-1, -2), rtol=1e-12)


def test_slogdet_packed_stacks_numpys_sign_and_logabsdet():
    flipped = np.stack([np.diag([-1.0, 1.0, 1.0]) @ A, A])
    packed = anp.slogdet_packed(flipped)
    sign, log = np.linalg.slogdet(flipped)
    assert packed.shape == (2, 2)
    np.testing.assert_array_equal(packed[..., 0], sign)
    np.testing.assert_array_equal(packed[..., 1], log)
    assert anp.slogdet_packed(A.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_slogdet_sign_of_a_traced_value_is_a_plain_array(backend):
    seen = {}

    def f(a):
        sign, logdet = np.linalg.slogdet(a)
        seen["sign"] = sign
        return np.sum(logdet)

    flipped = np.stack([np.diag([-1.0, 1.0, 1.0]) @ A, A])
    adcore.grad(f, backend=backend)(flipped)
    assert type(seen["sign"]) is np.ndarray
    np.testing.assert_array_equal(seen["sign"], [-1.0, 1.0])


@pytest.mark.parametrize("backend", ("reverse", "forward", "symbolic", "numeric"))
def test_slogdet_packed_jacobian_has_a_zero_sign_row(backend):
    flipped = np.diag([-1.0, 1.0, 1.0]) @ A
    jac = adcore.jacobian(anp.slogdet_packed, backend=backend)(flipped)
    assert jac.shape == (2, 3, 3)
    tol = 1e-6 if backend == "numeric" else 1e-12
    np.testing.assert_allclose(jac[0], 0.0, atol=tol)
    np.testing.assert_allclose(jac[1], np.linalg.inv(flipped).T, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "outer, inner", [("forward", "reverse"), ("reverse", "reverse"), ("forward", "forward")]
)
def test_slogdet_hessian_equals_logabsdets(outer, inner):
    def via_slogdet(a):
        sign, logdet = np.linalg.slogdet(a)
        return sign * logdet

    # d2 log|det A| / dA_ij dA_kl = -(A^-1)_jk (A^-1)_li, and sign(det A) is a constant
    inverse = np.linalg.inv(A)
    want = -np.einsum("jk,li->ijkl", inverse, inverse) * np.sign(np.linalg.det(A))
    got = adcore.jacobian(adcore.grad(via_slogdet, backend=inner), backend=outer)(A)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_slogdet_of_a_singular_matrix_names_slogdet_packed(backend):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(LinearAlgebraError, match="op 'slogdet_packed'.*singular"):
        adcore.grad(lambda a: np.linalg.slogdet(a)[1], backend=backend)(singular)


def test_slogdet_has_a_global_sparsity_pattern_and_a_sparse_jacobian():
    """slogdet reads the sign's number where it can; a global pattern hides it, as symbolic does."""
    x = np.array([1.0, 0.5, -0.2, 2.0])

    def f(x):
        return np.linalg.slogdet(x.reshape(2, 2) + 3 * np.eye(2))[1]

    assert adcore.jacobian_sparsity(f)(x).toarray().tolist() == [[True] * 4]
    dense = adcore.jacobian(f, backend="forward")(x)
    np.testing.assert_allclose(adcore.jacobian(f, backend="forward", sparse=True)(x).toarray()[0], dense)
