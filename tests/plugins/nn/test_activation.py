"""adcore_nn's activations: ReLU, GELU (exact and tanh), Tanh, Sigmoid, Softmax, LogSoftmax."""

from __future__ import annotations

import math

import numpy as np
import pytest
from adcore_nn.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from nn_layer_checks import assert_matches_torch, cotangent, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError

X = np.array([[-2.0, -1.0, 0.0], [0.5, 1.0, 2.0]])


def test_relu_by_hand_and_its_derivative_at_zero_is_zero():
    np.testing.assert_array_equal(ReLU()(X), [[0, 0, 0], [0.5, 1, 2]])
    g = adcore.grad(lambda x: anp.sum(ReLU()(x)))(X)
    np.testing.assert_array_equal(g, [[0, 0, 0], [1, 1, 1]])
    assert repr(ReLU()) == "ReLU()" and repr(ReLU(inplace=True)) == "ReLU(inplace=True)"


def test_relu_inplace_does_not_overwrite_the_input():
    x = X.copy()
    ReLU(inplace=True)(x)
    np.testing.assert_array_equal(x, X)


def test_gelu_at_known_points():
    # Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208 (the normal CDF), Phi(0) = 1/2
    x = np.array([-1.0, 0.0, 1.0, 2.0])
    expected = np.array([-1 * (1 - 0.8413447460685429), 0.0, 0.8413447460685429, 2 * 0.9772498680518208])
    np.testing.assert_allclose(GELU()(x), expected, rtol=1e-14, atol=1e-15)
    tanh_form = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))) for v in x]
    np.testing.assert_allclose(GELU("tanh")(x), tanh_form, rtol=1e-14)
    # d/dx x Phi(x) = Phi(x) + x phi(x): at 0, 1/2; at 1, 0.8413447460685429 + exp(-1/2)/sqrt(2 pi)
    g = adcore.grad(lambda x: anp.sum(GELU()(x)))(np.array([0.0, 1.0]))
    np.testing.assert_allclose(
        g, [0.5, 0.8413447460685429 + math.exp(-0.5) / math.sqrt(2 * math.pi)], rtol=1e-14
    )


def test_gelu_approximate_is_checked_and_shown():
    with pytest.raises(InvalidValueError, match="approximate must be 'none' or 'tanh', got 'erf'"):
        GELU("erf")
    assert repr(GELU()) == "GELU(approximate='none')"
    assert repr(GELU(approximate="tanh")) == "GELU(approximate='tanh')"


def test_tanh_sigmoid_by_hand():
    np.testing.assert_allclose(Tanh()(X), np.tanh(X), rtol=1e-15)
    np.testing.assert_allclose(Sigmoid()(np.array([0.0, math.log(3.0)])), [0.5, 0.75], rtol=1e-15)
    # stable at +-1e3: no overflow warning, exact limits
    np.testing.assert_array_equal(Sigmoid()(np.array([-1e3, 1e3])), [0.0, 1.0])


def test_softmax_and_log_softmax_by_hand():
    x = np.array([[0.0, math.log(3.0)], [1e3, 1e3]])
    np.testing.assert_allclose(Softmax(dim=1)(x), [[0.25, 0.75], [0.5, 0.5]], rtol=1e-15)
    np.testing.assert_allclose(LogSoftmax(dim=1)(x), np.log([[0.25, 0.75], [0.5, 0.5]]), rtol=1e-15)
    np.testing.assert_allclose(Softmax(dim=0)(np.array([[0.0], [0.0]])), [[0.5], [0.5]])
    assert repr(Softmax(dim=1)) == "Softmax(dim=1)" and repr(LogSoftmax()) == "LogSoftmax(dim=None)"


def test_softmax_without_dim_uses_torchs_legacy_dim_with_its_warning():
    x = np.arange(6.0).reshape(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        np.testing.assert_allclose(Softmax()(x), Softmax(dim=1)(x))
    with pytest.warns(UserWarning, match="log_softmax"):
        np.testing.assert_allclose(LogSoftmax()(x[0]), LogSoftmax(dim=0)(x[0]))


LAYERS = {
    "relu": (ReLU, "ReLU", {}),
    "gelu": (GELU, "GELU", {}),
    "gelu_tanh": (GELU, "GELU", {"approximate": "tanh"}),
    "tanh": (Tanh, "Tanh", {}),
    "sigmoid": (Sigmoid, "Sigmoid", {}),
    "softmax": (Softmax, "Softmax", {"dim": 1}),
    "log_softmax": (LogSoftmax, "LogSoftmax", {"dim": -1}),
}


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_stays_float32_and_backends_agree(name, dtype):
    cls, _, kwargs = LAYERS[name]
    layer = cls(**kwargs)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype)
    assert layer(x).dtype == dtype
    cot = cotangent((3, 4), dtype)
    grads = {b: adcore.grad(lambda x: anp.sum(layer(x) * cot), backend=b)(x) for b in ("reverse", "forward")}
    assert grads["reverse"].dtype == dtype
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(grads["forward"], grads["reverse"], rtol=rtol, atol=rtol)
    if dtype == np.float64:
        numeric = adcore.grad(lambda x: anp.sum(layer(x) * cot), backend="numeric")(x)
        np.testing.assert_allclose(numeric, grads["reverse"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(name, dtype):
    torch = torch_or_skip()
    cls, torch_name, kwargs = LAYERS[name]
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(dtype) * 3
    assert_matches_torch(cls(**kwargs), getattr(torch.nn, torch_name)(**kwargs), x)
