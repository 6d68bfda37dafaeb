"""Issue 35 item 3, loops through the source backend (both modes): for over range, for over arrays
(rows of a constant, elements of an active one), while on a value, break and continue. Each
against the reverse tape and the numeric oracle, with a second derivative, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest
from source_checks import DTYPES, MODES, ORDERS, cast, check_gradient, check_second_derivative

COEFFS = np.array([0.5, -1.0, 2.0, 0.25, 1.5])
ROWS = np.array([[0.2, -0.4, 0.1], [1.0, 0.3, -0.7], [-0.5, 0.8, 0.6], [0.1, 0.1, -0.2]])
W = np.array([0.7, -0.3, 1.1])


def horner(coeffs, x):
    acc = 0.0
    for i in range(len(coeffs)):
        acc = acc * x + coeffs[i]
    return acc


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_for_over_range(dtype, mode, order):
    args = cast(dtype, COEFFS, 0.9)
    if order == "first":
        check_gradient(horner, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(horner, *args, argnums=1, mode=mode)


def recurrent_readout(w, xs):
    h = 0.0
    for row in xs:
        h = np.tanh(row @ w + 0.5 * h)
    return h


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_for_over_the_rows_of_an_array(dtype, mode, order):
    args = cast(dtype, W, ROWS)
    if order == "first":
        check_gradient(recurrent_readout, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(recurrent_readout, *args, mode=mode)


def weighted_walk(x, step):
    position = 0.0
    for i, v in enumerate(x):
        position = position + np.sin(v) * step**i
    for a, b in zip(x[:-1], x[1:]):
        position = position + a * b
    return position


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_for_over_an_active_array_with_enumerate_and_zip(dtype, mode, order):
    args = cast(dtype, np.array([0.4, -0.9, 1.3, 0.2]), 0.8)
    if order == "first":
        check_gradient(weighted_walk, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(weighted_walk, *args, mode=mode)


def compound(x, rate):
    balance = x
    years = 0
    while balance < 10.0 and years < 100:
        balance = balance * (1.0 + rate) + 0.1 * np.sin(balance)
        years += 1
    return balance * years


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x", [1.0, 0.7])
def test_while_on_a_value(dtype, x, mode, order):
    # the trip count depends on x and rate (7 and 8 years here), constant near each point: the
    # balance stays over 1 away from 10 before and after the last year, beyond the numeric steps
    args = cast(dtype, x, 0.4)
    if order == "first":
        check_gradient(compound, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(compound, *args, mode=mode)


def truncated_series(x):
    total = 0.0
    term = 1.0
    for n in range(1, 30):
        term = term * x / n
        if n % 3 == 0:
            continue
        total = total + term
        if np.abs(term) < 1e-3:
            break
    return total


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x", [0.8, 1.3])
def test_break_and_continue(dtype, x, mode, order):
    (x,) = cast(dtype, x)
    if order == "first":
        check_gradient(truncated_series, x, mode=mode)
    else:
        check_second_derivative(truncated_series, x, mode=mode)


def relax(x):
    # nested loops; the inner while breaks out on a value, the outer for continues on an index
    y = x * 1.0
    for sweep in range(4):
        if sweep == 2:
            continue
        k = 0
        while True:
            y = 0.5 * (y + np.cos(y))
            k += 1
            if k >= 3 or np.max(np.abs(y)) < 0.01:
                break
    return np.sum(y * x)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_loops_with_while_true_and_break(dtype, mode, order):
    (x,) = cast(dtype, np.array([0.3, -0.6, 1.1]))
    if order == "first":
        check_gradient(relax, x, mode=mode)
    else:
        check_second_derivative(relax, x, mode=mode)
