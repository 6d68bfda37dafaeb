"""adcore_nn.Flatten and Unflatten: torch's reshapes, their errors and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.flatten import Flatten, Unflatten, flatten
from nn_layer_checks import assert_matches_torch, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError

X = np.arange(24.0).reshape(2, 3, 4)


def test_flatten_shapes_by_hand():
    assert Flatten()(X).shape == (2, 12)
    assert Flatten(0, 1)(X).shape == (6, 4)
    assert Flatten(-2, -1)(X).shape == (2, 12)
    assert Flatten(1, 1)(X).shape == (2, 3, 4)
    np.testing.assert_array_equal(Flatten()(X)[1], np.arange(12.0, 24.0))
    assert flatten(np.array(5.0)).shape == (1,)
    assert repr(Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_unflatten_shapes_by_hand():
    y = Unflatten(1, (3, 4))(np.arange(24.0).reshape(2, 12))
    np.testing.assert_array_equal(y, X)
    assert Unflatten(-1, [2, -1])(np.zeros((5, 6))).shape == (5, 2, 3)
    assert repr(Unflatten(1, (3, 4))) == "Unflatten(dim=1, unflattened_size=(3, 4))"


def test_bad_axes_and_sizes_are_typed_errors_and_the_next_call_works():
    with pytest.raises(InvalidValueError, match="Flatten: start_dim=3 is out of range for a 3-D input"):
        Flatten(3)(X)
    with pytest.raises(InvalidValueError, match="comes after end_dim"):
        Flatten(2, 1)(X)
    with pytest.raises(
        InvalidValueError, match=r"unflattened_size \(5, 2\) does not split axis 1 of size 12"
    ):
        Unflatten(1, (5, 2))(np.zeros((2, 12)))
    with pytest.raises(InvalidValueError, match="does not split"):
        Unflatten(1, (5, -1))(np.zeros((2, 12)))
    with pytest.raises(InvalidValueError, match="tuple or list of ints"):
        Unflatten(1, 12)
    assert Flatten()(X).shape == (2, 12)


def test_gradients_flow_back_in_the_input_shape_on_each_backend():
    cot = np.random.default_rng(0).standard_normal((2, 12))
    for backend in ("reverse", "forward", "numeric"):
        g = adcore.grad(lambda x: anp.sum(Flatten()(x) * cot), backend=backend)(X)
        np.testing.assert_allclose(g, cot.reshape(2, 3, 4), rtol=1e-8, atol=1e-9)
        g = adcore.grad(lambda x: anp.sum(Unflatten(1, (3, 4))(x) ** 2), backend=backend)(cot)
        np.testing.assert_allclose(g, 2 * cot, rtol=1e-8, atol=1e-9)
    assert Flatten()(X.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(dtype):
    torch = torch_or_skip()
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(dtype)
    assert_matches_torch(Flatten(), torch.nn.Flatten(), x)
    assert_matches_torch(Flatten(0, 2), torch.nn.Flatten(0, 2), x)
    assert_matches_torch(Unflatten(2, (2, 2)), torch.nn.Unflatten(2, (2, 2)), x)
