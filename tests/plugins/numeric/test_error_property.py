"""Property: on random smooth functions at random points, the numeric backend's claimed error
bounds its true error (against the forward backend's exact-to-rounding derivative), for every
real method, or it refuses with UnreliableEstimateError (f oscillating faster than the step,
as sin(x²) at x = 400 does: about 4 in 150 draws); and the complex step's check never refuses
an analytic function."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
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


functions = st.tuples(
    st.lists(st.sampled_from(sorted(PIECES)), min_size=1, max_size=3),
    st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3),
    st.floats(-2, 2),
    st.floats(1e-3, 1e3),
)
points = st.one_of(st.floats(-10, 10), st.floats(1e2, 1e4), st.floats(-1e4, -1e2))


@settings(max_examples=60, deadline=None)
@given(functions, points, st.sampled_from(["central", "forward", "backward", "richardson"]))
def test_the_claimed_error_bounds_the_true_error(function, x, method):
    f = compose(*function)
    try:
        d, error = adcore.differentiate(f, backend="numeric", method=method, return_error=True)(x)
    except UnreliableEstimateError as e:
        assert "step" in str(e)  # refused, and says what to do
        return
    truth = adcore.differentiate(f, backend="forward")(x)
    # the forward derivative itself carries a few roundings, amplified by |x| inside f
    slack = 8 * EPS * (1 + abs(function[1] * x)) * (abs(truth) + abs(function[3]))
    assert abs(d - truth) <= error + slack, (function, x, method, d, truth, error)


@settings(max_examples=30, deadline=None)
@given(functions, st.floats(-10, 10))
def test_the_complex_step_check_accepts_analytic_functions(function, x):
    f = compose(*function)
    d, error = adcore.differentiate(f, backend="numeric", method="complex", return_error=True)(x)
    truth = adcore.differentiate(f, backend="forward")(x)
    slack = 8 * EPS * (1 + abs(function[1] * x)) * (abs(truth) + abs(function[3]))
    assert abs(d - truth) <= error + slack
