"""adcore_scipy.special: values are SciPy's, derivatives match the closed forms (Abramowitz &
Stegun, DLMF), torch.special's autograd and finite differences on every backend; orders and
parameters with no derivative refuse by name; the stable functions stay finite at +-1e3.

Closed forms: erf' = 2/sqrt(pi) exp(-x^2) (A&S 7.1.19), erfinv' = sqrt(pi)/2 exp(erfinv^2),
gammaln' = digamma (6.3.1), polygamma(n)' = polygamma(n + 1), B(a, b)' = B (psi(a) - psi(a + b))
(6.2.2), d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b) (26.5.1), d/dx P(a, x) = x^(a-1) e^-x /
Gamma(a) (6.5.1), I_v' = (I_{v-1} + I_{v+1}) / 2 (9.6.26), J_v' = (J_{v-1} - J_{v+1}) / 2 (9.1.27),
Y likewise, (1 / Gamma)'(-n) = (-1)^n n! (DLMF 5.2.1 with 5.5.3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as ss

try:
    import torch
except ImportError:  # torch is in the bench extra: the comparisons with it skip, saying so
    torch = None
from adcore_scipy import special

import adcore
from adcore.errors import InvalidInputError, MissingRuleError

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
RULES = ["reverse", "forward"]  # the backends that run the rules of rules.py (symbolic: sympy_functions)
EXACT = ["reverse", "forward", "symbolic"]
X = np.array([0.3, 0.9, 1.7, 2.6])  # positive: every function below is defined there


def tol(backend: str) -> dict:
    return {"rtol": 1e-6, "atol": 1e-8} if backend == "numeric" else {"rtol": 1e-12, "atol": 1e-14}


def diagonal(f, x, backend):
    """d f(x)_i / d x_i of an elementwise f."""
    return np.diagonal(adcore.jacobian(f, backend=backend)(x))


# (function, inputs where it is checked, its derivative in closed form)
UNARY = [
    (special.erf, X - 1, lambda x: 2 / math.sqrt(math.pi) * np.exp(-(x**2))),
    (special.erfc, X - 1, lambda x: -2 / math.sqrt(math.pi) * np.exp(-(x**2))),
    (special.erfinv, X / 3, lambda x: math.sqrt(math.pi) / 2 * np.exp(ss.erfinv(x) ** 2)),
    (special.erfcinv, X / 2, lambda x: -math.sqrt(math.pi) / 2 * np.exp(ss.erfcinv(x) ** 2)),
    (special.gamma, X, lambda x: ss.gamma(x) * ss.digamma(x)),
    (special.gammaln, X, ss.digamma),
    (special.digamma, X, lambda x: ss.polygamma(1, x)),
    (special.psi, X, lambda x: ss.polygamma(1, x)),
    (special.rgamma, X - 2, lambda x: -ss.rgamma(x) * ss.digamma(x)),
    (lambda x: special.polygamma(2, x), X, lambda x: ss.polygamma(3, x)),
    (special.expit, X - 1, lambda x: ss.expit(x) * (1 - ss.expit(x))),
    (special.logit, X / 3, lambda x: 1 / (x * (1 - x))),
    (special.i0, X - 1, ss.i1),
    (special.i1, X - 1, lambda x: (ss.i0(x) + ss.iv(2, x)) / 2),
    (special.j0, X, lambda x: -ss.j1(x)),
    (special.j1, X, lambda x: (ss.j0(x) - ss.jv(2, x)) / 2),
    (special.y0, X, lambda x: -ss.y1(x)),
    (special.y1, X, lambda x: (ss.y0(x) - ss.yn(2, x)) / 2),
    (lambda x: special.iv(1.5, x), X, lambda x: (ss.iv(0.5, x) + ss.iv(2.5, x)) / 2),
    (lambda x: special.ive(2, x), X, lambda x: (ss.ive(1, x) + ss.ive(3, x)) / 2 - ss.ive(2, x)),
    (lambda x: special.jv(0.5, x), X, lambda x: (ss.jv(-0.5, x) - ss.jv(1.5, x)) / 2),
    (lambda x: special.jn(3, x), X, lambda x: (ss.jn(2, x) - ss.jn(4, x)) / 2),
    (lambda x: special.yn(2, x), X, lambda x: (ss.yn(1, x) - ss.yn(3, x)) / 2),
    (lambda x: special.betainc(2.5, 0.7, x), X / 3, lambda x: x**1.5 * (1 - x) ** -0.3 / ss.beta(2.5, 0.7)),
    (lambda x: special.gammainc(1.5, x), X, lambda x: x**0.5 * np.exp(-x) / ss.gamma(1.5)),
    (lambda x: special.gammaincc(1.5, x), X, lambda x: -(x**0.5) * np.exp(-x) / ss.gamma(1.5)),
    (lambda x: special.multigammaln(x + 2, 3), X, lambda x: sum(ss.digamma(x + 2 - j / 2) for j in range(3))),
]
IDS = [
    "erf erfc erfinv erfcinv gamma gammaln digamma psi rgamma polygamma expit logit i0 i1 j0 j1 y0 y1 "
    "iv ive jv jn yn betainc gammainc gammaincc multigammaln".split()
][0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("f", "x", "slope"), UNARY, ids=IDS)
def test_derivatives_match_the_closed_forms(f, x, slope, backend):
    if backend == "symbolic" and f is UNARY[-1][0]:
        pytest.skip("multigammaln checks its domain on numbers, which symbolic refuses (a typed error)")
    if backend == "symbolic" and f is special.rgamma:
        pytest.skip("rgamma has no sympy rule (test_rgamma_has_no_sympy_rule)")
    np.testing.assert_allclose(diagonal(f, x, backend), slope(x), **tol(backend))


@pytest.mark.parametrize(
    ("ours", "scipys", "args"),
    [
        (special.erf, ss.erf, (X - 1,)),
        (special.erfcinv, ss.erfcinv, (X / 2,)),
        (special.gammaln, ss.gammaln, (X,)),
        (special.rgamma, ss.rgamma, (X - 3,)),
        (special.beta, ss.beta, (X, X[::-1])),
        (special.betaln, ss.betaln, (X * 1e3, X)),
        (special.betainc, ss.betainc, (2.0, 3.0, X / 3)),
        (special.xlogy, ss.xlogy, (X - 1, X)),
        (special.xlog1py, ss.xlog1py, (X - 1, X)),
        (special.ive, ss.ive, (1.5, X)),
        (special.jn, ss.jn, (2, X)),
        (special.expit, ss.expit, (np.array([-1e3, 0.0, 1e3]),)),
        (special.logit, ss.logit, (X / 3,)),
        (special.softmax, ss.softmax, (np.array([[1.0, 2.0], [3.0, 5.0]]),)),
        (special.log_softmax, ss.log_softmax, (np.array([[1.0, 2.0], [3.0, 5.0]]),)),
        (lambda x: special.polygamma(3, x), lambda x: ss.polygamma(3, x), (X,)),
        (lambda x: special.multigammaln(x, 4), lambda x: ss.multigammaln(x, 4), (X + 2,)),
    ],
)
def test_values_are_scipys(ours, scipys, args):
    np.testing.assert_allclose(ours(*args), scipys(*args), rtol=1e-14)


@pytest.mark.parametrize("f", [special.erf, special.gammaln, special.i1, lambda x: special.iv(1.0, x)])
def test_float32_stays_float32_in_value_and_derivative(f):
    x = X.astype(np.float32)
    assert f(x).dtype == np.float32
    for backend in RULES:
        assert adcore.grad(lambda v: f(v).sum(), backend=backend)(x).dtype == np.float32


@pytest.mark.parametrize("name, first", [("gammainc", 1.5), ("gammaincc", 1.5), ("yn", 2)])
def test_a_python_number_first_argument_gives_scipys_float64_value_and_a_float32_derivative(name, first):
    x = X.astype(np.float32)
    f = getattr(special, name)
    want = getattr(ss, name)(first, x)
    assert want.dtype == np.float64  # SciPy's loop for a Python number with float32 x
    got = f(first, x)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    oracle = adcore.grad(lambda v: f(first, v).sum(), backend="numeric")(X)
    for backend in RULES:
        d = adcore.grad(lambda v: f(first, v).sum(), backend=backend)(x)
        assert d.dtype == np.float32
        np.testing.assert_allclose(d, oracle, rtol=1e-5)
    assert f(first, X).dtype == np.float64  # the next call works


# --- against torch.special's autograd ---------------------------------------------------------

TORCH = [
    (special.erf, lambda x: torch.special.erf(x), X - 1),
    (special.erfc, lambda x: torch.special.erfc(x), X - 1),
    (special.erfinv, lambda x: torch.special.erfinv(x), X / 3),
    (special.gammaln, lambda x: torch.special.gammaln(x), X),
    (special.digamma, lambda x: torch.special.digamma(x), X),
    (lambda x: special.polygamma(2, x), lambda x: torch.special.polygamma(2, x), X),
    (special.expit, lambda x: torch.special.expit(x), X - 1),
    (special.logit, lambda x: torch.special.logit(x), X / 3),
    (special.i0, lambda x: torch.special.i0(x), X - 1),
    (special.i1, lambda x: torch.special.i1(x), X - 1),
    (lambda x: special.multigammaln(x, 3), lambda x: torch.special.multigammaln(x, 3), X + 2),
    (lambda x: special.xlogy(x, 2 * x), lambda x: torch.special.xlogy(x, 2 * x), X),
    (lambda x: special.xlog1py(x, x), lambda x: torch.special.xlog1py(x, x), X),
    (lambda x: special.logsumexp(x), lambda x: torch.logsumexp(x, 0), X),
    (lambda x: special.softmax(x)[1:], lambda x: torch.special.softmax(x, 0)[1:], X),
    (lambda x: special.log_softmax(x)[:2], lambda x: torch.special.log_softmax(x, 0)[:2], X),
]


@pytest.mark.parametrize("backend", RULES)
@pytest.mark.parametrize(("ours", "theirs", "x"), TORCH)
def test_gradients_match_torch(ours, theirs, x, backend):
    pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    (expected,) = torch.autograd.grad(theirs(t).sum(), t)
    got = adcore.grad(lambda v: ours(v).sum(), backend=backend)(x)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-9, atol=1e-14)  # torch's trigamma: 5e-10


# --- two inputs, broadcasting --------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_beta_and_betaln_gradients_in_both_arguments(backend):
    a, b = np.array([[0.7], [2.0]]), np.array([1.5, 3.0, 0.6])  # (2, 1) against (3,)
    psi_ab = ss.digamma(a + b)
    ga, gb = adcore.grad(lambda a, b: special.betaln(a, b).sum(), argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(ga, (ss.digamma(a) - psi_ab).sum(axis=1, keepdims=True), **tol(backend))
    np.testing.assert_allclose(gb, (ss.digamma(b) - psi_ab).sum(axis=0), **tol(backend))
    ga, gb = adcore.grad(lambda a, b: special.beta(a, b).sum(), argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(gb, (ss.beta(a, b) * (ss.digamma(b) - psi_ab)).sum(axis=0), **tol(backend))


@pytest.mark.parametrize("backend", EXACT)
def test_xlogy_is_zero_at_x_zero_with_the_right_derivatives(backend):
    # xlogy(0, y) = 0 for every y, so d/dy = 0 there, also at y = 0; d/dx = log(y) as elsewhere
    x, y = np.array([0.0, 0.0, 2.0]), np.array([3.0, 0.5, 4.0])
    gx, gy = adcore.grad(lambda x, y: special.xlogy(x, y).sum(), argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_allclose(gx, np.log(y), rtol=1e-15)
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.5])
    gx, gy = adcore.grad(lambda x, y: special.xlog1py(x, y).sum(), argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_allclose(gx, np.log1p(y), rtol=1e-15)
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.4])


@pytest.mark.parametrize("backend", RULES)
def test_xlogy_at_the_origin_gives_zero_in_y_not_nan(backend):
    gy = adcore.grad(lambda y: special.xlogy(0.0, y), backend=backend)(0.0)
    assert gy == 0.0
    assert special.xlogy(0.0, 0.0) == 0.0


@pytest.mark.parametrize("backend", RULES)
def test_rgamma_derivative_at_the_poles_of_gamma(backend):
    x = np.array([0.0, -1.0, -2.0, -3.0])
    expected = [(-1) ** n * math.factorial(n) for n in range(4)]  # (1/Gamma)'(-n) = (-1)^n n!
    np.testing.assert_allclose(diagonal(special.rgamma, x, backend), expected, rtol=1e-14)
    second = adcore.grad(adcore.grad(special.rgamma, backend=backend), backend=backend)
    # 1/Gamma(x) = x + euler_gamma x^2 + ... (DLMF 5.7.1): (1/Gamma)''(0) = 2 euler_gamma
    assert second(0.0) == pytest.approx(2 * np.euler_gamma, rel=1e-12)


def test_rgamma_has_no_sympy_rule():
    # 1/Gamma's derivative -digamma/Gamma is 0 * inf at the poles: symbolic refuses, it does not guess
    with pytest.raises(MissingRuleError, match="'rgamma' has no 'sympy' rule"):
        adcore.grad(special.rgamma, backend="symbolic")(0.5)


@pytest.mark.parametrize("backend", EXACT)
def test_second_derivatives_through_the_rules(backend):
    def d2(f):
        return adcore.grad(adcore.grad(f, backend=backend), backend=backend)

    assert d2(special.erf)(0.7) == pytest.approx(
        -2 * 0.7 * 2 / math.sqrt(math.pi) * math.exp(-0.49), rel=1e-12
    )
    assert d2(special.gammaln)(1.0) == pytest.approx(math.pi**2 / 6, rel=1e-13)  # zeta(2)
    assert d2(special.i0)(0.0) == pytest.approx(0.5, rel=1e-14)  # I_0 = 1 + x^2/4 + ...
    x = 1.3  # d2 J_0 = -J_1' = (J_2 - J_0) / 2
    assert d2(special.j0)(x) == pytest.approx((ss.jv(2, x) - ss.j0(x)) / 2, rel=1e-12)


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:floating point number truncated")  # yn's n = 1.5, as SciPy warns
@pytest.mark.parametrize("backend", RULES + ["symbolic"])
@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (lambda a: special.betainc(a, 2.0, 0.3), "a"),
        (lambda b: special.betainc(2.0, b, 0.3), "b"),
        (lambda a: special.gammainc(a, 1.0), "a"),
        (lambda a: special.gammaincc(a, 1.0), "a"),
        (lambda v: special.iv(v, 1.0), "v"),
        (lambda v: special.ive(v, 1.0), "v"),
        (lambda v: special.jv(v, 1.0), "v"),
        (lambda v: ss.jv(v, 1.0), "v"),  # SciPy's own ufunc, on a traced order
        (lambda n: special.yn(n, 1.0), "n"),
    ],
)
def test_derivatives_with_no_closed_form_refuse_naming_the_argument(f, arg, backend):
    with pytest.raises(MissingRuleError, match=rf"argument '{arg}'.*backend='numeric'"):
        adcore.grad(f, backend=backend)(1.5)


def test_the_numeric_backend_estimates_what_the_rules_refuse():
    # d/da I_x(a, b) against a central difference of SciPy's own values
    h = 1e-5
    expected = (ss.betainc(1.5 + h, 2.0, 0.3) - ss.betainc(1.5 - h, 2.0, 0.3)) / (2 * h)
    got = adcore.grad(lambda a: special.betainc(a, 2.0, 0.3), backend="numeric")(1.5)
    assert got == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("backend", RULES)
def test_integer_orders_are_static(backend):
    with pytest.raises(InvalidInputError, match="polygamma: n is an integer"):
        adcore.grad(lambda n: special.polygamma(n, 1.0), backend=backend)(1.0)
    with pytest.raises(InvalidInputError, match="multigammaln: d is an integer"):
        adcore.grad(lambda d: special.multigammaln(3.0, d), backend=backend)(2.0)
    with pytest.raises(ValueError, match="n must be one integer >= 0"):
        special.polygamma(1.5, 1.0)
    with pytest.raises(ValueError, match=r"a must be > \(d - 1\) / 2"):
        special.multigammaln(1.0, 4)


# --- stability and logsumexp ---------------------------------------------------------------------

BIG = np.array([-1e3, -2.0, 0.5, 1e3])


@pytest.mark.parametrize("backend", RULES)
def test_expit_softmax_and_logsumexp_are_finite_at_1e3_without_warnings(backend):
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # exp(-1e3) underflows to 0, rightly
        for f in (
            lambda x: special.expit(x).sum(),
            lambda x: special.softmax(x)[0],
            lambda x: special.log_softmax(x)[0],
            lambda x: special.logsumexp(x),
            lambda x: special.logsumexp(x, b=np.array([1.0, 2.0, -3.0, 0.5]), return_sign=True)[0],
        ):
            value, g = adcore.value_and_grad(f, backend=backend)(BIG)
            assert np.isfinite(value) and np.all(np.isfinite(g))
    assert special.logsumexp(BIG) == pytest.approx(1e3, rel=1e-15)


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])  # symbolic: test below
def test_logsumexp_with_weights_and_sign(backend):
    a = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
    b = np.array([1.0, -3.0, -0.5])  # the first row's sum is negative, the second's positive
    out, sign = special.logsumexp(a, axis=1, b=b, return_sign=True)
    ref_out, ref_sign = ss.logsumexp(a, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(out, ref_out, rtol=1e-14)
    np.testing.assert_array_equal(sign, ref_sign)
    assert set(np.asarray(ref_sign)) == {-1.0, 1.0}  # one row's sum is negative, one positive

    def f(a, b):
        return special.logsumexp(a, axis=1, b=b, return_sign=True)[0].sum()

    ga, gb = adcore.grad(f, argnums=(0, 1), backend=backend)(a, b)
    # d log|s| / d a_ij = b_j exp(a_ij) / s_i, d / d b_j = sum_i exp(a_ij) / s_i
    s = (b * np.exp(a)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ga, b * np.exp(a) / s, **tol(backend))
    np.testing.assert_allclose(gb, (np.exp(a) / s).sum(axis=0), **tol(backend))


def test_logsumexp_with_weights_refuses_symbolic_with_a_typed_error():
    # its shift by the largest a needs numbers, which symbolic's traced values do not have yet
    with pytest.raises(adcore.AdcoreError, match="symbolic"):
        adcore.grad(lambda a: special.logsumexp(a, b=np.array([1.0, 2.0])), backend="symbolic")(np.ones(2))


def test_logsumexp_keepdims_a_zero_weight_and_a_negative_sum_without_sign():
    a = np.array([[1.0, 1e3], [2.0, 3.0]])
    b = np.array([[1.0, 0.0], [1.0, 1.0]])  # the 1e3 has weight 0: it takes no part
    np.testing.assert_allclose(
        special.logsumexp(a, axis=1, b=b, keepdims=True),
        ss.logsumexp(a, axis=1, b=b, keepdims=True),
        rtol=1e-15,
    )
    g = adcore.grad(lambda a: special.logsumexp(a, axis=1, b=b).sum())(a)
    np.testing.assert_allclose(g, [[1.0, 0.0], ss.softmax([2.0, 3.0])], rtol=1e-14)
    with np.errstate(invalid="ignore"):
        assert np.isnan(special.logsumexp(np.array([0.0, 0.0]), b=np.array([1.0, -2.0])))  # as SciPy


# --- scipy.special's own functions on traced values ------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_scipy_ufuncs_are_differentiable_as_written(backend):
    def f(x):
        return (ss.erf(x) + ss.gammaln(x) + ss.xlogy(x, x) + ss.expit(x) + ss.i0(x) + ss.jv(1, x)).sum()

    expected = (
        2 / math.sqrt(math.pi) * np.exp(-(X**2))
        + ss.digamma(X)
        + np.log(X)
        + 1
        + ss.expit(X) * (1 - ss.expit(X))
        + ss.i1(X)
        + (ss.j0(X) - ss.jv(2, X)) / 2
    )
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(X), expected, **tol(backend))


def test_the_symbolic_derivative_prints_calls_of_the_ops():
    symbolic = pytest.importorskip("adcore_symbolic")
    d = symbolic.derivative_expr(lambda x: special.gammaln(x) + special.iv(2.0, x), ())
    assert "ops.digamma(x)" in d.source and "ops.iv(" in d.source


# --- a Beta regression through betaln -------------------------------------------------------------


def beta_nll(params, features, y):
    """The negative log-likelihood of y ~ Beta(mu phi, (1 - mu) phi), mu = expit(features @ w),
    phi = exp(log_phi): the Beta density's log is (a-1) log y + (b-1) log(1-y) - betaln(a, b)."""
    w, log_phi = params[:-1], params[-1]
    mu = special.expit(features @ w)
    phi = adcore.numpy.exp(log_phi)
    a, b = mu * phi, (1 - mu) * phi
    return -adcore.numpy.sum(special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b))


