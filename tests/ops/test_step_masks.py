"""Steps select, they do not multiply (issue 32, class 6).

A step's derivative is 0 where the op ignores an input (relu below 0, clip outside its bounds,
maximum's loser, nan_to_num at a nan or inf, a max reduction's non-maxima, the where= of a sum,
the NaNs nansum skips). There the chain rule's zero factor wins: an inf or nan tangent or
cotangent met there (log at 0, a nan constant) gives 0, not 0 * inf = nan, on every backend,
as `jax.jacfwd` and `jax.grad` have it (JAX selects). The oracle is the analytic derivative.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

C = np.array([np.nan, 1.0, 1.0])  # a nan constant: x * C is nan at 0 whatever x is
AT_ZERO = np.array([0.0, 2.0])  # log(0) = -inf: the step ignores it; log'(2) = 0.5
LOG_SLOPE = np.array([0.0, 0.5])

# name: (f, x, the right gradient)
CASES = {
    "relu": (lambda x: np.sum(adcore.ops.relu(np.log(x))), AT_ZERO, LOG_SLOPE),
    "maximum": (lambda x: np.sum(np.maximum(np.log(x), 0.0)), AT_ZERO, LOG_SLOPE),
    "minimum": (lambda x: np.sum(np.minimum(-np.log(x), 0.0)), AT_ZERO, -LOG_SLOPE),
    "clip": (lambda x: np.sum(np.clip(np.log(x), -1.0, 1.0)), AT_ZERO, LOG_SLOPE),
    "fmax": (lambda x: np.sum(np.fmax(np.log(x), 0.0)), AT_ZERO, LOG_SLOPE),
    "fmin": (lambda x: np.sum(np.fmin(-np.log(x), 0.0)), AT_ZERO, -LOG_SLOPE),
    "max": (lambda x: np.max(np.log(x)), AT_ZERO, LOG_SLOPE),
    "min": (lambda x: np.min(-np.log(x)), AT_ZERO, -LOG_SLOPE),
    # cbrt'(0) = inf at the middle element, which ptp ignores; cbrt'(+-1) = 1/3
    "ptp": (lambda x: np.ptp(np.cbrt(x - 1.0)), np.array([0.0, 1.0, 2.0]), [-1 / 3, 0.0, 1 / 3]),
    "sum_where": (lambda x: np.sum(np.log(x), where=np.array([False, True])), AT_ZERO, LOG_SLOPE),
    "mean_where": (lambda x: np.mean(np.log(x), where=np.array([False, True])), AT_ZERO, LOG_SLOPE),
    "heaviside_h": (lambda h: np.sum(np.heaviside(np.array([1.0, 0.0]), np.log(h))), AT_ZERO, LOG_SLOPE),
    "abs_at_0": (lambda x: np.sum(np.abs(np.sqrt(x))), np.array([0.0, 4.0]), [0.0, 0.25]),  # abs'(0) = 0
    "fabs_at_0": (lambda x: np.sum(np.fabs(np.sqrt(x))), np.array([0.0, 4.0]), [0.0, 0.25]),
    "nan_to_num": (lambda x: np.sum(np.nan_to_num(x * C)), np.array([1.0, 1.0, 2.0]), [0.0, 1.0, 1.0]),
    "nansum": (lambda x: np.nansum(x * C), np.array([1.0, 1.0, 2.0]), [0.0, 1.0, 1.0]),
    "nanmean": (lambda x: np.nanmean(x * C), np.array([1.0, 1.0, 2.0]), [0.0, 0.5, 0.5]),
    "median": (lambda x: np.median(np.log(x)), np.array([0.0, 2.0, 3.0]), [0.0, 0.5, 0.0]),
}
HAS_NAN_CONSTANT = {"nan_to_num", "nansum", "nanmean"}


def _grad(f, x, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0), nan * x: in the values, on purpose
        return adcore.grad(f, backend=backend)(x)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_step_s_zero_wins_over_an_inf_or_nan(name, backend):
    f, x, want = CASES[name]
    np.testing.assert_array_equal(_grad(f, x, backend), want)


@pytest.mark.parametrize("name", sorted(set(CASES) - HAS_NAN_CONSTANT))
def test_a_step_s_zero_wins_on_symbolic(name):
    f, x, want = CASES[name]
    np.testing.assert_allclose(_grad(f, x, "symbolic"), want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", sorted(HAS_NAN_CONSTANT))
def test_symbolic_refuses_a_nan_constant_and_the_next_call_works(name):
    f, x, _ = CASES[name]
    with pytest.raises(AdcoreError, match="NaN"):
        _grad(f, x, "symbolic")
    np.testing.assert_array_equal(_grad(lambda x: np.sum(np.nan_to_num(x) * 3.0), x, "symbolic"), [3.0] * 3)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_nan_to_num_at_a_nan_or_inf_input_has_derivative_0(backend):
    """NumPy replaces a nan or inf by a constant, so its entry's derivative is 0 (JAX: 0 too);
    the finite entries pass through with 1."""
    x = np.array([np.nan, 1.0, 2.0, np.inf, -np.inf])
    jac = adcore.jacobian(np.nan_to_num, backend=backend)(x)
    np.testing.assert_array_equal(jac, np.diag([0.0, 1.0, 1.0, 0.0, 0.0]))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_the_issue_s_nan_constant_example(backend):
    """d/dx sum(nan_to_num(x * [nan, 1, 1])): was [nan, nan, nan] on forward; jax.jacfwd: [0, 1, 1]."""
    jac = adcore.jacobian(lambda x: np.nan_to_num(x * C), backend=backend)(np.array([1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(jac, np.diag([0.0, 1.0, 1.0]))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_step_still_passes_an_inf_it_takes(backend):
    """select, not silence: where the step's derivative is 1, an infinite slope stays infinite."""
    assert _grad(lambda x: np.maximum(x * np.inf, -5.0), 1.0, backend) == np.inf


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_ties_still_split_after_the_select(backend):
    got = _grad(lambda x: np.sum(np.maximum(x, np.array([1.0, 0.0]))), np.array([1.0, 3.0]), backend)
    np.testing.assert_array_equal(got, [0.5, 1.0])


