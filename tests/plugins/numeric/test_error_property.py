"""Property: on random smooth functions at random points, the numeric backend's claimed error
bounds its true error (against the derivative mpmath computes at 50 digits), for every
real method, or it refuses with UnreliableEstimateError (f oscillating faster than the step,
as sin(x²) at x = 400 does: about 4 in 150 draws); and the complex step's check never refuses
an analytic function."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import adcore
import adcore.numpy as anp
from adcore.errors import UnreliableEstimateError

EPS = np.finfo(np.float64).eps

# Smooth pieces, each finite on the whole line (exp only of a bounded argument).
PIECES = {
    "sin": anp.sin,
    "cos": anp.cos,
    "tanh": anp.tanh,
    "square": lambda x: x * x,
    "cube": lambda x: x * x * x,
    "exp_tanh": lambda x: anp.exp(anp.tanh(x)),
    "bump": lambda x: 1 / (1 + x * x),
}


def compose(names, a, b, c):
    """c · pieces[names[-1]](... pieces[names[0]](a·x + b))."""

    def f(x):
        y = a * x + b
        for name in names:
            y = PIECES[name](y)
        return c * y

    return f


# The same pieces at 50 digits: the truth. (The forward backend is no oracle at this precision:
# its tanh rule 1 - tanh(x)^2 cancels near |x| = 8, 4e-15 off through exp(tanh(cube)).)
MP_PIECES = {
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tanh": mpmath.tanh,
    "square": lambda x: x * x,
    "cube": lambda x: x * x * x,
    "exp_tanh": lambda x: mpmath.exp(mpmath.tanh(x)),
    "bump": lambda x: 1 / (1 + x * x),
}


def true_derivative(names, a, b, c, x) -> float:
    """d/dx of compose(names, a, b, c) at x, exactly (to 50 digits) for the float64 a, b, c, x."""

    def f(t):
        y = mpmath.mpf(a) * t + mpmath.mpf(b)
        for name in names:
            y = MP_PIECES[name](y)
        return mpmath.mpf(c) * y

    with mpmath.workdps(50):
        return float(mpmath.diff(f, mpmath.mpf(x)))


functions = st.tuples(
    st.lists(st.sampled_from(sorted(PIECES)), min_size=1, max_size=3),
    st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3),
    st.floats(-2, 2),
    st.floats(1e-3, 1e3),
)
points = st.one_of(st.floats(-10, 10), st.floats(1e2, 1e4), st.floats(-1e4, -1e2))


@settings(max_examples=60, deadline=None)
@given(functions, points, st.sampled_from(["central", "forward", "backward", "richardson"]))
# f turns over many times within the step: refused since the unresolved check pools its orders (the
# smallest alone was 0.007 of the values' size by chance: 9.46 ± 54 for -5.2e8) and reads the scatter
# against the values' spread too (bump's values lie in [0.5, 1]: less than 5% of their size)
@example(function=(["cube", "sin"], 1.9, 0.0, 1.0), x=5641.08705283869, method="central")
@example(
    function=(["cube", "cos", "bump"], 0.5, 0.0, 1.0), x=9999.0, method="central"
)  # -4.08 ± 14 for -8.4e6
# Richardson's deepest candidates reached back to steps beyond f's Taylor radius and agreed with
# each other (8e-12 apart) while 1.2e-10 off: the table is now at most MAX_EXTRAPOLATIONS deep
@example(function=(["square", "cos", "cos"], 1.25, 2.0, 1.0), x=6.0, method="richardson")
# seven probe values of f lay on a cubic by chance, so f passed as resolved: 45.6 ± 82 for -56823
@example(function=(["square", "cos"], 1.9743518989559385, 0.0, 1.0), x=-7984.0, method="central")
def test_the_claimed_error_bounds_the_true_error(function, x, method):
    f = compose(*function)
    try:
        d, error = adcore.differentiate(f, backend="numeric", method=method, return_error=True)(x)
    except UnreliableEstimateError as e:
        assert "step" in str(e)  # refused, and says what to do
        return
    assert_within(d, error, function, x)


def assert_within(d: float, error: float, function: tuple, x: float) -> None:
    """The estimate is within its bar of the derivative: the exact one (mpmath) or the one of f's
    float64 evaluation (forward mode, in the same arithmetic; cos((1.28x)^3) at 4 rounds its phase
    by 8e-13 of the exact derivative), with a slack for f's rounding of a*x + b, amplified by |x|."""
    exact = true_derivative(*function, x)
    computed = adcore.differentiate(compose(*function), backend="forward")(x)
    slack = 8 * EPS * (1 + abs(function[1] * x)) * (abs(exact) + abs(function[3]))
    misses = [abs(d - truth) - (error + slack) for truth in (exact, computed)]
    assert min(misses) <= 0, (function, x, d, exact, computed, error)


@settings(max_examples=30, deadline=None)
@given(functions, st.floats(-10, 10))
@example(function=(["cube", "exp_tanh"], 1.0, 1.0, 1.0), x=1.0)  # where forward's tanh rule is 4e-15 off
@example(function=(["cube", "cube", "cos"], 1.0, 1.0, 1.0), x=3.0)  # unresolved: refused
def test_the_complex_step_check_accepts_analytic_functions(function, x):
    f = compose(*function)
    try:
        d, error = adcore.differentiate(f, backend="numeric", method="complex", return_error=True)(x)
    except UnreliableEstimateError:
        # refused only where the check's central difference cannot follow f either (cos((x+1)^9)
        # at 3 turns over within the step): there is nothing to verify the complex step against
        with pytest.raises(UnreliableEstimateError, match="faster than the step"):
            adcore.differentiate(f, backend="numeric", method="central", return_error=True)(x)
        return
    assert_within(d, error, function, x)
