"""Accuracy per evaluation: the issue's test function, Rosenbrock-100, the seeds' example.

f(x) = exp(x) / sqrt(sin(x)³ + cos(x)³) at x = 1.5 has the exact derivative
4.053427893898620657714188 (to 25 digits); its singularity at 3π/4 makes large steps
costly, so it separates the methods well. Every evaluation of f is counted.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

EXACT = 4.053427893898620657714188


class Counted:
    """f with a count of its calls."""

    def __init__(self, f) -> None:
        self.f, self.calls = f, 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


def issue_function(x):
    return np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3)


def derivative(f, method, **options):
    return adcore.differentiate(f, backend="numeric", method=method, **options)


@pytest.mark.parametrize(
    "method, tolerance, evaluations",
    [
        ("central", 2e-10, 2),
        ("richardson", 1e-13, 10),
        ("complex", 1e-15, 1),
        ("forward", 1e-6, 1),
        ("backward", 1e-6, 1),
    ],
)
def test_issue_function_at_one_and_a_half(method, tolerance, evaluations):
    f = Counted(issue_function)
    d = derivative(f, method)(1.5)
    assert abs(d - EXACT) <= tolerance
    # differentiate needs no f(x) for central, richardson and complex; one-sided methods do; the
    # complex step and richardson are checked by a central difference at two steps along a
    # random direction
    assert f.calls <= evaluations + (method in ("forward", "backward")) + 4 * (
        method in ("complex", "richardson")
    )


@pytest.mark.parametrize("method", ["central", "richardson", "complex", "forward", "backward"])
def test_issue_function_error_estimate_bounds_the_error_and_is_not_vacuous(method):
    d, error = derivative(issue_function, method, return_error=True)(1.5)
    assert d == derivative(issue_function, method)(1.5)  # asking for the error does not change d
    assert abs(d - EXACT) <= error
    assert error <= {"central": 1e-8, "richardson": 1e-11, "complex": 1e-14}.get(method, 1e-5)


def test_complex_step_is_exact_to_rounding():
    assert derivative(issue_function, "complex")(1.5) == pytest.approx(EXACT, rel=2e-16)


# --- Rosenbrock-100 -----------------------------------------------------------------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


X100 = np.random.default_rng(0).uniform(-2, 2, 100)


def relative_error(g, exact):
    return np.linalg.norm(g - exact) / np.linalg.norm(exact)


def test_rosenbrock_100_richardson_relative_error():
    f = Counted(rosenbrock)
    g, error = adcore.grad(f, backend="numeric", method="richardson", return_error=True)(X100)
    exact = rosenbrock_gradient(X100)
    assert relative_error(g, exact) <= 1e-12
    assert np.all(np.abs(g - exact) <= error)
    # a quartic in each variable: one extrapolation is exact, so three steps settle every column;
    # the error bars add one measurement of f's noise, 11 points per call (verification.PROBE),
    # and the check against central differences along a random direction four
    assert f.calls == 100 * 3 * 2 + 11 + 4


def test_rosenbrock_100_central_and_complex():
    exact = rosenbrock_gradient(X100)
    assert relative_error(adcore.grad(rosenbrock, backend="numeric")(X100), exact) <= 1e-8
    assert relative_error(adcore.grad(rosenbrock, backend="numeric", method="complex")(X100), exact) <= 1e-15


def test_rosenbrock_at_its_minimum_has_zero_gradient():
    g = adcore.grad(rosenbrock, backend="numeric", method="richardson")(np.ones(10))
    np.testing.assert_allclose(g, 0.0, atol=1e-12)


# --- the seeds' worked example (seed 001) ---------------------------------------------------

X1, X2 = 2.0, 5.0


def seed_example(x1, x2):
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


@pytest.mark.parametrize("method, rel", [("central", 1e-9), ("richardson", 1e-13), ("complex", 1e-15)])
def test_seed_example(method, rel):
    value, (g1, g2) = adcore.value_and_grad(seed_example, argnums=(0, 1), backend="numeric", method=method)(
        X1, X2
    )
    assert value == pytest.approx(np.log(2) + 10 - np.sin(5), rel=1e-15)
    assert g1 == pytest.approx(1 / X1 + X2, rel=rel)  # 5.5
    assert g2 == pytest.approx(X1 - np.cos(X2), rel=rel)  # 1.716...
    assert (round(float(g1), 5), round(float(g2), 3)) == (5.5, 1.716)


def test_seed_example_with_errors_through_value_and_grad():
    value, (grads, errors) = adcore.value_and_grad(
        seed_example, argnums=(0, 1), backend="numeric", method="richardson", return_error=True
    )(X1, X2)
    exact = (1 / X1 + X2, X1 - np.cos(X2))
    for g, e, want in zip(grads, errors, exact):
        assert abs(g - want) <= e <= 1e-10


# --- error estimates bound the true error -------------------------------------------------

CASES = [
    (np.exp, np.exp, 0.7),
    (np.sin, np.cos, 2.0),
    (np.log, lambda x: 1 / x, 0.05),  # richardson's first steps leave the domain: skipped
    (np.tanh, lambda x: 1 - np.tanh(x) ** 2, -0.3),
    (lambda x: 1 / x, lambda x: -1 / x**2, 0.01),  # a pole 0.01 away
    (lambda x: np.sin(3 * x), lambda x: 3 * np.cos(3 * x), 18.6),  # 3x rounds inside f
    (lambda x: x**4 - 3 * x**2, lambda x: 4 * x**3 - 6 * x, 1.68),  # cancellation inside f
    (lambda x: np.exp(-x * x), lambda x: -2 * x * np.exp(-x * x), 5.0),  # tiny values
    (issue_function, lambda x: EXACT, 1.5),
]


@pytest.mark.parametrize("method", ["central", "forward", "backward", "richardson", "complex"])
@pytest.mark.parametrize("f, df, x", CASES)
def test_error_estimates_bound_the_true_error(f, df, x, method):
    d, error = derivative(f, method, return_error=True)(x)
    assert abs(d - df(x)) <= error
    assert error <= 1e-4 * abs(df(x))  # and say something


def test_richardson_reaches_near_full_precision_on_every_case():
    for f, df, x in CASES:
        d = derivative(f, "richardson")(x)
        assert abs(d - df(x)) <= 1e-11 * abs(df(x)), f


# --- float32 ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["central", "forward", "backward", "richardson", "complex"])
def test_float32_keeps_its_dtype_and_is_loosely_right(method):
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    g, error = adcore.grad(lambda x: np.sum(np.sin(x)), backend="numeric", method=method, return_error=True)(
        x
    )
    assert g.dtype == np.float32 and error.dtype == np.float32
    exact = np.cos(x.astype(np.float64))
    np.testing.assert_allclose(g, exact, atol=2e-2 if method in ("forward", "backward") else 1e-3)
    assert np.all(np.abs(g - exact) <= error + np.spacing(np.float32(1)))
