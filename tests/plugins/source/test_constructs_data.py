"""Issue 35 item 3, data through the source backend (both modes): comprehensions, tuples, lists and
dicts of values, subscript reads, in-place subscript writes (x[i] = v, x[i] += v), np.array of
active values, NumPy methods and attributes. Each against the numeric oracle and, where it takes the
function, the reverse tape; the in-place and list-to-array functions assert the tape's refusal (the
reason for this backend). Second derivatives, float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest
from source_checks import DTYPES, MODES, ORDERS, cast, check_gradient, check_second_derivative

X = np.array([0.4, -1.1, 0.9, 0.25])


def comprehension_loss(x, a):
    terms = [np.sin(v) * a for v in x]
    squares = {i: x[i] ** 2 for i in range(len(x))}
    evens = [squares[i] for i in range(len(x)) if i % 2 == 0]
    total = 0.0
    for t in terms + evens:
        total = total + t
    return total


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_list_and_dict_comprehensions(dtype, mode, order):
    args = cast(dtype, X, 0.8)
    if order == "first":
        check_gradient(comprehension_loss, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(comprehension_loss, *args, mode=mode)


def builtin_sum(x):
    return sum([np.exp(v) * v for v in x]) + max(x[0], x[1])


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_builtin_sum_and_max_of_active_values(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(builtin_sum, x, mode=mode)
    else:
        check_second_derivative(builtin_sum, x, mode=mode)


def polar_energy(x, y):
    point = (x, y)
    r2 = point[0] ** 2 + point[1] ** 2
    parts = [r2, np.arctan2(y, x)]
    parts.append(r2 * parts[1])
    stats = {"r2": r2, "angle": parts[1], "mixed": parts[2]}
    u, v = parts[0], stats["mixed"]
    return u + v * stats["angle"] + len(parts)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tuples_lists_and_dicts_of_values(dtype, mode, order):
    args = cast(dtype, 0.7, -1.3)
    if order == "first":
        check_gradient(polar_energy, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(polar_energy, *args, mode=mode)


def stencil_energy(u):
    du = u[1:] - u[:-1]
    mid = u[len(u) // 2]
    ends = u[0] * u[-1]
    evens = u[::2]
    return np.sum(du * du) + mid * ends + np.sum(evens**3)


def bilinear(A, v):
    return A[0, 1] * v[0] + np.sum(A[1, :] * v) + np.sum(A[:, 0] ** 2) + A[-1][2] * v[1]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_subscript_reads(dtype, mode, order):
    (u,) = cast(dtype, X)
    if order == "first":
        check_gradient(stencil_energy, u, mode=mode)
    else:
        check_second_derivative(stencil_energy, u, mode=mode)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_subscript_reads_of_a_matrix(dtype, mode, order):
    args = cast(dtype, np.arange(9.0).reshape(3, 3) / 7 - 0.5, np.array([0.3, 1.2, -0.4]))
    if order == "first":
        check_gradient(bilinear, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(bilinear, *args, argnums=1, mode=mode)


def exponential_smoothing(x, alpha):
    s = np.zeros_like(x)
    s[0] = x[0]
    for t in range(1, len(x)):
        s[t] = alpha * x[t] + (1.0 - alpha) * s[t - 1]
    return np.sum(s * s)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_writes_into_a_fresh_buffer(dtype, mode, order):
    args = cast(dtype, X, 0.35)
    if order == "first":
        check_gradient(exponential_smoothing, *args, argnums=(0, 1), tape=False, mode=mode)
    else:
        check_second_derivative(exponential_smoothing, *args, tape=False, mode=mode)


def scatter_update(x):
    x[0] += x[1] * x[2]  # the parameter written in place: the caller's array must not be
    x[1:3] = np.sin(x[1:3])
    x[2] *= 2.0
    x[-1] = x[0] * x[-1]
    return np.sum(x**2)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_writes_into_a_parameter(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(scatter_update, x, tape=False, mode=mode)
    else:
        check_second_derivative(scatter_update, x, tape=False, mode=mode)


def overwritten_in_a_loop(x):
    # each step overwrites values the adjoint sweep needs (restored from the stack)
    y = x.copy()
    for _sweep in range(3):
        for i in range(1, len(y)):
            y[i] = np.sin(y[i - 1]) * y[i]
        y[0] = y[-1] * 0.5
    return np.sum(y)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_writes_that_overwrite_needed_values(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(overwritten_in_a_loop, x, tape=False, mode=mode)
    else:
        check_second_derivative(overwritten_in_a_loop, x, tape=False, mode=mode)


def rotation_norm(theta, r):
    c = np.cos(theta)
    s = np.sin(theta)
    R = np.array([[c, -s], [s, c]])
    p = R @ np.array([r, 2.0 * r])
    return p @ p + np.sum(R[0]) * r


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_np_array_of_active_values(dtype, mode, order):
    args = cast(dtype, 0.6, 1.7)
    if order == "first":
        check_gradient(rotation_norm, *args, argnums=(0, 1), tape=False, mode=mode)
    else:
        check_second_derivative(rotation_norm, *args, tape=False, mode=mode)


def pairwise_features(x):
    feats = []
    for i in range(len(x) - 1):
        feats.append(x[i] * x[i + 1])
    feats.append(np.sum(x))
    return np.sum(np.exp(np.array(feats)))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_list_of_active_values_made_an_array(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(pairwise_features, x, tape=False, mode=mode)
    else:
        check_second_derivative(pairwise_features, x, tape=False, mode=mode)


def covariance_score(X):
    n = X.shape[0]
    centered = X - X.mean(axis=0)
    flat = centered.reshape(-1)
    cov = centered.T @ centered / (n - 1)
    ones = np.ones(X.shape[1], dtype=X.dtype)
    return (
        cov.sum() + flat.dot(flat) * 0.1 + X.max() + (X**2).sum(axis=1) @ X[:, 0] + ones @ cov @ ones / X.size
    )


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_methods_and_attributes(dtype, mode, order):
    (A,) = cast(dtype, np.array([[0.3, -1.0, 0.5], [1.2, 0.4, -0.2], [0.1, 0.9, 0.7], [-0.6, 0.2, 1.1]]))
    if order == "first":
        check_gradient(covariance_score, A, mode=mode)
    else:
        check_second_derivative(covariance_score, A, mode=mode)
