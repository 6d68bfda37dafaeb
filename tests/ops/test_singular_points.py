"""Derivatives at points where a rule divides by the input (issue 15, class 4).

Where the limit exists the rules give it exactly, on every backend and to second order:
x**0 and x**1 at 0 (their rules are 0 * inf), d/dy x**y at x = 0 < y (0 * log 0), prod with
two zeros in a slice (its rule divides by the input). Where no derivative exists (sqrt, log
and x**0.5 at 0, d/dy x**y for x < 0) the result is NumPy's value of the formula, inf or nan,
never a number made up. The analytic values are worked out in each test's comment.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

RULE_BACKENDS = ["reverse", "forward", "symbolic"]
ALL_BACKENDS = [*RULE_BACKENDS, "numeric"]
# (inner, outer) pairs for second derivatives: every rule backend under every other
COMBOS = list(itertools.product(RULE_BACKENDS, RULE_BACKENDS))
# symbolic traces without numbers, so it cannot be the outer derivative of a rule that reads its
# inputs' values (where x is 0): those pairs refuse with a typed error (tested below)
READING_COMBOS = [(inner, outer) for inner, outer in COMBOS if outer != "symbolic" or inner == "symbolic"]
COEFFICIENTS = np.array([1.0, 2.0, 3.0, 4.0])


def polynomial(x):
    """sum_k c[k] x**k, c = (1, 2, 3, 4): f'(0) = c[1] = 2, f''(0) = 2 c[2] = 6."""
    return anp.sum(COEFFICIENTS * x ** np.arange(4.0))


def hessian_2x2(f, x, y, inner, outer):
    """The Hessian of f(x, y) as a 2x2 array."""
    rows = adcore.hessian(f, argnums=(0, 1), inner=inner, outer=outer)(x, y)
    return np.array([[float(h) for h in row] for row in rows])


@pytest.fixture(autouse=True)
def quiet():
    # NumPy warns where it evaluates a branch np.where then drops; the values are what is tested
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# --- the examples, on every backend ------------------------------------------------------


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_x_to_the_zero_has_derivative_zero_at_zero(backend):
    # x**0.0 is the constant 1: its rule y x**(y-1) would be 0 * inf = nan at x = 0
    assert adcore.grad(lambda x: x**0.0, backend=backend)(0.0) == 0.0
    assert adcore.grad(lambda x: x**0.0, backend=backend)(2.0) == 0.0


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_a_polynomial_has_derivative_c1_at_zero(backend):
    assert adcore.grad(polynomial, backend=backend)(0.0) == pytest.approx(COEFFICIENTS[1], abs=1e-8)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_power_in_its_exponent_at_zero_base(backend):
    # 0**y = 0 for every y > 0, so d/dy = 0 there; sympy's x**y log x is 0 * -inf = nan
    assert adcore.grad(lambda x, y: x**y, argnums=1, backend=backend)(0.0, 2.0) == 0.0
    assert adcore.grad(lambda x, y: x**y, argnums=1, backend=backend)(0.0, 0.5) == 0.0


# --- power at x = 0, first and second order ------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(
    "k, slope",
    # d/dx x**k at 0: 0 for k = 0 (a constant), 1 for k = 1, 0 for k > 1 (also k = 2.5, one-sided)
    [(0.0, 0.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0), (2.5, 0.0)],
)
def test_power_of_a_constant_exponent_at_zero(backend, k, slope):
    assert adcore.grad(lambda x: x**k, backend=backend)(0.0) == slope
    as_float32 = adcore.grad(lambda x: x**k, backend=backend)(np.float32(0.0))
    assert as_float32 == slope and as_float32.dtype == np.float32


@pytest.mark.parametrize("inner, outer", COMBOS)
def test_second_derivatives_of_integer_powers_at_zero(inner, outer):
    # (x**k)'' = k (k-1) x**(k-2): at 0 that is 0, 0, 2, 0, 0 for k = 0..4
    for k, expected in zip(range(5), [0.0, 0.0, 2.0, 0.0, 0.0]):
        h = adcore.hessian(lambda x, k=float(k): x**k, inner=inner, outer=outer)(0.0)
        assert h == expected, (k, h)
    assert adcore.hessian(polynomial, inner=inner, outer=outer)(0.0) == 2 * COEFFICIENTS[2]


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_third_derivative_of_a_cube_at_zero(backend):
    # (x**3)''' = 6, through x**3 -> 3 x**2 -> 6 x**1 -> 6 x**0: each step a power rule at 0
    third = adcore.grad(
        adcore.grad(adcore.grad(lambda x: x**3.0, backend=backend), backend=backend), backend=backend
    )
    assert third(0.0) == 6.0
    fourth = adcore.grad(third, backend=backend)
    assert fourth(0.0) == 0.0


