"""Real programs in plain NumPy style, differentiated by every backend, against closed forms or torch.

Each program is written as a NumPy user writes it (`import numpy as np`, np.linalg.cholesky,
np.einsum, x.T, np.split, ...) and called on traced values. Sizes are small enough for the
symbolic backend, which builds every element as a sympy expression; where a program uses
an op the symbolic backend has no rule for (a decomposition), the call must be a typed
refusal naming the op, never a wrong number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError, MissingRuleError, UnsupportedByBackendError

BACKENDS = ("reverse", "forward", "symbolic", "numeric")
# exact backends agree to rounding; numeric's finite differences to about 1e-8 relative
TOLERANCE = {"reverse": 1e-9, "forward": 1e-9, "symbolic": 1e-8, "numeric": 1e-6}


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


# --- the programs: plain NumPy --------------------------------------------------------------


def gp_nlml(theta, X, y):
    """Negative log marginal likelihood of a GP with an RBF kernel; theta = log (lengthscale,
    variance, noise)."""
    lengthscale, variance, noise = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = variance * np.exp(-0.5 * sq / lengthscale**2) + noise * np.eye(len(y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def ridge_validation_loss(log_lam, X, y, X_val, y_val):
    """Validation error of ridge regression fitted by the normal equations."""
    A = X.T @ X + np.exp(log_lam) * np.eye(X.shape[1])
    w = np.linalg.solve(A, X.T @ y)
    return np.mean((X_val @ w - y_val) ** 2)


def logistic_nll(w, X, y):
    """Mean logistic loss, labels y in {-1, 1}."""
    return np.mean(np.log1p(np.exp(-y * np.dot(X, w))))


def lstm_cell_loss(W, b, x, h, c):
    """One LSTM step; the gates are one matrix product split in four."""
    gates = np.dot(W, np.concatenate([x, h])) + b
    i, f, o, g = np.split(gates, 4)
    c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h_new = sigmoid(o) * np.tanh(c_new)
    return np.sum(h_new**2) + np.sum(c_new)


def pca_residual(X, k=2):
    """Squared error of X projected on its k leading right singular vectors."""
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    V = Vt[:k].T
    return np.sum((X - X @ V @ V.T) ** 2)


def log_abs_det(A):
    sign, logdet = np.linalg.slogdet(A)
    return logdet


def quadratic_form(A, x):
    return np.einsum("ij,j,i->", A, x, x)


def discounted_return_loss(rewards, gamma):
    """Sum of squared discounted returns G_t = sum_{k >= t} gamma^(k - t) r_k, by a reversed cumsum."""
    discounts = gamma ** np.arange(len(rewards), dtype=float)
    returns = np.cumsum((rewards * discounts)[::-1])[::-1] / discounts
    return np.sum(returns**2)


# --- the truths: closed forms and torch ---------------------------------------------------


def gp_parts(theta, X, y):
    """K and dK/dtheta_i of gp_nlml, in NumPy."""
    lengthscale, variance, noise = np.exp(theta)
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    rbf = variance * np.exp(-0.5 * sq / lengthscale**2)
    K = rbf + noise * np.eye(len(y))
    return K, (rbf * sq / lengthscale**2, rbf, noise * np.eye(len(y)))


def gp_gradient(theta, X, y):
    """Rasmussen & Williams (5.9): d NLML / d theta_i = -0.5 tr((alpha alpha^T - K^-1) dK/dtheta_i)."""
    K, dK = gp_parts(theta, X, y)
    K_inv = np.linalg.inv(K)
    alpha = K_inv @ y
    inner = np.outer(alpha, alpha) - K_inv
    return (np.array([-0.5 * np.trace(inner @ d) for d in dK]),)


def logistic_gradient(w, X, y):
    """In w, the closed form -X^T (y sigmoid(-y X w)) / n; in X, torch's."""
    z = y * (X @ w)
    return -(X.T @ (y * sigmoid(-z))) / len(y), torch_reference(torch_logistic, (1,))(w, X, y)[0]


def pca_gradient(X, k=2):
    """sum of the trailing squared singular values: 2 U_tail diag(s_tail) Vt_tail, the residual times 2."""
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    return (2 * (U[:, k:] * s[k:]) @ Vt[k:],)


def log_abs_det_gradient(A):
    """d log|det A| / dA = A^-T."""
    return (np.linalg.inv(A).T,)


def quadratic_gradient(A, x):
    return (np.outer(x, x), (A + A.T) @ x)


