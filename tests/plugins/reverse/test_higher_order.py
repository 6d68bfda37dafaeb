"""Higher-order derivatives by reverse over reverse (VJP rules are written with adcore ops),
checked against analytic derivatives, and `Tensor.backward(create_graph=True)`."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse import Tensor

import adcore
import adcore.numpy as anp


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (name, f, f'' by hand, points)
SECOND = [
    ("sin", np.sin, lambda x: -np.sin(x), [-1.3, 0.0, 0.7, 2.0]),
    ("exp(x)*x", lambda x: np.exp(x) * x, lambda x: (x + 2) * np.exp(x), [-1.0, 0.0, 0.5, 1.5]),
    ("x**3", lambda x: x**3, lambda x: 6 * x, [-2.0, 0.5, 3.0]),
    ("log", np.log, lambda x: -1 / x**2, [0.3, 1.0, 4.0]),
    ("tanh", np.tanh, lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2, [-1.0, 0.0, 0.4, 2.0]),
    (
        "sigmoid",
        anp.sigmoid,
        lambda x: _sigmoid(x) * (1 - _sigmoid(x)) * (1 - 2 * _sigmoid(x)),
        [-2.0, 0.0, 0.8],
    ),
]
CASES = [(name, f, d2, x) for name, f, d2, points in SECOND for x in points]


@pytest.mark.parametrize("name, f, d2, x", CASES, ids=[f"{c[0]}@{c[3]}" for c in CASES])
def test_second_derivative_of_scalar_function(name, f, d2, x):
    assert adcore.grad(adcore.grad(f))(x) == pytest.approx(d2(x), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("name, f, d2, points", SECOND, ids=[s[0] for s in SECOND])
def test_second_derivative_elementwise_as_a_jacobian_diagonal(name, f, d2, points):
    # for an elementwise f, d/dx grad(sum f) is diag(f'')
    x = np.array(points)
    hess = adcore.jacobian(adcore.grad(lambda v: anp.sum(f(v))))(x)
    np.testing.assert_allclose(hess, np.diag(d2(x)), rtol=1e-12, atol=1e-14)


def test_third_derivative_of_sin():
    d3 = adcore.grad(adcore.grad(adcore.grad(np.sin)))
    assert d3(0.9) == pytest.approx(-np.cos(0.9), rel=1e-14)


def test_second_derivative_is_zero_where_the_function_is_linear():
    assert adcore.grad(adcore.grad(lambda x: 3.0 * x + 1.0))(2.0) == 0.0


def _mixed(v):
    return v[0] ** 2 * v[1] + np.sin(v[0] * v[1])


def _mixed_hessian(v):
    x, y = v
    s, c = np.sin(x * y), np.cos(x * y)
    return np.array(
        [
            [2 * y - y**2 * s, 2 * x + c - x * y * s],
            [2 * x + c - x * y * s, -(x**2) * s],
        ]
    )


def _rosenbrock(v):
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


def _rosenbrock_hessian(v):
    x, y = v
    return np.array([[2 - 400 * (y - x**2) + 800 * x**2, -400 * x], [-400 * x, 200.0]])


@pytest.mark.parametrize(
    "f, hessian",
    [(_mixed, _mixed_hessian), (_rosenbrock, _rosenbrock_hessian)],
    ids=["x0²x1+sin(x0x1)", "rosenbrock"],
)
@pytest.mark.parametrize("point", [(1.0, 2.0), (-0.5, 0.3)])
def test_hessian_of_2d_function_as_jacobian_of_grad(f, hessian, point):
    v = np.array(point)
    hess = adcore.jacobian(adcore.grad(f))(v)
    assert hess.shape == (2, 2)
    np.testing.assert_allclose(hess, hessian(v), rtol=1e-12)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12)


def test_mixed_partial_through_nested_grad_over_two_arguments():
    # f = x y² : d/dy (df/dx) = 2y
    def df_dx(x, y):
        return adcore.grad(lambda a: a * y**2)(x)

    assert adcore.grad(df_dx, argnums=1)(1.5, 3.0) == pytest.approx(6.0)


# --- Tensor.backward(create_graph=True) -----------------------------------------------------


def test_create_graph_makes_grad_a_differentiable_tensor():
    # y = x³: x.grad = 3x² = 12, then d(3x²)/dx = 6x = 12 at x = 2
    x = Tensor(2.0, requires_grad=True)
    (x**3).backward(create_graph=True)
    first = x.grad
    assert isinstance(first, Tensor) and first.requires_grad
    assert float(first.value) == 12.0
    x.grad = None
    first.backward()
    assert x.grad == 12.0


def test_create_graph_twice_gives_the_third_derivative():
    # y = x³: 3x², 6x, 6
    x = Tensor(1.5, requires_grad=True)
    (x**3).backward(create_graph=True)
    g1, x.grad = x.grad, None
    g1.backward(create_graph=True)
    g2, x.grad = x.grad, None
    assert float(g2.value) == pytest.approx(9.0)
    g2.backward()
    assert x.grad == pytest.approx(6.0)


def test_create_graph_cross_derivatives():
    # f = x y²: df/dy = 2xy, whose gradient is (2y, 2x)
    x = Tensor(1.5, requires_grad=True)
    y = Tensor(3.0, requires_grad=True)
    (x * y**2).backward(create_graph=True)
    assert float(x.grad.value) == pytest.approx(9.0) and float(y.grad.value) == pytest.approx(9.0)
    dfdy = y.grad
    x.grad = y.grad = None
    dfdy.backward()
    assert x.grad == pytest.approx(6.0)
    assert y.grad == pytest.approx(3.0)


def test_create_graph_second_derivative_of_sin_on_an_array():
    v = np.array([-1.0, 0.2, 1.1])
    x = Tensor(v, requires_grad=True)
    np.sin(x).sum().backward(create_graph=True)
    first, x.grad = x.grad, None
    np.testing.assert_allclose(first.value, np.cos(v), rtol=1e-15)
    first.sum().backward()
    np.testing.assert_allclose(x.grad, -np.sin(v), rtol=1e-14)