@pytest.fixture(scope="module")
def beta_data():
    rng = np.random.default_rng(0)
    features = np.column_stack([np.ones(400), rng.normal(size=400)])
    w, phi = np.array([0.3, -0.8]), 20.0
    mu = ss.expit(features @ w)
    y = rng.beta(mu * phi, (1 - mu) * phi)
    return features, y, np.array([*w, np.log(phi)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_beta_regression_gradient_matches_finite_differences(beta_data, backend):
    features, y, _ = beta_data
    params = np.array([0.1, -0.2, 1.5])
    got = adcore.grad(beta_nll, backend=backend)(params, features, y)
    h = 1e-6
    central = [
        (beta_nll(params + h * e, features, y) - beta_nll(params - h * e, features, y)) / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(got, central, rtol=1e-6)


def test_beta_regression_fit_recovers_the_parameters(beta_data):
    from scipy.optimize import minimize

    features, y, truth = beta_data
    loss_and_grad = adcore.value_and_grad(beta_nll)
    fit = minimize(lambda p: loss_and_grad(p, features, y), np.zeros(3), jac=True, method="BFGS")
    assert fit.success
    np.testing.assert_allclose(fit.x, truth, atol=0.15)  # 400 samples: within a few standard errors
    assert np.linalg.norm(fit.jac) < 1e-4


ROWS = np.array([[0.3, 2.0, 0.5], [0.4, 0.5, 0.9], [-2.0, 0.1, 0.0], [-3.0, -0.5, 1.5]])


def _batched_and_looped(f, backend):
    df = adcore.grad(lambda x: np.sum(f(x) * np.array([1.0, 2.0, 3.0])), backend=backend)
    with np.errstate(all="ignore"):
        return adcore.vmap(df, fallback="error")(ROWS), np.stack([df(x) for x in ROWS])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", ["logit", "xlog1py"])
def test_vmap_of_grad_is_the_loop_s_where_some_example_is_outside_the_domain(name, backend):
    """The slope is nan where the value is (logit(2)) in each example, batched (no loop): the
    nan test once swallowed vmap's conversion error as 'no number' and gave the formula's slope."""
    op = getattr(special, name)
    f = op if name == "logit" else lambda y: op(np.array([1.0, 1.0, 2.0]), y)
    got, loop = _batched_and_looped(f, backend)
    assert np.isnan(loop).any() and not np.isnan(loop).all()
    np.testing.assert_array_equal(got, loop)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_takes_the_general_form_when_examples_differ(backend):
    """rgamma's reflection left of 0.5 and xlogy's zero x are decided for the whole batch: the
    mixed form is each example's own, bit for bit."""
    for f in (special.rgamma, lambda y: special.xlogy(np.array([0.0, 1.0, 0.0]), y * y + 1.0)):
        got, loop = _batched_and_looped(f, backend)
        np.testing.assert_array_equal(got, loop)