def test_a_second_derivative_through_a_step_is_right():
    """forward-over-reverse through relu and clip: the selects are themselves differentiated."""

    def f(x):
        return np.sum(adcore.ops.relu(x) ** 3 + np.clip(x, -1.0, 1.0) ** 2)

    x = np.array([-2.0, 0.5, 3.0])
    h = adcore.hessian(f)(x)
    # relu(x)^3'' = 6 x for x > 0; clip(x)^2'' = 2 inside (-1, 1)
    np.testing.assert_allclose(h, np.diag([0.0, 6 * 0.5 + 2.0, 18.0]), rtol=1e-14)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", ["solve_triangular", "cho_solve"])
def test_the_triangle_a_solve_does_not_read_gets_0_even_next_to_a_nan(name, backend):
    """a * c with a nan in c's upper triangle: the lower-triangular solves never read it, so d/da
    there is 0 (it was nan on reverse: 0 * nan from the multiply below a dense zero)."""
    import adcore.numpy as anp

    c = np.array([[1.0, np.nan], [1.0, 1.0]])
    b = np.array([1.0, 2.0])
    solve = getattr(anp, name)
    a = np.array([[2.0, 5.0], [1.0, 4.0]])
    got = _grad(lambda a: np.sum(solve(a * c, b, lower=True)), a, backend)
    lower = np.array([[2.0, 0.0], [1.0, 4.0]])
    if name == "solve_triangular":  # x = L^-1 b: d sum(x) / dL = -(L^-T 1) x^T, lower part
        x = np.linalg.solve(lower, b)
        want = np.tril(-np.outer(np.linalg.solve(lower.T, np.ones(2)), x))
    else:  # by central differences of the lower entries (the solve is smooth there)
        want = np.zeros((2, 2))
        for i, j in [(0, 0), (1, 0), (1, 1)]:
            e = np.zeros((2, 2))
            e[i, j] = 1e-6
            f = lambda m: np.sum(np.linalg.solve(m @ m.T, b))  # noqa: E731
            want[i, j] = (f(lower + e) - f(lower - e)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    assert got[0, 1] == 0.0
