"""The numeric backend through the public API: shapes like every backend, error estimates
alongside, the evaluations it spends, jvp, and Hessians with numeric as the outer level."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import InvalidInputError

RNG = np.random.default_rng(5)
A = RNG.uniform(-1, 1, (3, 4))
X = RNG.uniform(0.5, 1.5, (4, 2))


def matrix_function(x):
    return anp.tanh(A @ x) * 2.0  # (3, 2) from (4, 2)


def test_numeric_is_installed():
    assert "numeric" in adcore.backends()


@pytest.mark.parametrize("method", ["central", "forward", "backward", "richardson", "complex"])
def test_jacobian_shape_and_values_match_reverse(method):
    jac = adcore.jacobian(matrix_function, backend="numeric", method=method)(X)
    exact = adcore.jacobian(matrix_function, backend="reverse")(X)
    assert jac.shape == (3, 2, 4, 2) and jac.dtype == np.float64
    tolerance = {"forward": 1e-6, "backward": 1e-6, "central": 1e-9}.get(method, 1e-13)
    np.testing.assert_allclose(jac, exact, atol=tolerance)


def test_return_error_pairs_each_derivative_with_its_estimate():
    jac, error = adcore.jacobian(matrix_function, backend="numeric", method="richardson", return_error=True)(
        X
    )
    exact = adcore.jacobian(matrix_function, backend="reverse")(X)
    assert error.shape == jac.shape and np.all(error >= 0)
    assert np.all(np.abs(jac - exact) <= error)


def test_tuple_argnums_give_tuples_of_derivatives_and_of_errors():
    def f(x, y):
        return anp.sum(anp.sin(x) * y, axis=0)

    y = RNG.uniform(-1, 1, (4, 2))
    (jx, jy), (ex, ey) = adcore.jacobian(f, argnums=(0, 1), backend="numeric", return_error=True)(X, y)
    rx, ry = adcore.jacobian(f, argnums=(0, 1), backend="reverse")(X, y)
    assert jx.shape == ex.shape == rx.shape == (2, 4, 2) and jy.shape == ey.shape == ry.shape
    assert np.all(np.abs(jx - rx) <= ex) and np.all(np.abs(jy - ry) <= ey)


def test_value_and_grad_with_return_error_gives_value_and_an_estimate():
    f = lambda x: anp.sum(anp.exp(x))  # noqa: E731
    value, estimate = adcore.value_and_grad(f, backend="numeric", method="richardson", return_error=True)(X)
    assert isinstance(estimate, adcore.Estimate)
    g, error = estimate
    assert estimate.derivative is g and estimate.error is error
    assert value == pytest.approx(np.sum(np.exp(X)), rel=1e-15)
    assert np.all(np.abs(g - np.exp(X)) <= error)


def test_scalar_and_empty_arguments():
    assert adcore.grad(lambda t: t**3, backend="numeric", method="complex")(2.0) == pytest.approx(
        12.0, rel=1e-15
    )
    empty = np.zeros((0, 3))
    jac, error = adcore.jacobian(lambda x: anp.sum(x, axis=0), backend="numeric", return_error=True)(empty)
    assert jac.shape == error.shape == (3, 0, 3)


def test_differentiate_spends_only_steps_and_value_and_grad_one_more_call():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(x**2)

    x = np.arange(1.0, 6.0)
    adcore.grad(f, backend="numeric")(x)
    assert len(calls) == 2 * x.size
    calls.clear()
    adcore.value_and_grad(f, backend="numeric")(x)
    assert len(calls) == 2 * x.size + 1
    calls.clear()
    adcore.grad(f, backend="numeric", method="forward")(x)
    assert len(calls) == x.size + 1  # one-sided differences share f(x)


def test_a_user_step_per_argument():
    def f(x, y):
        return anp.sum(x**2) + anp.sum(y**3)

    x, y = np.array([1.0, 2.0]), np.array([3.0])
    gx, gy = adcore.grad(f, argnums=(0, 1), backend="numeric", method="forward", step=(0.5, 0.25))(x, y)
    np.testing.assert_allclose(gx, 2 * x + 0.5)  # forward difference of x² with h = 0.5: 2x + h
    np.testing.assert_allclose(gy, 3 * y**2 + 3 * y * 0.25 + 0.25**2)
    with pytest.raises(InvalidInputError, match="3 steps for 2 arguments"):
        adcore.grad(f, argnums=(0, 1), backend="numeric", step=(0.1, 0.1, 0.1))(x, y)


# --- jvp ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["central", "richardson", "complex"])
def test_jvp_is_one_directional_difference(method):
    calls = []

    def f(x, y):
        calls.append(1)
        return anp.sin(x) * anp.exp(y)

    x, y = RNG.uniform(-1, 1, 50), RNG.uniform(-1, 1, 50)
    v, w = RNG.uniform(-1, 1, 50), RNG.uniform(-1, 1, 50)
    out, tangent = adcore.jvp(f, (x, y), (v, w), backend="numeric", method=method)
    expected = adcore.jvp(f, (x, y), (v, w), backend="forward")[1]
    np.testing.assert_allclose(tangent, expected, atol={"central": 1e-9}.get(method, 1e-13))
    # f(x), the differences, one spare; the complex step's check adds a central difference at two steps
    assert len(calls) <= 1 + (2 if method == "central" else 1 + 4 if method == "complex" else 30) + 1
    np.testing.assert_array_equal(out, f(x, y))


@pytest.mark.parametrize("step", [0.0, "big", [1e-3, 1e-3]])
def test_jvp_takes_one_positive_step(step):
    x, v = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    with pytest.raises(InvalidInputError, match="backend 'numeric'.*step"):
        adcore.jvp(np.sin, (x,), (v,), backend="numeric", step=step)
    _, tangent = adcore.jvp(np.sin, (x,), (v,), backend="numeric", step=1e-4)
    np.testing.assert_allclose(tangent, [np.cos(1.0), 0.0], rtol=1e-8)


def test_jvp_along_a_zero_tangent_is_zero_without_stepping():
    out, tangent = adcore.jvp(np.sin, (X,), (np.zeros_like(X),), backend="numeric")
    np.testing.assert_array_equal(tangent, np.zeros_like(X))


# --- Hessians --------------------------------------------------------------------------------


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_hessian_numeric_over_reverse_and_numeric_over_numeric():
    x = np.array([0.5, -0.3, 1.2])
    exact = adcore.hessian(rosenbrock)(x)
    over_reverse = adcore.hessian(rosenbrock, inner="reverse", outer="numeric")(x)
    np.testing.assert_allclose(over_reverse, exact, rtol=1e-8, atol=1e-7)
    twice = adcore.hessian(rosenbrock, backend="numeric")(x)
    # central differences of central differences: the inner round-off, ε·|f|/h, is divided by h
    # again: ε·|f|/h² ≈ 1e-16 · 100 / 4e-12, about four digits of the largest entry
    np.testing.assert_allclose(twice, exact, atol=1e-4 * np.abs(exact).max())
    assert not np.allclose(twice, exact, atol=1e-7 * np.abs(exact).max())  # it is not exact


def test_the_contract_jvp_takes_a_batch_of_directions_and_none_for_a_fixed_argument():
    be = adcore.get_backend("numeric")
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    directions = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # a batch of 3, for x only
    value, tangents = be.jvp(lambda x, y: anp.sin(x) * y, (x, y), (directions, None))
    assert tangents.shape == (3, 2)
    # d(sin(x) y) along t = cos(x) y t, elementwise
    np.testing.assert_allclose(tangents, directions * np.cos(x) * y, rtol=1e-8)
    assert be.jvp(np.sin, (x,), (None,)) == (pytest.approx(np.sin(x)), None)  # nothing perturbed


def test_jvp_leaves_arguments_without_a_tangent_alone():
    """The Backend contract allows any argument without a tangent (None): a string, an index array."""
    be = adcore.get_backend("numeric")
    x = np.array([0.1, 0.2, 0.3])
    _, t = be.jvp(lambda x, s: np.sin(x), (x, "s"), (np.ones((1, 3)), None))
    np.testing.assert_allclose(t[0], np.cos(x), rtol=1e-8)
    _, t = be.jvp(lambda x, i: np.sin(x[i]), (x, np.array([0, 2])), (np.ones((1, 3)), None))
    np.testing.assert_allclose(t[0], np.cos(x[[0, 2]]), rtol=1e-8)
