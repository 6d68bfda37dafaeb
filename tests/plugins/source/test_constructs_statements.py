"""Issue 35 item 3, straight-line Python through the source backend (both modes): assignments,
augmented assignments, if/elif/else on values, early return, constants and globals. Each against
the reverse tape and the numeric oracle, with a second derivative, in float64 and float32."""

from __future__ import annotations

import math

import numpy as np
import pytest
from source_checks import DTYPES, MODES, ORDERS, cast, check_gradient, check_second_derivative

import adcore

X = np.array([0.3, -1.2, 0.8, 1.7])


def damped_energy(x, a):
    v = np.sin(x) * a
    kinetic = 0.5 * v * v
    potential = a * x * x
    energy = kinetic + potential
    return np.sum(energy)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_assignments(dtype, mode, order):
    args = cast(dtype, X, 0.7)
    if order == "first":
        check_gradient(damped_energy, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(damped_energy, *args, mode=mode)


def accumulated(x, a):
    total = 0.0
    total += np.sum(np.sin(x))
    total *= a
    y = x * 2.0
    y += a * x  # on an array NumPy adds into y's own buffer: y's new value, x untouched
    y -= np.cos(x)
    y /= 3.0
    y **= 2
    total -= np.sum(y)
    return total


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_augmented_assignments(dtype, mode, order):
    args = cast(dtype, X, 0.7)
    if order == "first":
        check_gradient(accumulated, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(accumulated, *args, mode=mode)


def smooth_penalty(x, delta):
    r = np.sum(x * x)
    if r > 4.0:
        loss = 2.0 * np.sqrt(r) * delta
    elif r > 1.0:
        loss = r * delta + np.sin(r)
    else:
        loss = 0.5 * r
    return loss


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x", [[0.3, 0.4], [0.8, 0.9], [1.5, 2.0]], ids=["else", "elif", "if"])
def test_if_elif_else_on_values(dtype, x, mode, order):
    args = cast(dtype, np.array(x), 1.3)
    if order == "first":
        check_gradient(smooth_penalty, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(smooth_penalty, *args, mode=mode)


def log_barrier(x):
    if np.min(x) <= 0.0:
        return 100.0 * np.sum(x * x)
    s = np.sum(np.log(x))
    if s > 1.0:
        return s
    return s * s + np.sum(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "x", [[0.5, -0.1, 2.0], [3.0, 2.0, 1.5], [0.5, 1.2, 0.9]], ids=["first", "second", "last"]
)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
def test_early_return(dtype, x, mode, order):
    (x,) = cast(dtype, np.array(x))
    if order == "first":
        check_gradient(log_barrier, x, mode=mode)
    else:
        check_second_derivative(log_barrier, x, mode=mode)


def bounded(x):
    # a comparison chain and boolean operators: lowered to single compares and ifs
    s = np.sum(x)
    if 0.0 < s < 1.0 and not np.max(x) > 0.9:
        y = np.sin(s)
    elif s >= 1.0 or np.min(x) < -2.0:
        y = s * s
    else:
        y = -s
    return y


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x", [[0.2, 0.3], [1.0, 0.5], [-0.5, 0.1]], ids=["chain", "or", "else"])
def test_comparison_chains_and_boolean_operators(dtype, x, mode, order):
    (x,) = cast(dtype, np.array(x))
    if order == "first":
        check_gradient(bounded, x, mode=mode)
    else:
        check_second_derivative(bounded, x, mode=mode)


GAIN = 1.5
OFFSETS = np.array([0.1, -0.2, 0.3, 0.05])


def calibrated(x, scale=2.0):
    shifted = x - OFFSETS.astype(x.dtype)
    phase = math.pi * shifted / scale + np.pi / 4
    return GAIN * np.sum(np.cos(phase) * shifted)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_constants_globals_and_defaults(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(calibrated, x, mode=mode)
        check_gradient(calibrated, x, 3.0, mode=mode)
    else:
        check_second_derivative(calibrated, x, mode=mode)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_global_rebound_between_calls_is_read_again(monkeypatch, mode):
    grad = adcore.grad(calibrated, backend="source", mode=mode)
    before = grad(X)
    monkeypatch.setitem(globals(), "GAIN", 3.0)
    np.testing.assert_allclose(grad(X), 2.0 * before, rtol=1e-12)
    np.testing.assert_allclose(grad(X), adcore.grad(calibrated)(X), rtol=1e-12)
