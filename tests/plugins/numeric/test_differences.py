"""Difference quotients and Richardson extrapolation on known values."""

from __future__ import annotations

import numpy as np
from adcore_numeric.differences import TRUNCATION_SAFETY, Extrapolation, quotient, second_step_error

EPS = np.finfo(np.float64).eps


def central_levels(f, x, steps):
    """Quotient inputs for central differences of f at x: values (levels, 1, 2, 1), h (levels, 1, 1)."""
    h = np.array(steps)[:, None, None]
    with np.errstate(all="ignore"):  # log below zero: nan, as the backend sees it
        values = np.stack([[[[f(x + s)], [f(x - s)]]] for s in steps])
    return values, h


def extrapolate(d, noise, h):
    table = Extrapolation()
    for level in zip(d, noise, h):
        table.add(*level)
    return table


def test_quotients():
    values = np.array([[[3.0], [1.0]]])  # f(x + h) = 3, f(x - h) = 1
    h, size = np.array([[0.5]]), np.array([[0.0]])
    d, noise = quotient("central", values, h, None, EPS, size)
    assert d[0, 0] == 2.0 and noise[0, 0] == 2 * EPS * 4 / 1.0
    d, _ = quotient("forward", values[:, :1], h, np.array([2.0]), EPS, size)
    assert d[0, 0] == 2.0
    d, _ = quotient("backward", values[:, 1:], h, np.array([2.0]), EPS, size)
    assert d[0, 0] == 2.0
    d, noise = quotient("complex", np.array([[[1.0 + 0.25j]]]), h, None, EPS, size)
    assert d[0, 0] == 0.5 and noise[0, 0] < 1e-15


def test_extrapolation_is_exact_on_an_even_polynomial_in_h():
    # a quartic: the central quotient is f'(x) + c·h², so one extrapolation is exact
    f = lambda t: t**4 - 2 * t**3 + t  # noqa: E731
    x = 0.75
    values, h = central_levels(f, x, [0.5, 0.25, 0.125])
    d, noise = quotient("richardson", values, h, None, EPS, np.array([[x]]))
    table = extrapolate(d, noise, h)
    exact = 4 * x**3 - 6 * x**2 + 1
    assert abs(table.value[0, 0] - exact) <= 1e-14
    assert abs(table.value[0, 0] - exact) <= table.error[0, 0] <= 1e-13
    assert table.converged()[0, 0]


def test_extrapolation_with_steps_in_no_exact_ratio():
    f = np.sin
    x = 0.3
    values, h = central_levels(f, x, [0.2, 0.13, 0.07, 0.04])
    d, noise = quotient("richardson", values, h, None, EPS, np.array([[x]]))
    table = extrapolate(d, noise, h)
    assert abs(table.value[0, 0] - np.cos(x)) <= table.error[0, 0] <= 1e-8


def test_levels_where_f_was_not_finite_give_no_candidates():
    x = 0.05
    values, h = central_levels(np.log, x, [0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125])
    d, noise = quotient("richardson", values, h, None, EPS, np.array([[x]]))
    table = extrapolate(d, noise, h)
    assert np.isfinite(table.value[0, 0]) and table.newest[0, 0] >= 3
    assert abs(table.value[0, 0] - 1 / x) <= table.error[0, 0]


def test_nothing_finite_gives_an_infinite_error():
    d = np.full((3, 1, 1), np.nan)
    table = extrapolate(d, np.zeros_like(d), np.array([0.4, 0.2, 0.1])[:, None, None])
    assert table.error[0, 0] == np.inf and not table.converged()[0, 0]


def test_second_step_error_is_the_richardson_correction_times_its_safety():
    # d(h) = 1 + h²: the error of d(h) is h², found from d at 2h, then widened by
    # TRUNCATION_SAFETY for the terms beyond h² that two steps cannot see
    h, h2 = np.array([0.1]), np.array([0.2])
    error = second_step_error("central", 1 + h**2, np.zeros(1), 1 + h2**2, h, h2)
    np.testing.assert_allclose(error, TRUNCATION_SAFETY * h**2, rtol=1e-12)
    error = second_step_error("forward", 1 + h, np.zeros(1), 1 + h2, h, h2)
    np.testing.assert_allclose(error, TRUNCATION_SAFETY * h, rtol=1e-12)


def test_second_step_error_bounds_a_step_beyond_the_h_squared_regime():
    # float32 softmax at 1e3 is stepped by 1.6: p(t) = e^t / (e^t + 2) at t = 0, p'(0) = 2/9
    p = lambda t: np.exp(t) / (np.exp(t) + 2)  # noqa: E731
    h, h2 = np.array([1.6]), np.array([3.2])
    d, d2 = (p(h) - p(-h)) / (2 * h), (p(h2) - p(-h2)) / (2 * h2)
    assert abs(d - 2 / 9) <= second_step_error("central", d, np.zeros(1), d2, h, h2)
