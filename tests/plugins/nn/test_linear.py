"""adcore_nn.Linear and Identity: torch's signature, attributes, initialisation, values and gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from adcore_nn import init
from adcore_nn.linear import Identity, Linear
from nn_layer_checks import assert_backends_agree, assert_matches_torch, layer_grads, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError

W = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)
B = np.array([0.5, -2.0], np.float32)


def two_by_three(bias=True, dtype=np.float32):
    layer = Linear(3, 2, bias=bias, dtype=dtype)
    layer.weight[...] = W
    if bias:
        layer.bias[...] = B
    return layer


def test_a_2x3_linear_by_hand():
    x = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0]], np.float32)
    y = two_by_three()(x)
    # row 0: (1+2+3)+0.5, (-1+0.5)-2 ; row 1: (2-3)+0.5, (-2)-2
    np.testing.assert_array_equal(y, np.array([[6.5, -2.5], [-0.5, -4.0]], np.float32))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(two_by_three(bias=False)(x[0]), np.array([6.0, -0.5], np.float32))


def test_the_gradient_by_hand():
    layer = two_by_three(dtype=np.float64)
    x = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0]])
    cot = np.array([[1.0, 0.0], [0.0, 2.0]])
    params, gx = layer_grads(layer, x, cot)
    np.testing.assert_array_equal(params["weight"], cot.T @ x)
    np.testing.assert_array_equal(params["bias"], [1.0, 2.0])
    np.testing.assert_array_equal(gx, cot @ W.astype(np.float64))


def test_attributes_repr_and_state_dict_keys_are_torchs():
    layer = Linear(3, 2)
    assert (layer.in_features, layer.out_features) == (3, 2)
    assert layer.weight.shape == (2, 3) and layer.bias.shape == (2,)
    assert type(layer.weight) is np.ndarray and layer.weight.dtype == np.float32
    assert repr(layer) == "Linear(in_features=3, out_features=2, bias=True)"
    assert list(layer.state_dict()) == ["weight", "bias"]
    no_bias = Linear(3, 2, bias=False, dtype=np.float64)
    assert no_bias.bias is None and list(no_bias.state_dict()) == ["weight"]
    assert no_bias.weight.dtype == np.float64
    assert repr(no_bias) == "Linear(in_features=3, out_features=2, bias=False)"


def test_default_initialisation_bounds_are_torchs():
    layer = Linear(400, 300, generator=np.random.default_rng(0))
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)): sqrt(3) * sqrt(2 / 6) / sqrt(fan_in)
    w, b = layer.weight, layer.bias
    assert np.abs(w).max() <= np.float32(bound) and np.abs(w).max() > 0.99 * bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.03)
    assert np.abs(b).max() <= np.float32(bound) and b.std() > 0


def test_generator_and_manual_seed_make_initialisation_reproducible():
    a = Linear(5, 4, generator=np.random.default_rng(3))
    b = Linear(5, 4, generator=np.random.default_rng(3))
    np.testing.assert_array_equal(a.weight, b.weight)
    np.testing.assert_array_equal(a.bias, b.bias)
    init.manual_seed(11)
    c = Linear(5, 4)
    init.manual_seed(11)
    d = Linear(5, 4)
    np.testing.assert_array_equal(c.weight, d.weight)
    assert not np.array_equal(c.weight, Linear(5, 4).weight)


def test_wrong_dtype_or_width_is_a_typed_error_and_the_next_call_works():
    layer = two_by_three()
    with pytest.raises(
        InvalidInputError, match="Linear: the input has dtype float64 but the layer's parameters are float32"
    ):
        layer(np.ones((1, 3)))
    with pytest.raises(InvalidValueError, match="in_features=3"):
        layer(np.ones((1, 4), np.float32))
    with pytest.raises(InvalidInputError, match="must be an array"):
        layer([[1.0, 1.0, 1.0]])
    with pytest.raises(InvalidInputError, match="dtype must be float32 or float64"):
        Linear(3, 2, dtype=np.int32)
    np.testing.assert_array_equal(layer(np.ones((1, 3), np.float32)), [[6.5, -2.5]])


def test_float32_stays_float32_through_value_and_grad():
    layer = Linear(4, 3, generator=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    value, (g_model, g_x) = adcore.value_and_grad(lambda m, x: anp.sum(anp.tanh(m(x))), argnums=(0, 1))(
        layer, x
    )
    assert np.asarray(value).dtype == np.float32
    assert g_model.weight.dtype == g_model.bias.dtype == g_x.dtype == np.float32


def test_forward_and_numeric_agree_with_reverse():
    layer = Linear(4, 3, dtype=np.float64, generator=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((2, 4))
    assert_backends_agree(layer, x, backends=("forward",))
    assert_backends_agree(
        Linear(2, 2, dtype=np.float64, generator=np.random.default_rng(2)), x[:, :2], ("numeric",), rtol=1e-6
    )


def test_identity_returns_its_input_and_ignores_arguments():
    x = np.arange(3.0)
    assert Identity(54, unused="x")(x) is x
    assert repr(Identity()) == "Identity()"
    assert adcore.grad(lambda x: anp.sum(Identity()(x) ** 2))(x).tolist() == [0.0, 2.0, 4.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(dtype, bias):
    torch = torch_or_skip()
    layer = Linear(5, 3, bias=bias, dtype=dtype, generator=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((4, 2, 5)).astype(dtype)
    assert_matches_torch(layer, torch.nn.Linear(5, 3, bias=bias), x)
