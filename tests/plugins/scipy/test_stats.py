"""adcore_scipy.stats: scipy.stats' values to 1e-12; gradients against torch.distributions (where torch
has the distribution), against finite differences (numeric backend) and against closed forms; the
typed refusals (discrete k, CDF shape parameters, a covariance that is not positive definite); a
Gaussian fit; the conformance suite over the module's ops and cases; scipy imported only when used.
"""

from __future__ import annotations

import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest
import scipy.stats as ss

try:
    import torch
except ImportError:  # torch is in the bench extra: the comparisons with it skip, saying so
    torch = None
from adcore_scipy.stats import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t
from adcore_scipy.stats import cases as stats_cases
from adcore_scipy.stats import ops as stats_ops

import adcore
import adcore.numpy as anp
from adcore.conformance import run
from adcore.errors import (
    InvalidInputError,
    LinearAlgebraError,
    MissingRuleError,
    UnsupportedByBackendError,
)

RULE_BACKENDS = ["reverse", "forward", "symbolic"]
RNG = np.random.default_rng(19)
X = RNG.uniform(-3, 3, 12)
POS = RNG.uniform(0.05, 6, 12)
UNIT = RNG.uniform(0.02, 0.98, 12)
D = 4
COV = (lambda b: b @ b.T / D + np.eye(D))(RNG.uniform(-2, 2, (D, D)))
MEAN = RNG.uniform(-1, 1, D)
ALPHA = np.array([1.5, 0.7, 3.0])
SIMPLEX = RNG.dirichlet(ALPHA, 5).T  # (K, n): components along the first axis, as SciPy's


# --- values: SciPy's, to 1e-12 -------------------------------------------------------------------

VALUES = [
    *[
        (f"norm.{f}", getattr(norm, f), getattr(ss.norm, f), (X, 0.3, 1.7))
        for f in ("logpdf", "pdf", "cdf", "logcdf")
    ],
    *[
        (f"t.{f}", getattr(t, f), getattr(ss.t, f), (X, 3.5, 0.3, 1.7))
        for f in ("logpdf", "pdf", "cdf", "logcdf")
    ],
    *[(f"t.{f}", getattr(t, f), getattr(ss.t, f), (X, 0.6)) for f in ("logpdf", "cdf")],
    *[
        (f"gamma.{f}", getattr(gamma, f), getattr(ss.gamma, f), (X + 2, 2.5, -0.5, 1.3))
        for f in ("logpdf", "pdf", "cdf", "logcdf")
    ],
    *[(f"gamma.{f}", getattr(gamma, f), getattr(ss.gamma, f), (POS, 0.6)) for f in ("logpdf", "cdf")],
    *[
        (f"chi2.{f}", getattr(chi2, f), getattr(ss.chi2, f), (X + 2, 3.0, -0.5, 1.3))
        for f in ("logpdf", "pdf", "cdf", "logcdf")
    ],
    *[
        (f"beta.{f}", getattr(beta, f), getattr(ss.beta, f), (X / 5 + 0.5, 2.5, 1.5, -0.1, 1.3))
        for f in ("logpdf", "pdf", "cdf", "logcdf")
    ],
    *[(f"beta.{f}", getattr(beta, f), getattr(ss.beta, f), (UNIT, 0.5, 0.8)) for f in ("logpdf", "cdf")],
    *[
        (f"poisson.{f}", getattr(poisson, f), getattr(ss.poisson, f), (np.arange(-2, 15.0), 3.3))
        for f in ("logpmf", "pmf", "cdf", "logcdf")
    ],
    *[
        (f"poisson.{f}", getattr(poisson, f), getattr(ss.poisson, f), (np.arange(-2, 5.0) + 0.5, 3.3, 1))
        for f in ("logpmf", "cdf")
    ],
    ("dirichlet.logpdf", dirichlet.logpdf, ss.dirichlet.logpdf, (SIMPLEX, ALPHA)),
    ("dirichlet.pdf", dirichlet.pdf, ss.dirichlet.pdf, (SIMPLEX[:, 0], ALPHA)),
    ("dirichlet.logpdf_k-1", dirichlet.logpdf, ss.dirichlet.logpdf, (SIMPLEX[:2], ALPHA)),
    *[
        (
            f"multivariate_normal.logpdf{shape}",
            multivariate_normal.logpdf,
            ss.multivariate_normal.logpdf,
            (RNG.normal(size=shape), MEAN, COV),
        )
        for shape in ((D,), (7, D), (1, D), (2, 3, D))
    ],
    (
        "multivariate_normal.pdf",
        multivariate_normal.pdf,
        ss.multivariate_normal.pdf,
        (RNG.normal(size=(3, D)), MEAN, COV),
    ),
    ("multivariate_normal.d1", multivariate_normal.logpdf, ss.multivariate_normal.logpdf, (X, 0.5, 2.0)),
    (
        "multivariate_normal.diag",
        multivariate_normal.logpdf,
        ss.multivariate_normal.logpdf,
        (X[:8].reshape(2, D), MEAN, POS[:D]),
    ),
    (
        "multivariate_normal.nomean",
        multivariate_normal.logpdf,
        ss.multivariate_normal.logpdf,
        (X[:8].reshape(2, D), None, COV),
    ),
    (
        "norm.logcdf_tails",
        norm.logcdf,
        ss.norm.logcdf,
        (np.array([-1e5, -1e3, -40.0, -5.0, 0.0, 5.0, 40.0]),),
    ),
]


