"""Eager Tensors meeting the functional API and mixed dtypes: the contract's slips (issue 32, class 10)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse import Tensor

import adcore
from adcore.core import Tracer
from adcore.errors import AdcoreError

X = np.array([1.0, 1.0, 1.0])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_derivative_of_f_closing_over_an_eager_tensor_is_a_plain_array(backend):
    w = Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    g = adcore.grad(lambda x: np.sum(x * x * w), backend=backend)(X)
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, 2 * X * w.numpy())  # d/dx sum(x^2 w) = 2 x w
    value, g = adcore.value_and_grad(lambda x: np.sum(x * w), backend=backend)(X)
    assert not isinstance(value, Tracer) and float(value) == 6.0 and type(g) is np.ndarray
    jac = adcore.jacobian(lambda x: {"y": x * w}, backend=backend)(X)
    assert type(jac["y"]) is np.ndarray
    np.testing.assert_array_equal(jac["y"], np.diag([1.0, 2.0, 3.0]))


def test_jvp_vjp_and_hessian_of_f_closing_over_an_eager_tensor_are_plain_arrays():
    w = Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    out, tangent = adcore.jvp(lambda x: x * w, (X,), (X,))
    assert type(out) is np.ndarray and type(tangent) is np.ndarray
    out, pullback = adcore.vjp(lambda x: x * w, X)
    (ct,) = pullback(X)
    assert type(out) is np.ndarray and type(ct) is np.ndarray
    np.testing.assert_array_equal(ct, [1.0, 2.0, 3.0])
    h = adcore.hessian(lambda x: np.sum(x * x * w))(X)
    assert type(h) is np.ndarray
    np.testing.assert_array_equal(h, np.diag([2.0, 4.0, 6.0]))  # d2/dx2 sum(x^2 w) = diag(2w)
    assert w.grad is None  # w was read, not differentiated


@pytest.mark.parametrize("scalar_first", [True, False])
def test_a_float32_leaf_times_a_float64_leaf_keeps_each_grads_dtype(scalar_first):
    # a 0-d leaf's cotangent comes out of the sum rule as a NumPy scalar, which was not cast back
    a = Tensor(np.float32(1.0) if scalar_first else np.ones(3, np.float32), requires_grad=True)
    b = Tensor(np.full(3, 2.0) if scalar_first else np.float64(2.0), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64  # each leaf's dtype, as torch
    np.testing.assert_array_equal(a.grad, 6.0 if scalar_first else np.full(3, 2.0))


def test_a_float16_tensor_cannot_require_grad():
    for make in (
        lambda: Tensor(np.ones(3, np.float16), requires_grad=True),
        lambda: Tensor(np.ones(3, np.float16)).requires_grad_(),
    ):
        with pytest.raises(AdcoreError, match="dtype float16") as caught:
            make()
        assert isinstance(caught.value, TypeError)
    t = Tensor(np.ones(3, np.float32), requires_grad=True)
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad, np.full(3, 2.0, np.float32))
