"""conv2d's four algorithms and `auto` against torch.nn.functional.conv2d and its autograd gradients.

The same stride x padding x dilation grid as test_conv.py (groups of one), forward, input
gradient and weight gradient, float64 tight and float32 loose, each algorithm where it
applies. torch is optional (CI may not have it): the module is skipped without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import conv

torch = pytest.importorskip("torch")

TOLERANCE = {np.float64: 1e-10, np.float32: 1e-4}  # relative to the largest |torch value| (at least 1)
STRIDES, PADDINGS, DILATIONS = (1, 2, (2, 1)), (0, 1, (2, 0)), (1, 2)
GRID = [(s, p, d) for s in STRIDES for p in PADDINGS for d in DILATIONS]
SHAPES = [((2, 3, 9, 8), (4, 3, 3, 3)), ((1, 2, 7, 10), (3, 2, 2, 3))]  # 3x3 (winograd's) and non-square


def torch_conv(x, w, g, stride, padding, dilation):
    """torch's forward, and its autograd gradients of <g, y> in x and w, as NumPy arrays."""
    tx, tw = (torch.from_numpy(a).requires_grad_() for a in (x, w))
    y = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=padding, dilation=dilation)
    gx, gw = torch.autograd.grad(y, (tx, tw), torch.from_numpy(g))
    return y.detach().numpy(), gx.numpy(), gw.numpy()


def assert_close(got: np.ndarray, expected: np.ndarray, dtype, what: str) -> None:
    assert got.dtype == dtype and got.shape == expected.shape, f"{what}: {got.dtype} {got.shape}"
    error = np.abs(got - expected).max(initial=0) / max(np.abs(expected).max(initial=0), 1.0)
    assert error <= TOLERANCE[dtype], f"{what}: relative error {error:.2e}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shapes", SHAPES, ids=("3x3", "2x3"))
@pytest.mark.parametrize("cell", GRID, ids=lambda c: "s{}-p{}-d{}".format(*c).replace(" ", ""))
def test_every_algorithm_agrees_with_torch_forward_and_both_gradients(cell, shapes, dtype):
    stride, padding, dilation = cell
    x_shape, w_shape = shapes
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)
    out = conv.conv2d(x, w, stride, padding, dilation, "im2col").shape
    g = rng.standard_normal(out).astype(dtype)
    expected = torch_conv(x, w, g, stride, padding, dilation)
    for algorithm in ("auto", *conv.applicable(w_shape[2:], stride, dilation)):
        got = (
            conv.conv2d(x, w, stride, padding, dilation, algorithm),
            conv.conv2d_input_grad(g, w, x_shape[2:], stride, padding, dilation, algorithm),
            conv.conv2d_weight_grad(x, g, w_shape[2:], stride, padding, dilation, algorithm),
        )
        for what, a, b in zip(("forward", "input grad", "weight grad"), got, expected):
            assert_close(a, b, dtype, f"{algorithm} {what}")


@pytest.mark.parametrize("algorithm", ("auto", *conv.ALGORITHMS))
def test_the_benchmark_shape_agrees_with_torch_in_float32(algorithm):
    # the benchmark's layer, batch 2: N, C=64, 32x32, 64 filters 3x3, padding 1 (winograd's and auto's case)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 64, 32, 32), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32) / np.float32(24.0)
    g = rng.standard_normal((2, 64, 32, 32), dtype=np.float32)
    expected = torch_conv(x, w, g, 1, 1, 1)
    got = (
        conv.conv2d(x, w, 1, 1, 1, algorithm),
        conv.conv2d_input_grad(g, w, (32, 32), 1, 1, 1, algorithm),
        conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, algorithm),
    )
    for what, a, b in zip(("forward", "input grad", "weight grad"), got, expected):
        assert_close(a, b, np.float32, f"{algorithm} {what}")
