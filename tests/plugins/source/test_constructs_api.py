"""Issue 35 item 1, end to end: the other APIs (jacobian, jvp, vjp, hvp, has_aux, argnums, pytrees)
through the source backend on functions with loops and in-place writes, both modes, against the
numeric oracle within its error (and the tape where it takes the function)."""

from __future__ import annotations

import numpy as np
import pytest
from source_checks import MODES, assert_tape_close, assert_within_estimate, tape_refuses

import adcore

X = np.array([0.4, -1.1, 0.9, 0.25])
V = np.array([1.0, 0.5, -2.0, 0.3])


def smoothed_series(x, alpha):
    s = np.zeros_like(x)
    s[0] = x[0]
    for t in range(1, len(x)):
        s[t] = alpha * x[t] + (1.0 - alpha) * s[t - 1]
    return np.tanh(s)


def numeric_jacobian(f, *args, argnums=0):
    return adcore.jacobian(f, argnums=argnums, backend="numeric", method="richardson", return_error=True)(
        *args
    )


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_vector_valued_function_with_in_place_writes(mode):
    tape_refuses(smoothed_series, (X, 0.35))
    estimate = numeric_jacobian(smoothed_series, X, 0.35, argnums=(0, 1))
    jx, ja = adcore.jacobian(smoothed_series, argnums=(0, 1), backend="source", mode=mode)(X.copy(), 0.35)
    assert jx.shape == (4, 4) and ja.shape == (4,)
    assert_within_estimate(jx, (estimate.derivative[0], estimate.error[0]), f"d/dx ({mode})")
    assert_within_estimate(ja, (estimate.derivative[1], estimate.error[1]), f"d/dalpha ({mode})")


@pytest.mark.parametrize("mode", MODES)
def test_jvp_and_vjp_agree_with_the_jacobian(mode):
    jx = numeric_jacobian(smoothed_series, X, 0.35)
    out, tangent = adcore.jvp(smoothed_series, (X.copy(), 0.35), (V, 0.0), backend="source", mode=mode)
    np.testing.assert_array_equal(out, smoothed_series(X.copy(), 0.35))
    assert_within_estimate(tangent, (jx.derivative @ V, np.abs(jx.error) @ np.abs(V)), f"jvp ({mode})")
    out, pullback = adcore.vjp(smoothed_series, X.copy(), 0.35, backend="source", mode=mode)
    np.testing.assert_array_equal(out, smoothed_series(X.copy(), 0.35))
    gx, _ = pullback(V)
    assert_within_estimate(gx, (V @ jx.derivative, np.abs(V) @ np.abs(jx.error)), f"vjp ({mode})")


def loss_with_aux(params, data):
    w, b = params["w"], params["b"]
    total = 0.0
    residuals = []
    for row, target in zip(data["inputs"], data["targets"]):
        r = np.tanh(row @ w + b) - target
        residuals.append(r)
        total = total + r * r
    return total / len(residuals), {"largest": np.max(np.abs(np.stack(residuals)))}


PARAMS = {"w": np.array([0.3, -0.2, 0.5]), "b": np.array(0.1)}
DATA = {
    "inputs": np.array([[1.0, 0.5, -0.3], [0.2, -1.0, 0.8], [-0.6, 0.4, 0.9]]),
    "targets": np.array([0.2, -0.4, 0.6]),
}


@pytest.mark.parametrize("mode", MODES)
def test_pytrees_and_has_aux(mode):
    (value, aux), g = adcore.value_and_grad(loss_with_aux, backend="source", mode=mode, has_aux=True)(
        PARAMS, DATA
    )
    (want_value, want_aux), want = adcore.value_and_grad(loss_with_aux, has_aux=True)(PARAMS, DATA)
    assert value == want_value and aux == want_aux
    assert set(g) == {"w", "b"}
    for key in g:
        assert_tape_close(g[key], want[key], f"d/d{key} ({mode})")


def two_arguments(a, x, n):
    acc = a * 1.0
    for k in range(n):
        acc = np.sin(acc) * x[k % len(x)] + a
    return np.sum(acc * acc)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("argnums", [0, 1, (1, 0)])
def test_argnums(mode, argnums):
    args = (np.array([0.7, -0.2]), X, 5)
    g = adcore.grad(two_arguments, argnums, backend="source", mode=mode)(*args)
    want = adcore.grad(two_arguments, argnums)(*args)
    for got, expected in zip(
        g if isinstance(argnums, tuple) else (g,), want if isinstance(argnums, tuple) else (want,)
    ):
        assert_tape_close(got, expected, f"argnums={argnums} ({mode})")


def scatter_energy(x):
    y = np.zeros(len(x) + 1)
    for i in range(len(x)):
        y[i] += np.sin(x[i])
        y[i + 1] += x[i] * x[i]
    return np.sum(y * y * y)


def test_hvp_over_an_in_place_function():
    tape_refuses(scatter_energy, (X,))
    product = adcore.hvp(scatter_energy, inner="source")(X.copy(), V)
    estimate = numeric_jacobian(adcore.grad(scatter_energy, backend="source"), X.copy())
    assert_within_estimate(product, (estimate.derivative @ V, np.abs(estimate.error) @ np.abs(V)), "hvp")
