"""What autograd users write of the API: grad of an output of size 1, elementwise_grad (issue 32,
class 11)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

X = np.array([0.5, -1.0, 2.0])
EXACT = ("reverse", "forward", "symbolic")


@pytest.mark.parametrize("backend", [*EXACT, "numeric"])
@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_grad_of_a_size_one_output_is_the_gradient_of_the_scalar_it_holds(backend, shape):
    def f(x):
        return anp.reshape(anp.sum(x**3), shape)

    g = adcore.grad(f, backend=backend)(X)
    assert g.shape == X.shape
    np.testing.assert_allclose(g, 3 * X**2, rtol=1e-8)
    value, g2 = adcore.value_and_grad(f, backend=backend)(X)
    assert value.shape == shape and value.ravel()[0] == np.sum(X**3)  # f's value as f returned it
    np.testing.assert_allclose(g2, 3 * X**2, rtol=1e-8)


@pytest.mark.parametrize("backend", EXACT)
def test_grad_of_a_size_one_output_with_several_arguments_and_a_pytree(backend):
    gx, gy = adcore.grad(lambda x, y: anp.sum(x * y, keepdims=True), argnums=(0, 1), backend=backend)(
        X, 2 * X
    )
    np.testing.assert_array_equal(gx, 2 * X)
    np.testing.assert_array_equal(gy, X)
    g = adcore.grad(lambda p: p["w"][:1] * p["b"], backend=backend)({"w": X, "b": np.array(3.0)})
    np.testing.assert_array_equal(g["w"], [3.0, 0.0, 0.0])
    assert g["b"] == 0.5


def test_grad_of_an_output_of_more_than_one_element_is_still_refused_then_works():
    with pytest.raises(adcore.NonScalarOutputError, match=r"shape \(2,\)"):
        adcore.grad(lambda x: x[:2])(X)
    assert adcore.grad(lambda x: x[:1])(X).tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("backend", [*EXACT, "numeric"])
def test_elementwise_grad_of_an_elementwise_function_is_its_derivative(backend):
    x = np.linspace(-2.0, 2.0, 7)
    np.testing.assert_allclose(
        adcore.elementwise_grad(anp.tanh, backend=backend)(x), 1 - np.tanh(x) ** 2, rtol=1e-8
    )
    np.testing.assert_allclose(
        adcore.elementwise_grad(lambda x, y: x * anp.sin(y), argnums=1, backend=backend)(x, x),
        x * np.cos(x),
        rtol=1e-8,
        atol=1e-12,
    )


def test_elementwise_grad_of_another_function_sums_the_jacobians_rows_as_autograd():
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])
    np.testing.assert_array_equal(adcore.elementwise_grad(lambda x: a @ x)(X), a.sum(axis=0))
