"""adcore_nn.Embedding: rows by integer index, accumulated gradients, padding_idx, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn.sparse import Embedding
from nn_layer_checks import assert_matches_torch, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError

TABLE = np.arange(12.0).reshape(4, 3)


def table(padding_idx=None, dtype=np.float64):
    layer = Embedding(4, 3, padding_idx=padding_idx, dtype=dtype)
    layer.weight[...] = TABLE
    return layer


def grad_of_table(layer, idx, cot, backend="reverse"):
    return adcore.grad(lambda m: anp.sum(m(idx) * cot), backend=backend)(layer).weight


def test_rows_by_hand():
    out = table()(np.array([[2, 0], [3, 3]]))
    np.testing.assert_array_equal(out, TABLE[[[2, 0], [3, 3]]])
    assert out.shape == (2, 2, 3)
    assert table(dtype=np.float32)(np.array([1], np.uint8)).dtype == np.float32


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_a_repeated_index_accumulates_its_gradient(backend):
    idx = np.array([1, 3, 1, 1])
    cot = np.arange(12.0).reshape(4, 3)
    g = grad_of_table(table(), idx, cot, backend)
    expected = np.zeros((4, 3))
    expected[1] = cot[0] + cot[2] + cot[3]
    expected[3] = cot[1]
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_padding_idx_row_is_read_but_gets_no_gradient(backend):
    layer = table(padding_idx=-1)
    assert layer.padding_idx == 3
    fresh = Embedding(4, 3, padding_idx=1, generator=np.random.default_rng(0))
    np.testing.assert_array_equal(fresh.weight[1], 0)  # torch zeroes the padding row at init
    idx = np.array([3, 0, 3])
    np.testing.assert_array_equal(layer(idx)[0], TABLE[3])  # a user-set padding row is still read
    g = grad_of_table(layer, idx, np.ones((3, 3)), backend)
    np.testing.assert_array_equal(g, [[1, 1, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0]])


def test_attributes_init_repr_and_state_dict():
    layer = Embedding(1000, 64, generator=np.random.default_rng(0))
    assert layer.weight.shape == (1000, 64) and layer.weight.dtype == np.float32
    w = layer.weight
    assert abs(w.mean()) < 5 / np.sqrt(w.size) and w.std() == pytest.approx(1.0, rel=0.03)  # N(0, 1)
    assert repr(Embedding(10, 3, padding_idx=-1)) == "Embedding(10, 3, padding_idx=9)"
    assert list(layer.state_dict()) == ["weight"]
    given = np.ones((4, 3))
    assert Embedding(4, 3, _weight=given).weight is given


def test_refusals_and_bad_indices_are_typed_errors_and_the_next_call_works():
    with pytest.raises(InvalidValueError, match="max_norm=1.0 is not supported"):
        Embedding(4, 3, max_norm=1.0)
    with pytest.raises(InvalidValueError, match="scale_grad_by_freq=True is not supported"):
        Embedding(4, 3, scale_grad_by_freq=True)
    with pytest.raises(InvalidValueError, match="sparse=True is not supported"):
        Embedding(4, 3, sparse=True)
    with pytest.raises(InvalidValueError, match="padding_idx must be within num_embeddings"):
        Embedding(4, 3, padding_idx=4)
    with pytest.raises(InvalidValueError, match="shape of _weight"):
        Embedding(4, 3, _weight=np.ones((3, 3)))
    layer = table()
    with pytest.raises(InvalidValueError, match="index 4 is out of range for num_embeddings=4"):
        layer(np.array([0, 4]))
    with pytest.raises(InvalidValueError, match="index -1 is out of range"):
        layer(np.array([-1]))  # NumPy would wrap around to the last row; torch refuses
    with pytest.raises(InvalidInputError, match="indices must be an integer array, got float64"):
        layer(np.array([0.0, 1.0]))
    with pytest.raises(InvalidInputError, match="got list"):
        layer([0, 1])
    np.testing.assert_array_equal(layer(np.array([1])), TABLE[[1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_matches_torch(dtype, padding_idx):
    torch = torch_or_skip()
    layer = Embedding(5, 3, padding_idx=padding_idx, dtype=dtype, generator=np.random.default_rng(0))
    layer.weight[...] = np.random.default_rng(1).standard_normal((5, 3))  # padding row nonzero too
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    assert_matches_torch(layer, torch.nn.Embedding(5, 3, padding_idx=padding_idx), idx)