def torch_reference(torch_f: Callable, argnums: tuple[int, ...]) -> Callable:
    """The gradients torch.autograd gives for torch_f at the same (float64) arguments."""

    def gradients(*args):
        torch = pytest.importorskip("torch")
        tensors = [
            torch.tensor(a, dtype=torch.float64, requires_grad=i in argnums) for i, a in enumerate(args)
        ]
        grads = torch.autograd.grad(torch_f(torch, *tensors), [tensors[i] for i in argnums])
        return tuple(g.numpy() for g in grads)

    return gradients


def torch_ridge(torch, log_lam, X, y, X_val, y_val):
    A = X.T @ X + torch.exp(log_lam) * torch.eye(X.shape[1], dtype=X.dtype)
    w = torch.linalg.solve(A, X.T @ y)
    return torch.mean((X_val @ w - y_val) ** 2)


def torch_lstm(torch, W, b, x, h, c):
    i, f, o, g = torch.split(W @ torch.cat([x, h]) + b, len(c))
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return torch.sum(h_new**2) + torch.sum(c_new)


def torch_returns(torch, rewards, gamma):
    discounts = gamma ** torch.arange(len(rewards), dtype=rewards.dtype)
    returns = torch.flip(torch.cumsum(torch.flip(rewards * discounts, (0,)), 0), (0,)) / discounts
    return torch.sum(returns**2)


def torch_gp(torch, theta, X, y):
    lengthscale, variance, noise = torch.exp(theta[0]), torch.exp(theta[1]), torch.exp(theta[2])
    sq = torch.sum((X[:, None, :] - X[None, :, :]) ** 2, dim=-1)
    K = variance * torch.exp(-0.5 * sq / lengthscale**2) + noise * torch.eye(len(y), dtype=X.dtype)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
    return (
        0.5 * torch.dot(y, alpha) + torch.sum(torch.log(torch.diagonal(L))) + 0.5 * len(y) * np.log(2 * np.pi)
    )


def torch_logistic(torch, w, X, y):
    return torch.mean(torch.log1p(torch.exp(-y * (X @ w))))


# --- the problems --------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    name: str
    f: Callable
    args: Callable[[np.random.Generator], tuple]
    argnums: tuple[int, ...]
    truth: Callable  # (*args) -> the gradient in each of argnums
    # backend -> what its typed refusal must say (sympy has no symbolic SVD)
    refusals: dict[str, str] = field(default_factory=dict)


def _gp_args(rng):
    # 4 points: the symbolic Cholesky of a 5x5 kernel passes the symbolic backend's size guard
    X = rng.uniform(-2, 2, (4, 2))
    return np.log([0.9, 1.3, 0.2]), X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(4)


def _ridge_args(rng):
    X, X_val = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    w = np.array([1.0, -2.0, 0.5])
    return np.log(0.3), X, X @ w + 0.1 * rng.standard_normal(6), X_val, X_val @ w


def _logistic_args(rng):
    return rng.standard_normal(3), rng.standard_normal((6, 3)), np.array([1.0, -1, 1, 1, -1, -1])


def _lstm_args(rng):
    hidden, inputs = 2, 3
    return (
        0.5 * rng.standard_normal((4 * hidden, inputs + hidden)),
        0.1 * rng.standard_normal(4 * hidden),
        rng.standard_normal(inputs),
        rng.standard_normal(hidden),
        rng.standard_normal(hidden),
    )


def _pca_args(rng):
    # distinct singular values (3, 2, 1) times random orthogonal factors: the projection is smooth
    U, _ = np.linalg.qr(rng.standard_normal((5, 3)))
    V, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return ((U * [3.0, 2.0, 1.0]) @ V.T,)


def _slogdet_args(rng):
    A = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    return (A * [[1.0], [1.0], [-1.0]],)  # a negative determinant: log|det| still differentiable


PROGRAMS = (
    Program("gp_nlml", gp_nlml, _gp_args, (0,), gp_gradient),
    Program(
        "ridge_solve",
        ridge_validation_loss,
        _ridge_args,
        (0, 1),
        torch_reference(torch_ridge, (0, 1)),
    ),
    Program("logistic_dot", logistic_nll, _logistic_args, (0, 1), logistic_gradient),
    Program(
        "lstm_split",
        lstm_cell_loss,
        _lstm_args,
        (0, 1, 3, 4),
        torch_reference(torch_lstm, (0, 1, 3, 4)),
    ),
    Program("pca_svd", pca_residual, _pca_args, (0,), pca_gradient, {"symbolic": "svd"}),
    Program("log_det_slogdet", log_abs_det, _slogdet_args, (0,), log_abs_det_gradient),
    Program(
        "quadratic_einsum",
        quadratic_form,
        lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal(3)),
        (0, 1),
        quadratic_gradient,
    ),
    Program(
        "returns_cumsum",
        discounted_return_loss,
        lambda rng: (rng.standard_normal(5), np.array(0.9)),
        (0, 1),
        torch_reference(torch_returns, (0, 1)),
    ),
)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_gradient_matches_the_truth(program, backend):
    args = program.args(np.random.default_rng(17))
    gradient = adcore.grad(program.f, argnums=program.argnums, backend=backend)
    if backend in program.refusals:  # a typed refusal naming the op, never a number
        with pytest.raises((MissingRuleError, UnsupportedByBackendError), match=program.refusals[backend]):
            gradient(*args)
        return
    got = gradient(*args)
    for i, (g, want) in enumerate(zip(got, program.truth(*args))):
        assert g.shape == np.shape(args[program.argnums[i]]) and g.dtype == np.float64
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(
            g, want, rtol=TOLERANCE[backend], atol=TOLERANCE[backend] * scale, err_msg=f"argument {i}"
        )


