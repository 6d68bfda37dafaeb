"""The issue's must-shows on the seeds' examples: the worked example as exact expressions
and numbers, the logistic map without expression swell, exact Rosenbrock Hessians."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic import derivative_expr

import adcore
import adcore.numpy as anp

x1, x2 = sp.symbols("x1 x2", real=True)


def seed_f(x1, x2):
    """seed 001/004: f(x1, x2) = ln(x1) + x1 x2 - sin(x2)."""
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


def test_the_worked_example_as_exact_expressions():
    d = derivative_expr(seed_f, (), (), argnums=(0, 1))
    d1, d2 = d.derivatives
    assert sp.simplify(d1 - (1 / x1 + x2)) == 0 and d1 == 1 / x1 + x2
    assert d2 == x1 - sp.cos(x2)
    assert d.value == sp.log(x1) + x1 * x2 - sp.sin(x2)


def test_the_worked_example_numbers_at_2_5():
    dx1, dx2 = adcore.grad(seed_f, argnums=(0, 1), backend="symbolic")(2.0, 5.0)
    assert dx1 == 5.5  # 1/2 + 5
    assert dx2 == pytest.approx(2 - math.cos(5), rel=1e-15)
    value, _ = adcore.value_and_grad(seed_f, backend="symbolic")(2.0, 5.0)
    assert value == pytest.approx(math.log(2) + 10 - math.sin(5), rel=1e-15)  # 11.652 in seed 004


def logistic(n):
    """l_1 = x, l_{k+1} = 4 l_k (1 - l_k): seed 001's expression swell example."""

    def l_n(x):
        for _ in range(n - 1):
            x = 4 * x * (1 - x)
        return x

    return l_n


def raw_diff_ops(n):
    x = sp.Symbol("x", real=True)
    return sp.count_ops(sp.diff(logistic(n)(x), x))


def test_logistic_map_derivative_grows_linearly_after_cse():
    counts = [derivative_expr(logistic(n), ()).program.count_ops() for n in range(1, 9)]
    # a linear bound, c * n: sympy's own diff-then-cse grows quadratically (123 ops at n = 8);
    # each level is 3 ops of f's own and 4 of the chain rule's (issue 15 class 11: no global cse)
    assert all(count <= 7 * n for n, count in zip(range(1, 9), counts)), counts
    assert counts == sorted(counts) and counts[-1] > counts[0]  # it does grow, with n
    assert raw_diff_ops(8) > 40 * counts[-1]  # the swell the CSE form avoids (5472 ops)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_logistic_map_derivative_is_exact(n):
    d = derivative_expr(logistic(n), ())
    x = sp.Symbol("x", real=True)
    gap = d.derivatives[0] - sp.diff(logistic(n)(x), x)
    # exactly zero at rational points (expanding the degree-2^(n-1) polynomial takes seconds)
    assert all(gap.xreplace({x: sp.Rational(k, 7)}) == 0 for k in range(-3, 9))


def test_logistic_map_gradient_matches_the_forward_recurrence():
    x = np.random.default_rng(0).uniform(0, 1, 10_000)
    v, dv = x, np.ones_like(x)
    for _ in range(7):
        v, dv = 4 * v * (1 - v), 4 * (1 - 2 * v) * dv
    g = adcore.grad(lambda y: anp.sum(logistic(8)(y)), backend="symbolic")(x)
    np.testing.assert_allclose(g, dv, rtol=1e-12, atol=1e-12 * np.abs(dv).max())


def rosenbrock(x):
    return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The analytic Hessian: 1200 x_i^2 - 400 x_{i+1} + 2 (+ 200 below the first), -400 x_i off the diagonal."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def test_rosenbrock_second_derivatives_are_exact():
    x = np.array([1.5, -0.5, 2.0, 0.25, -1.0])  # dyadic: every product above is exact in float64
    h = adcore.hessian(rosenbrock, backend="symbolic")(x)
    np.testing.assert_array_equal(h, rosenbrock_hessian(x))


def test_rosenbrock_hessian_expressions_are_the_analytic_ones():
    gradient = adcore.grad(rosenbrock, backend="symbolic")
    d = derivative_expr(gradient, (3,))
    (h,) = d.derivatives
    x = [sp.Symbol(f"x[{i}]", real=True) for i in range(3)]
    analytic = sp.hessian(sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(2)), x)
    assert sp.simplify(sp.Matrix(h.tolist()) - analytic) == sp.zeros(3, 3)
