"""Step selection: scaled to max(|x|, 1), exactly representable, or the user's own."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_numeric.steps import (
    RICHARDSON_FIRST,
    RICHARDSON_KNEE,
    first_step,
    relative_step,
    representable,
    richardson_levels,
)

from adcore import InvalidInputError

EPS64 = np.finfo(np.float64).eps
X = np.array([0.0, 1e-3, 0.5, 1.0, 3.0, -250.0, 1e8])


@pytest.mark.parametrize(
    "method, relative",
    [
        ("central", EPS64 ** (1 / 3) / 3),
        ("forward", EPS64 ** (1 / 2) / 2),
        ("backward", EPS64 ** (1 / 2) / 2),
        ("richardson", 2.0**-4),
        ("complex", EPS64),
    ],
)
def test_default_steps_are_relative_to_max_abs_x_and_one(method, relative):
    x = X[np.abs(X) <= RICHARDSON_KNEE] if method == "richardson" else X
    h = first_step(x, method)
    np.testing.assert_allclose(
        h, relative * np.maximum(np.abs(x), 1.0), rtol=1e-6 if method != "complex" else 0
    )
    assert relative == relative_step(method, EPS64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_richardson_first_step_grows_with_log_x_beyond_the_knee_and_its_last_level_lands(dtype):
    x = np.array([2.0, 20.0, 1e3, 1e5, 1e15], dtype=dtype)
    h = first_step(x, "richardson")
    scale = RICHARDSON_KNEE * (1 + np.log(x.astype(np.float64) / RICHARDSON_KNEE))  # 2, 6.6, 14.4, 23.6, 70
    assert h[3] < 2  # sin at 1e5 is stepped within a third of its period, not by 6250
    # made representable: within an ulp of x (float32's at 1e5 is 0.008)
    np.testing.assert_allclose(h[:4], RICHARDSON_FIRST * scale[:4], rtol=0, atol=np.spacing(x[3]))
    # at 1e15 the log step would not move x by the end of the halving: the last level lands 4 ulps away
    last = h * 2.0 ** (1 - richardson_levels(float(np.finfo(dtype).eps)))
    assert np.all(last >= 4 * np.spacing(x) * (1 - 1e-6))
    assert h[4] > RICHARDSON_FIRST * scale[4]


@pytest.mark.parametrize("method", ["central", "forward", "backward", "richardson"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_real_steps_are_exactly_representable(method, dtype):
    x = np.random.default_rng(0).uniform(-100, 100, 1000).astype(dtype)
    h = first_step(x, method)
    assert h.dtype == dtype
    assert np.all((x + h) - x == h) and np.all(x - (x - h) == h)


def test_float32_steps_are_larger():
    x = np.array([1.0], dtype=np.float32)
    assert first_step(x, "central")[0] > 100 * first_step(x.astype(np.float64), "central")[0]


def test_a_user_step_per_element():
    h = first_step(np.array([1.0, 2.0, 3.0]), "central", step=[0.5, 0.25, 0.125])
    np.testing.assert_array_equal(h, [0.5, 0.25, 0.125])
    np.testing.assert_array_equal(first_step(np.ones((2, 2)), "forward", step=0.5), np.full((2, 2), 0.5))


@pytest.mark.parametrize("step", [0.0, -1e-3, np.nan, np.inf, "big", [1e-3, 1e-3]])
def test_a_bad_user_step_is_refused(step):
    with pytest.raises(InvalidInputError, match="backend 'numeric'.*step"):
        first_step(np.ones(3), "central", step=step)


def test_a_step_below_the_spacing_of_x_is_refused():
    with pytest.raises(InvalidInputError, match=r"element \(1,\).*below the spacing of float64.*x \+ h == x"):
        first_step(np.array([1.0, 1e10]), "central", step=1e-8)


def test_representable_rounds_the_step_to_where_it_lands():
    x = np.array([1.0 + 2**-52, -3.0 - 2**-50])
    h = representable(x, np.array([0.1, 0.1]))
    assert np.all(h != 0.1) and np.all((x + h) - x == h) and np.all(x - (x - h) == h)


def test_richardson_tries_steps_down_to_about_the_central_step():
    for dtype, levels in [(np.float64, 15), (np.float32, 5)]:
        eps = np.finfo(dtype).eps
        assert richardson_levels(eps) == levels
        smallest = RICHARDSON_FIRST * 2.0 ** -(levels - 1)
        assert eps ** (1 / 3) / 2 <= smallest <= eps ** (1 / 3)