@pytest.mark.parametrize("inner, outer", READING_COMBOS)
@pytest.mark.parametrize(
    "x, y, expected",
    [
        # f = x**y. f_xx = y(y-1) x**(y-2), f_xy = x**(y-1) (1 + y log x), f_yy = x**y log(x)**2
        (0.0, 2.0, [[2.0, 0.0], [0.0, 0.0]]),  # f_xy = x (1 + 2 log x) -> 0, f_yy = x**2 log(x)**2 -> 0
        (0.0, 3.0, [[0.0, 0.0], [0.0, 0.0]]),
        (2.0, 0.0, [[0.0, 0.5], [0.5, math.log(2.0) ** 2]]),  # y = 0 with x != 0: f_xy = 1/x
        (1.5, 1.0, [[0.0, 1 + math.log(1.5)], [1 + math.log(1.5), 1.5 * math.log(1.5) ** 2]]),
    ],
)
def test_second_derivatives_of_power_in_both_arguments(inner, outer, x, y, expected):
    h = hessian_2x2(lambda a, b: a**b, x, y, inner, outer)
    np.testing.assert_allclose(h, expected, rtol=1e-12, atol=0)


# --- prod with zeros ------------------------------------------------------------------------


@pytest.mark.parametrize("inner, outer", READING_COMBOS)
def test_prod_second_derivatives_with_two_zeros(inner, outer):
    # d2 prod(x) / dx_i dx_j = the product of the elements other than i and j: with x = (0, 0, 3)
    # that is 3 for (0, 1) and 0 elsewhere (each other pair keeps a zero); every first derivative is 0
    x = np.array([0.0, 0.0, 3.0])
    h = adcore.hessian(anp.prod, inner=inner, outer=outer)(x)
    np.testing.assert_array_equal(h, [[0.0, 3.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(adcore.grad(anp.prod, backend=inner)(x), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("inner", ["reverse", "forward"])
def test_prod_and_power_third_derivatives_agree_with_symbolic(inner):
    # prod(x) over a slice with three zeros: d3 / dx0 dx1 dx2 = x3 = 2, every lower derivative 0
    x = np.array([0.0, 0.0, 0.0, 2.0])
    third = adcore.jacobian(adcore.hessian(anp.prod, inner=inner, outer=inner), backend=inner)(x)
    expected = adcore.jacobian(adcore.hessian(anp.prod, backend="symbolic"), backend="symbolic")(x)
    assert third[0, 1, 2] == 2.0
    np.testing.assert_array_equal(third, expected)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_prod_with_zeros_along_any_axis_agrees_with_symbolic(axis, backend):
    x = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]])
    f = lambda x: anp.sum(anp.prod(x, axis=axis))  # noqa: E731
    np.testing.assert_array_equal(
        adcore.hessian(f, inner=backend, outer=backend)(x), adcore.hessian(f, backend="symbolic")(x)
    )


@pytest.mark.parametrize("inner", ["reverse", "forward"])
def test_symbolic_over_a_rule_that_reads_values_refuses_and_recovers(inner):
    with pytest.raises(adcore.AdcoreError, match="symbolic"):
        adcore.hessian(anp.prod, inner=inner, outer="symbolic")(np.array([0.0, 0.0, 3.0]))
    assert adcore.hessian(lambda x: x**2.0, inner=inner, outer="symbolic")(0.0) == 2.0


# --- where no derivative exists: NumPy's value of the formula, not a number made up ------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_no_derivative_at_the_boundary_gives_inf(backend):
    # sqrt, log and x**0.5 have infinite slope at 0 (one-sided): 0.5/sqrt(0), 1/0, 0.5 * 0**-0.5
    assert adcore.grad(anp.sqrt, backend=backend)(0.0) == np.inf
    assert adcore.grad(anp.log, backend=backend)(0.0) == np.inf
    assert adcore.grad(lambda x: x**0.5, backend=backend)(0.0) == np.inf


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_power_has_no_derivative_in_its_exponent_where_its_base_is_negative(backend):
    # (-2)**y is real only at integer y: nan (it used to be a plausible 0 on reverse and forward)
    assert np.isnan(adcore.grad(lambda x, y: x**y, argnums=1, backend=backend)(-2.0, 2.0))
    # 0**y jumps at y = 0 (1 there, 0 above, inf below): -inf, as 0**0 * log(0)
    assert adcore.grad(lambda x, y: x**y, argnums=1, backend=backend)(0.0, 0.0) == -np.inf
    # and the partial in x still exists there, on its own
    assert adcore.grad(lambda x, y: x**y, argnums=0, backend=backend)(-2.0, 2.0) == -4.0
