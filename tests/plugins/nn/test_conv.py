"""adcore_nn.Conv2d, MaxPool2d and AvgPool2d on adcore-kernels' ops: torch's signatures, values, gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from adcore_nn.conv import AvgPool2d, Conv2d, MaxPool2d
from nn_layer_checks import assert_backends_agree, assert_matches_torch, layer_grads, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError

X9 = np.arange(9.0).reshape(1, 1, 3, 3)


def conv(*args, weight=None, bias=None, **kwargs):
    layer = Conv2d(*args, dtype=np.float64, generator=np.random.default_rng(0), **kwargs)
    if weight is not None:
        layer.weight[...] = weight
    if bias is not None:
        layer.bias[...] = bias
    return layer


def test_a_3x3_convolution_by_hand():
    # ones(3, 3) with padding 1 sums each 3x3 neighbourhood of 0..8
    layer = conv(1, 1, 3, padding=1, weight=np.ones((1, 1, 3, 3)), bias=[1.0])
    expected = np.array([[8, 15, 12], [21, 36, 27], [20, 33, 24]], np.float64) + 1
    np.testing.assert_allclose(layer(X9)[0, 0], expected, rtol=1e-14)
    # a 2x2 kernel, no padding: out[i, j] = sum w * x[i:i+2, j:j+2]
    layer = conv(1, 1, 2, bias=False, weight=np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    np.testing.assert_allclose(layer(X9)[0, 0], [[27, 37], [57, 67]], rtol=1e-14)
    # stride 2 with padding 1 picks the corners of the padded neighbourhood sums
    layer = conv(1, 1, 3, stride=2, padding=1, bias=False, weight=np.ones((1, 1, 3, 3)))
    np.testing.assert_allclose(layer(X9)[0, 0], [[8, 12], [20, 24]], rtol=1e-14)


def test_the_weight_gradient_by_hand():
    layer = conv(1, 1, 2, weight=np.ones((1, 1, 2, 2)), bias=[0.0])
    params, gx = layer_grads(layer, X9, np.ones((1, 1, 2, 2)))
    # d/dw[a, b] sum_ij x[i+a, j+b] = the sum of the 2x2 block of x at (a, b)
    np.testing.assert_allclose(params["weight"][0, 0], [[8, 12], [20, 24]], rtol=1e-14)
    np.testing.assert_allclose(params["bias"], [4.0], rtol=1e-14)
    np.testing.assert_allclose(gx[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]], rtol=1e-14)


def test_attributes_repr_and_state_dict_are_torchs():
    layer = Conv2d(
        4, 8, (3, 2), stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect"
    )
    assert layer.kernel_size == (3, 2) and layer.stride == (2, 2) and layer.padding == (1, 1)
    assert layer.dilation == (2, 2) and layer.groups == 2 and layer.padding_mode == "reflect"
    assert layer.weight.shape == (8, 2, 3, 2) and layer.bias is None and layer.weight.dtype == np.float32
    assert repr(layer) == (
        "Conv2d(4, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, "
        "bias=False, padding_mode=reflect)"
    )
    assert repr(Conv2d(3, 8, 3)) == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"
    assert (
        repr(Conv2d(3, 8, 3, padding="same"))
        == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    )
    assert list(Conv2d(3, 8, 3).state_dict()) == ["weight", "bias"]


def test_default_initialisation_bounds_are_torchs():
    layer = Conv2d(16, 64, 3, generator=np.random.default_rng(0))
    bound = 1 / math.sqrt(16 * 9)  # kaiming_uniform_(a=sqrt(5)) and the bias: 1/sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        assert np.abs(p).max() <= np.float32(bound)
    assert np.abs(layer.weight).max() > 0.99 * bound
    assert layer.weight.var() == pytest.approx(bound**2 / 3, rel=0.05)


def test_bad_arguments_are_typed_errors_naming_the_argument():
    with pytest.raises(InvalidValueError, match="in_channels must be divisible by groups"):
        Conv2d(3, 4, 3, groups=2)
    with pytest.raises(InvalidValueError, match="out_channels must be divisible by groups"):
        Conv2d(4, 3, 3, groups=2)
    with pytest.raises(InvalidValueError, match="invalid padding string 'full'"):
        Conv2d(1, 1, 3, padding="full")
    with pytest.raises(InvalidValueError, match="padding='same' is not supported for strided"):
        Conv2d(1, 1, 3, padding="same", stride=2)
    with pytest.raises(InvalidValueError, match="padding_mode must be one of"):
        Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(InvalidValueError, match="kernel_size must be an int or a pair"):
        Conv2d(1, 1, (3, 3, 3))
    layer = conv(1, 1, 3, padding=3, padding_mode="reflect")
    with pytest.raises(InvalidValueError, match="padding_mode='reflect' needs padding < the input size"):
        layer(X9)
    layer = conv(2, 1, 3)
    with pytest.raises(InvalidValueError, match="in_channels=2 channels"):
        layer(np.zeros((1, 3, 5, 5)))
    with pytest.raises(InvalidValueError, match="expected a 3-D or 4-D input"):
        layer(np.zeros((5, 5)))
    with pytest.raises(
        InvalidInputError, match="the input has dtype float32 but the layer's parameters are float64"
    ):
        layer(np.zeros((1, 2, 5, 5), np.float32))
    assert layer(np.zeros((1, 2, 5, 5))).shape == (1, 1, 3, 3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"stride": 2, "padding": 1},
        {"padding": "same", "dilation": (2, 1)},
        {"groups": 2, "padding": (1, 0)},
        {"padding": 1, "padding_mode": "circular"},
    ],
)
def test_forward_agrees_with_reverse(kwargs):
    layer = conv(2, 4, 3, **kwargs)
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 6))
    assert_backends_agree(layer, x, ("forward",))


def test_numeric_agrees_with_reverse_on_a_small_case():
    layer = conv(1, 2, 2, padding=1)
    assert_backends_agree(
        layer, np.random.default_rng(1).standard_normal((1, 1, 3, 3)), ("numeric",), rtol=1e-6
    )


def test_float32_stays_float32():
    layer = Conv2d(2, 3, 3, padding="same", generator=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5)).astype(np.float32)
    assert layer(x).dtype == np.float32
    g_model, g_x = adcore.grad(lambda m, x: anp.sum(m(x)), argnums=(0, 1))(layer, x)
    assert g_model.weight.dtype == g_model.bias.dtype == g_x.dtype == np.float32


CONV_CASES = [
    ((3, 4, 3), {}),
    ((3, 4, (3, 2)), {"stride": (2, 1), "padding": (1, 2)}),
    ((3, 4, 3), {"dilation": 2, "padding": 2, "bias": False}),
    ((4, 6, 3), {"groups": 2, "padding": 1}),
    ((4, 4, 3), {"groups": 4}),
    ((3, 4, 4), {"padding": "same"}),  # odd total: one extra row/column at the bottom/right
    ((3, 4, (2, 3)), {"padding": "same", "dilation": (1, 2)}),
    ((3, 4, 3), {"padding": "valid", "stride": 2}),
    ((3, 4, 3), {"padding": (1, 2), "padding_mode": "reflect"}),
    ((3, 4, 3), {"padding": 2, "padding_mode": "replicate"}),
    ((3, 4, 3), {"padding": (2, 1), "padding_mode": "circular"}),
    ((3, 4, 4), {"padding": "same", "padding_mode": "reflect"}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("args", "kwargs"), CONV_CASES)
def test_conv2d_matches_torch(args, kwargs, dtype):
    torch = torch_or_skip()
    layer = Conv2d(*args, dtype=dtype, generator=np.random.default_rng(0), **kwargs)
    torch_layer = torch.nn.Conv2d(*args, **kwargs)
    assert repr(layer) == repr(torch_layer)
    x = np.random.default_rng(1).standard_normal((2, args[0], 7, 6)).astype(dtype)
    assert_matches_torch(layer, torch_layer, x)
    assert_matches_torch(layer, torch_layer, x[0])  # unbatched (C, H, W)


# --- pooling ---------------------------------------------------------------------------------------


def test_pooling_by_hand():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(MaxPool2d(2)(x)[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(AvgPool2d(2)(x)[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    # padding 1, kernel 3, stride 2: corner window of avg counts the padding as zeros (0+1+4+5)/9
    np.testing.assert_allclose(AvgPool2d(3, 2, 1)(x)[0, 0, 0, 0], 10 / 9)
    np.testing.assert_allclose(AvgPool2d(3, 2, 1, count_include_pad=False)(x)[0, 0, 0, 0], 10 / 4)
    np.testing.assert_allclose(
        AvgPool2d(2, divisor_override=3)(x)[0, 0], [[10 / 3, 18 / 3], [42 / 3, 50 / 3]]
    )
    # max pooling's padding never wins, even over negative values
    np.testing.assert_array_equal(MaxPool2d(3, 2, 1)(-x - 1)[0, 0], [[-1, -2], [-5, -6]])


def test_max_pool_gradient_goes_to_the_maximum_and_is_split_on_ties():
    x = np.array([[[[1.0, 3.0], [0.0, 2.0]]]])
    g = adcore.grad(lambda x: anp.sum(MaxPool2d(2)(x)))(x)
    np.testing.assert_array_equal(g, [[[[0, 1], [0, 0]]]])
    tied = np.array([[[[3.0, 3.0], [0.0, 2.0]]]])  # adcore-kernels' convention; torch gives 1 to one of them
    np.testing.assert_array_equal(
        adcore.grad(lambda x: anp.sum(MaxPool2d(2)(x)))(tied), [[[[0.5, 0.5], [0, 0]]]]
    )


def test_pooling_refusals_name_the_argument_and_reprs_are_torchs():
    with pytest.raises(InvalidValueError, match="MaxPool2d: dilation=2 is not supported"):
        MaxPool2d(2, dilation=2)
    with pytest.raises(InvalidValueError, match="MaxPool2d: return_indices=True is not supported"):
        MaxPool2d(2, return_indices=True)
    with pytest.raises(InvalidValueError, match="MaxPool2d: ceil_mode=True is not supported"):
        MaxPool2d(2, ceil_mode=True)
    with pytest.raises(InvalidValueError, match="AvgPool2d: ceil_mode=True is not supported"):
        AvgPool2d(2, ceil_mode=True)
    with pytest.raises(InvalidValueError, match="padding must be at most half the kernel size"):
        MaxPool2d(2, padding=2)(np.zeros((1, 1, 4, 4)))
    with pytest.raises(InvalidValueError, match="expected a 3-D or 4-D input"):
        MaxPool2d(2)(np.zeros((4, 4)))
    with pytest.raises(InvalidInputError, match="MaxPool2d: the input has dtype int64"):
        MaxPool2d(2)(np.zeros((1, 1, 4, 4), np.int64))
    assert MaxPool2d(2)(np.zeros((1, 1, 4, 4), np.float32)).dtype == np.float32
    assert repr(MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(AvgPool2d(3, 2, 1)) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"


@pytest.mark.parametrize(
    "layer", [MaxPool2d(3, 2, 1), AvgPool2d(3, 2, 1, count_include_pad=False), AvgPool2d(2)]
)
def test_pooling_backends_agree(layer):
    x = np.random.default_rng(0).permutation(50).reshape(2, 1, 5, 5) / 7.0
    cot = np.random.default_rng(1).standard_normal(layer(x).shape)
    grads = [
        adcore.grad(lambda x: anp.sum(layer(x) * cot), backend=b)(x)
        for b in ("reverse", "forward", "numeric")
    ]
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    np.testing.assert_allclose(grads[2], grads[0], rtol=1e-6, atol=1e-7)


POOL_CASES = [
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", (3, 2, 1), {}),
    ("MaxPool2d", ((3, 2), (1, 2), (1, 0)), {}),
    ("AvgPool2d", (2,), {}),
    ("AvgPool2d", (3, 2, 1), {}),
    ("AvgPool2d", (3, 2, 1), {"count_include_pad": False}),
    ("AvgPool2d", ((2, 3), 1, (1, 1)), {"count_include_pad": False}),
    ("AvgPool2d", (3, 1, 1), {"divisor_override": 4}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "args", "kwargs"), POOL_CASES)
def test_pooling_matches_torch(name, args, kwargs, dtype):
    torch = torch_or_skip()
    layer = {"MaxPool2d": MaxPool2d, "AvgPool2d": AvgPool2d}[name](*args, **kwargs)
    torch_layer = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(layer) == repr(torch_layer)
    # distinct values: no tied maxima, where torch's gradient picks one and adcore splits
    x = (np.random.default_rng(0).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 11.0).astype(dtype)
    assert_matches_torch(layer, torch_layer, x)
    assert_matches_torch(layer, torch_layer, x[0])