@pytest.mark.parametrize("name, ours, theirs, args", VALUES, ids=[v[0] for v in VALUES])
def test_values_are_scipy_stats(name, ours, theirs, args):
    with np.errstate(divide="ignore", invalid="ignore"):
        got, expected = np.asarray(ours(*args)), np.asarray(theirs(*args))
    assert got.shape == expected.shape
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


# --- gradients: torch.distributions --------------------------------------------------------------


def _torch_grads(log_prob, *args):
    """d sum(log_prob(*args)) / d each arg, by torch autograd, as NumPy arrays."""
    pytest.importorskip("torch")
    tensors = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in args]
    log_prob(*tensors).sum().backward()
    return [a.grad.numpy() for a in tensors]


TD = torch.distributions if torch else None  # read by the lambdas after _torch_grads's skip
TORCH = [
    (
        "norm",
        lambda x, m, s: norm.logpdf(x, m, s),
        lambda x, m, s: TD.Normal(m, s).log_prob(x),
        (X, 0.3, 1.7),
    ),
    ("norm.cdf", lambda x, m, s: norm.cdf(x, m, s), lambda x, m, s: TD.Normal(m, s).cdf(x), (X, 0.3, 1.7)),
    (
        "t",
        lambda x, df, m, s: t.logpdf(x, df, m, s),
        lambda x, df, m, s: TD.StudentT(df, m, s).log_prob(x),
        (X, 3.5, 0.3, 1.7),
    ),
    (
        "gamma",
        lambda x, a, s: gamma.logpdf(x, a, scale=s),
        lambda x, a, s: TD.Gamma(a, 1 / s).log_prob(x),
        (POS, 2.5, 1.3),
    ),
    (
        "beta",
        lambda x, a, b: beta.logpdf(x, a, b),
        lambda x, a, b: TD.Beta(a, b).log_prob(x),
        (UNIT, 2.5, 0.7),
    ),
    ("chi2", lambda x, df: chi2.logpdf(x, df), lambda x, df: TD.Chi2(df).log_prob(x), (POS, 3.0)),
    (
        "dirichlet",
        lambda x, a: dirichlet.logpdf(x, a),
        lambda x, a: TD.Dirichlet(a).log_prob(x.T),
        (SIMPLEX, ALPHA),
    ),
    (
        "multivariate_normal",
        lambda x, m, c: multivariate_normal.logpdf(x, m, c),
        lambda x, m, c: TD.MultivariateNormal(m, covariance_matrix=c).log_prob(x),
        (RNG.normal(size=(6, D)), MEAN, COV),
    ),
]


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name, ours, theirs, args", TORCH, ids=[c[0] for c in TORCH])
def test_gradients_are_torchs(name, ours, theirs, args, backend):
    argnums = tuple(range(len(args)))
    got = adcore.grad(lambda *a: anp.sum(ours(*a)), argnums=argnums, backend=backend)(*args)
    expected = _torch_grads(theirs, *args)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert np.shape(g) == np.shape(args[i])
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=f"{name} argument {i}")


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_poisson_gradient_in_mu_is_torchs(backend):
    k = np.array([0.0, 1.0, 4.0, 9.0])
    got = adcore.grad(lambda mu: anp.sum(poisson.logpmf(k, mu)), backend=backend)(
        np.array([0.4, 2.0, 3.5, 12.0])
    )
    (expected,) = _torch_grads(
        lambda mu: TD.Poisson(mu).log_prob(torch.tensor(k)), np.array([0.4, 2.0, 3.5, 12.0])
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# --- gradients: finite differences, every continuous argument ------------------------------------

FINITE = [
    ("norm.logcdf", norm.logcdf, (X, 0.3, 1.7)),
    ("t.cdf", t.cdf, (X, 3.5, 0.3, 1.7), (0, 2, 3)),
    ("t.logcdf", t.logcdf, (X, 0.8, 0.3, 1.7), (0, 2, 3)),
    ("gamma.logpdf", gamma.logpdf, (X + 4, 2.5, 0.5, 1.3)),
    ("gamma.cdf", gamma.cdf, (X + 4, 2.5, 0.5, 1.3), (0, 2, 3)),
    ("gamma.logcdf", gamma.logcdf, (X + 4, 2.5, 0.5, 1.3), (0, 2, 3)),
    ("chi2.logpdf", chi2.logpdf, (X + 4, 3.0, 0.5, 1.3)),
    ("chi2.cdf", chi2.cdf, (X + 4, 3.0, 0.5, 1.3), (0, 2, 3)),
    ("beta.logpdf", beta.logpdf, (X / 5 + 0.5, 2.5, 1.5, -0.1, 1.3)),
    ("beta.cdf", beta.cdf, (X / 5 + 0.5, 2.5, 1.5, -0.1, 1.3), (0, 3, 4)),
    ("beta.logcdf", beta.logcdf, (X / 5 + 0.5, 2.5, 1.5, -0.1, 1.3), (0, 3, 4)),
    ("poisson.cdf", lambda mu: poisson.cdf(np.arange(6.0), mu), (np.array([0.5, 1.0, 2.0, 3.0, 5.0, 7.0]),)),
    (
        "poisson.logcdf",
        lambda mu: poisson.logcdf(np.arange(6.0), mu),
        (np.array([0.5, 1.0, 2.0, 3.0, 5.0, 7.0]),),
    ),
    ("dirichlet.logpdf_k-1", dirichlet.logpdf, (np.array([[0.3, 0.2], [0.5, 0.3]]), ALPHA)),
    ("multivariate_normal.diag", multivariate_normal.logpdf, (X[:8].reshape(2, D), MEAN, POS[:D])),
]


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("case", FINITE, ids=[c[0] for c in FINITE])
def test_gradients_are_finite_differences(case, backend):
    name, function, args = case[:3]
    argnums = case[3] if len(case) > 3 else tuple(range(len(args)))
    weights = np.random.default_rng(0).uniform(0.5, 1.5, np.shape(function(*args)))

    def loss(*a):
        return anp.sum(weights * function(*a))

    got = adcore.grad(loss, argnums=argnums, backend=backend)(*args)
    expected = adcore.grad(loss, argnums=argnums, backend="numeric", method="richardson")(*args)
    for g, e in zip(got, expected):
        assert np.abs(e).max() > 1e-3
        np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-8, err_msg=name)


