"""Issue 35 item 3, functions through the source backend (both modes): nested functions and
closures (over active values and over constants), non-escaping lambdas, calls of other user
functions (transformed in turn), recursion and functions returning tuples. Each against the reverse
tape and the numeric oracle, with a second derivative, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest
from source_checks import DTYPES, MODES, ORDERS, cast, check_gradient, check_second_derivative

import adcore

X = np.array([0.4, -1.1, 0.9])


def with_closure(x, a):
    def scale(v):
        return v * a + np.sin(v)

    return np.sum(scale(scale(x)))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_function_closing_over_an_active_value(dtype, mode, order):
    args = cast(dtype, X, 0.6)
    if order == "first":
        check_gradient(with_closure, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(with_closure, *args, mode=mode)


def make_penalty(weight, power):
    def penalty(x):
        return weight * np.sum(x**power) + np.sum(np.cos(x))

    return penalty


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_closure_over_constants_of_its_factory(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(make_penalty(0.5, 2), x, mode=mode)
        check_gradient(make_penalty(2.0, 3), x, mode=mode)  # another closure of the same code: its own cells
    else:
        check_second_derivative(make_penalty(2.0, 3), x, mode=mode)


def with_lambda(x, a):
    sq = lambda v: v * v * a  # noqa: E731 (the construct under test)
    return np.sum(sq(x) + sq(np.tanh(x)))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_lambda_called_where_it_is_defined(dtype, mode, order):
    args = cast(dtype, X, 1.4)
    if order == "first":
        check_gradient(with_lambda, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(with_lambda, *args, mode=mode)


def softplus(v):
    return np.log1p(np.exp(v))


def layer(w, x):
    return softplus(x * w) - 0.5 * w


def two_layers(w, x):
    h = layer(w, x)
    return np.sum(layer(w, h))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_calls_of_user_functions_calling_user_functions(dtype, mode, order):
    args = cast(dtype, X, np.array([1.0, 0.5, -2.0]))
    if order == "first":
        check_gradient(two_layers, *args, argnums=(0, 1), mode=mode)
    else:
        check_second_derivative(two_layers, *args, mode=mode)


def power(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * power(x, n - 1)


def cubed_sum(x):
    return np.sum(power(x, 3))


def even(x, n):
    return x if n == 0 else odd(np.sin(x), n - 1)


def odd(x, n):
    return x * 2.0 if n == 0 else even(x * x, n - 1)


def mutual(x):
    return np.sum(even(x, 5))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f", [cubed_sum, mutual])
def test_recursion(dtype, f, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(f, x, mode=mode)
    else:
        check_second_derivative(f, x, mode=mode)


def sin_cos(v):
    return np.sin(v), np.cos(v)


def unit_circle_residual(x):
    s, c = sin_cos(x)
    pair = sin_cos(2.0 * x)
    return np.sum((s * s + c - 1.0) * pair[0] + pair[1] * x)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_user_function_returning_a_tuple(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(unit_circle_residual, x, mode=mode)
    else:
        check_second_derivative(unit_circle_residual, x, mode=mode)


def keyword_call(x):
    return np.sum(scaled_shift(x, shift=0.5, scale=np.exp(x[0])))


def scaled_shift(v, scale=1.0, shift=0.0):
    return (v - shift) * scale


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_user_function_called_with_keywords_and_defaults(dtype, mode, order):
    (x,) = cast(dtype, X)
    if order == "first":
        check_gradient(keyword_call, x, mode=mode)
    else:
        check_second_derivative(keyword_call, x, mode=mode)


class Affine:
    """A callable pytree (as an adcore_nn Module is): its one leaf, w, is differentiated with it."""

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(x * self.w)


adcore.tree.register(Affine, lambda a: ((a.w,), None, ("w",)), lambda _, children: Affine(*children))


def through_a_callable_pytree(layer, x):
    return np.sum(layer(x) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_calling_an_argument_that_is_a_callable_pytree_differentiates_its_leaves(mode):
    # it was called as a dynamic callee with a zero adjoint for itself: a silent zero gradient for
    # a one-leaf pytree (caught only by a leaf count for larger ones)
    layer, x = Affine(np.array([0.7, -0.2, 1.3])), X.copy()
    g_layer, g_x = adcore.grad(through_a_callable_pytree, argnums=(0, 1), backend="source", mode=mode)(
        layer, x
    )
    t = np.tanh(X * layer.w)
    common = 2 * t * (1 - t**2)  # d/du of tanh(u)^2
    np.testing.assert_allclose(g_layer.w, common * X, rtol=1e-12)
    np.testing.assert_allclose(g_x, common * layer.w, rtol=1e-12)
    assert np.any(g_layer.w != 0)