def test_programs_are_plain_numpy_and_give_numpys_values():
    """The programs run on plain arrays too, with the value NumPy's own functions give."""
    rng = np.random.default_rng(0)
    theta, X, y = _gp_args(rng)
    K, _ = gp_parts(theta, X, y)
    sign, logdet = np.linalg.slogdet(K)
    want = 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet + 0.5 * len(y) * np.log(2 * np.pi)
    assert gp_nlml(theta, X, y) == pytest.approx(want, rel=1e-12)
    (X,) = _pca_args(rng)
    assert pca_residual(X) == pytest.approx(1.0, rel=1e-12)  # the trailing singular value, squared
    rewards = np.array([1.0, 2.0, 3.0])
    # G = (1 + 0.5*2 + 0.25*3, 2 + 0.5*3, 3) = (2.75, 3.5, 3)
    assert discounted_return_loss(rewards, np.array(0.5)) == pytest.approx(2.75**2 + 3.5**2 + 9)


# --- Hessians, forward over reverse -------------------------------------------------------


def test_logistic_hessian_matches_torch_and_the_closed_form():
    torch = pytest.importorskip("torch")
    w, X, y = _logistic_args(np.random.default_rng(3))
    H = adcore.hessian(logistic_nll)(w, X, y)
    p = sigmoid(y * (X @ w))
    closed = (X.T * (p * (1 - p))) @ X / len(y)  # X^T diag(sigma(z) sigma(-z)) X / n
    Xt, yt = torch.tensor(X), torch.tensor(y)
    theirs = torch.autograd.functional.hessian(lambda v: torch_logistic(torch, v, Xt, yt), torch.tensor(w))
    np.testing.assert_allclose(H, closed, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_gp_nlml_hessian_in_the_hyperparameters_matches_torch():
    torch = pytest.importorskip("torch")
    theta, X, y = _gp_args(np.random.default_rng(4))
    H = adcore.hessian(gp_nlml)(theta, X, y)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    theirs = torch.autograd.functional.hessian(lambda t: torch_gp(torch, t, Xt, yt), torch.tensor(theta))
    assert H.shape == (3, 3)
    np.testing.assert_allclose(H, H.T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(H, theirs.numpy(), rtol=1e-8, atol=1e-10)


# --- where a program has no derivative: a typed error, never NaN -------------------------------


def _singular_gp_args():
    """Two pairs of identical points and noise e^-80: K is singular to rounding, no Cholesky."""
    theta, X, y = _gp_args(np.random.default_rng(17))
    return np.array([0.0, 0.0, -80.0]), np.vstack([X[:2], X[:2]]), y


@pytest.mark.parametrize(
    "backend",
    [
        "reverse",
        "forward",
        "numeric",
        "symbolic",
    ],
)
def test_gp_nlml_of_a_kernel_that_is_not_positive_definite_is_an_error_not_nan(backend):
    # adcore's LinearAlgebraError is also numpy.linalg.LinAlgError, which plain NumPy raises here
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        adcore.grad(gp_nlml, backend=backend)(*_singular_gp_args())


def _rank_deficient():
    """A 3x3 matrix whose second row is twice its first: singular exactly."""
    return np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])


def _singular_solve(A, b):
    return np.sum(np.linalg.solve(A, b))


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic"])
@pytest.mark.parametrize(
    "f, args",
    [(log_abs_det, (_rank_deficient(),)), (_singular_solve, (_rank_deficient(), np.ones(3)))],
    ids=["slogdet", "solve"],
)
def test_a_singular_matrix_is_an_error_not_nan(f, args, backend):
    # log|det| = -inf and A^-1 b have no derivative there: LinearAlgebraError (also numpy's
    # LinAlgError, which plain NumPy raises under numeric), or numeric's InvalidOutputError for -inf
    with pytest.raises((np.linalg.LinAlgError, AdcoreError)):
        adcore.grad(f, backend=backend)(*args)