# --- closed forms and the tails -------------------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_the_normal_logcdf_and_its_gradient_are_finite_far_in_the_left_tail(backend):
    z = np.array([-1e3, -40.0, 40.0])
    value = norm.logcdf(z)
    assert np.all(np.isfinite(value))
    np.testing.assert_allclose(value, ss.norm.logcdf(z), rtol=1e-14)
    g = adcore.grad(lambda z: anp.sum(norm.logcdf(z)), backend=backend)(z)
    # phi / Phi, to 30 digits; exp(log phi - log Phi) loses |z|^2 eps / 2 of relative accuracy
    # (5e-11 at -1e3); phi(40) / Phi(40) underflows to 0
    mp.mp.dps = 30
    exact = [float(mp.npdf(v) / mp.ncdf(v)) for v in z[:2]]
    np.testing.assert_allclose(g[:2], exact, rtol=1e-10)
    assert 0 <= g[2] < 1e-300


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_the_cdfs_derivative_in_x_is_the_density(backend):
    for cdf, pdf, args in (
        (t.cdf, t.pdf, (0.6, 0.3, 1.7)),
        (gamma.cdf, gamma.pdf, (2.5, -4.0, 1.3)),
        (beta.cdf, beta.pdf, (2.5, 1.5, -4.0, 9.0)),
        (norm.cdf, norm.pdf, (0.3, 1.7)),
    ):
        got = adcore.grad(lambda x, cdf=cdf, args=args: anp.sum(cdf(x, *args)), backend=backend)(X)
        np.testing.assert_allclose(got, pdf(X, *args), rtol=1e-12, atol=1e-300, err_msg=cdf.__module__)
    # Student's t at x = loc, where betainc's derivative would be 0 * inf
    got = adcore.grad(lambda x: t.cdf(x, 3.0), backend=backend)(0.0)
    np.testing.assert_allclose(got, ss.t.pdf(0.0, 3.0), rtol=1e-13)


def test_the_multivariate_normal_hessian_in_the_mean_is_minus_the_precision():
    x = RNG.normal(size=(3, D))
    h = adcore.hessian(lambda m: anp.sum(multivariate_normal.logpdf(x, m, COV)))(MEAN)
    np.testing.assert_allclose(h, -3 * np.linalg.inv(COV), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_the_multivariate_normal_gradient_in_cov_is_symmetric_and_closed_form(backend):
    x = RNG.normal(size=(5, D))
    g = adcore.grad(lambda c: anp.sum(multivariate_normal.logpdf(x, MEAN, c)), backend=backend)(COV)
    p = np.linalg.inv(COV)
    a = (x - MEAN) @ p
    np.testing.assert_allclose(g, 0.5 * (a.T @ a) - 2.5 * p, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(g, g.T)
    # a non-symmetric cov is read by its symmetric part: same value, same gradient
    skew = np.triu(np.ones((D, D)), 1)
    lopsided = COV + skew - skew.T
    np.testing.assert_allclose(
        multivariate_normal.logpdf(x, MEAN, lopsided), multivariate_normal.logpdf(x, MEAN, COV)
    )


# --- refusals: typed errors naming the argument ---------------------------------------------------


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_poissons_k_and_loc_are_not_differentiable(backend):
    for argnum, name in ((0, "'k'"), (2, "'loc'")):
        f = adcore.grad(
            lambda k, mu, loc: anp.sum(poisson.logpmf(k, mu, loc)), argnums=argnum, backend=backend
        )
        with pytest.raises(InvalidInputError, match=name):
            f(np.array([1.0, 3.0]), 2.0, 0.0)
    with pytest.raises(InvalidInputError, match="'k'"):
        adcore.grad(lambda k: poisson.cdf(k, 2.0), backend=backend)(3.0)


def test_symbolic_needs_poissons_k_as_a_constant():
    # symbolic traces every argument as a symbol, and k's values choose the support
    with pytest.raises(UnsupportedByBackendError, match="'k'.*constant"):
        adcore.grad(lambda k, mu: anp.sum(poisson.logpmf(k, mu)), argnums=1, backend="symbolic")(
            np.array([1.0]), 2.0
        )
    got = adcore.grad(lambda mu: anp.sum(poisson.logpmf(np.array([1.0, 3.0]), mu)), backend="symbolic")(2.0)
    np.testing.assert_allclose(got, 1 / 2.0 - 1 + 3 / 2.0 - 1, rtol=1e-14)


REFUSED = [
    ("t.cdf", lambda df: t.cdf(0.5, df), "'df'"),
    ("t.logcdf", lambda df: t.logcdf(0.5, df), "'df'"),
    ("gamma.cdf", lambda a: gamma.cdf(0.5, a), "'a'"),
    ("gamma.logcdf", lambda a: gamma.logcdf(0.5, a), "'a'"),
    ("chi2.cdf", lambda df: chi2.cdf(0.5, df), "'df'"),
    ("beta.cdf a", lambda a: beta.cdf(0.5, a, 2.0), "'a'"),
    ("beta.cdf b", lambda b: beta.cdf(0.5, 2.0, b), "'b'"),
    ("beta.logcdf b", lambda b: beta.logcdf(0.5, 2.0, b), "'b'"),
]


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name, f, arg", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_cdfs_shape_parameter_is_refused_by_name(name, f, arg, backend):
    # symbolic meets the refusal in the op's rule (stdtr's, or special's betainc / gammainc's, which
    # names its own argument: chi2's df is gammainc's a)
    with pytest.raises(
        MissingRuleError, match=arg if backend != "symbolic" or name.startswith("t.") else None
    ):
        adcore.grad(f, backend=backend)(2.0)


def test_a_cdfs_shape_derivative_is_estimated_by_the_numeric_backend():
    got = adcore.grad(lambda df: t.cdf(0.5, df), backend="numeric")(2.0)
    h = 1e-5
    np.testing.assert_allclose(got, (ss.t.cdf(0.5, 2.0 + h) - ss.t.cdf(0.5, 2.0 - h)) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_a_covariance_that_is_not_positive_definite_is_a_typed_error(backend):
    indefinite = np.diag([1.0, -1.0, 2.0, 1.0])
    x = RNG.normal(size=(2, D))
    with pytest.raises(LinearAlgebraError, match="not positive definite"):
        multivariate_normal.logpdf(x, MEAN, indefinite)
    with pytest.raises(LinearAlgebraError, match="not positive definite"):
        adcore.grad(lambda m: anp.sum(multivariate_normal.logpdf(x, m, indefinite)), backend=backend)(MEAN)
    with pytest.raises(LinearAlgebraError, match="not positive definite"):
        stats_ops.spd_inverse(indefinite)


def test_allow_singular_and_the_multivariate_cdf_are_refused():
    with pytest.raises(
        adcore.AdcoreError if hasattr(adcore, "AdcoreError") else Exception, match="allow_singular"
    ):
        multivariate_normal.logpdf(MEAN, MEAN, COV, allow_singular=True)
    with pytest.raises(Exception, match="no closed form"):
        multivariate_normal.cdf(MEAN, MEAN, COV)


# --- a Gaussian fit -----------------------------------------------------------------------------


def test_gradient_descent_through_norm_logpdf_recovers_the_sample_mean_and_std():
    data = np.random.default_rng(7).normal(2.0, 0.7, 200)

    def loss(loc, scale):
        return -anp.mean(norm.logpdf(data, loc, scale))

    step = adcore.grad(loss, argnums=(0, 1))
    loc, scale = 0.0, 1.0
    for _ in range(400):
        g_loc, g_scale = step(loc, scale)
        loc, scale = loc - 0.5 * g_loc, scale - 0.2 * g_scale
    np.testing.assert_allclose(loc, data.mean(), rtol=1e-10)
    np.testing.assert_allclose(scale, data.std(), rtol=1e-10)  # the maximum-likelihood std (ddof 0)


# --- conformance and laziness -------------------------------------------------------------------


def test_the_conformance_suite_finds_the_stats_ops_and_cases_agreeing():
    names = [op.name for op in stats_ops.OPS]
    cases = [case.name for case in stats_cases.CASES]
    report = run(ops=names, cases=cases, dtypes=("float64", "float32"))
    failures = [(c.subject, c.backend, c.dtype, c.message) for c in report.cells if c.failed]
    assert report.ok, failures
    agreeing = {(c.subject, c.backend) for c in report.cells if c.status == "agrees"}
    # sparsity: patterns hold the non-zeros; source: a column per mode
    every = ("reverse", "forward", "numeric", "symbolic", "sparsity", "source/forward", "source/reverse")
    expected = {(name, b) for name in names + cases for b in every}
    # spd_inverse (LAPACK's potri) has no sympy rule: symbolic refuses it, and the mvn_logpdf case
    # covers the symbolic backend on the density through multivariate_normal_logpdf's body
    expected -= {("spd_inverse", "symbolic")}
    assert agreeing == expected


def test_importing_the_stats_module_and_loading_the_registry_imports_no_scipy():
    code = (
        "import sys, adcore, adcore_scipy.stats; adcore.ops['log_ndtr']; adcore.ops['multivariate_normal_logpdf']; "
        "assert not [m for m in sys.modules if m.startswith('scipy')], [m for m in sys.modules if m.startswith('scipy')]"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
