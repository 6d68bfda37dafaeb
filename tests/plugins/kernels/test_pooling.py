"""The pooling kernels against adcore_kernels.reference; ties, padding, and the transposes."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import ops, reference

import adcore

TOLERANCE = {np.float64: 1e-12, np.float32: 1e-6}  # float64 tight, float32 loose
# (shape, kernel_size, stride, padding): 2-D and with leading axes, odd sizes, pairs, overlapping windows
CALLS = [
    ((4, 4), 2, None, 0),
    ((3, 7, 5), 3, 2, 1),
    ((2, 3, 6, 7), (2, 3), (1, 2), (1, 1)),
    ((1, 1, 5, 4), (3, 1), 1, (1, 0)),
    ((2, 9, 8), 4, 3, 2),
]
RULE_BACKENDS = ("reverse", "forward", "symbolic")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), CALLS)
def test_max_and_avg_pooling_match_the_reference(shape, kernel, stride, padding, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    for op, expected in (
        (ops.max_pool2d, reference.max_pool2d(x, kernel, stride, padding)),
        (ops.avg_pool2d, reference.avg_pool2d(x, kernel, stride, padding)),
    ):
        got = op(x, kernel, stride, padding)
        assert got.dtype == dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), CALLS)
def test_the_linear_maps_are_transposes_and_match_the_reference_gradients(shape, kernel, stride, padding):
    rng = np.random.default_rng(1)
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape)  # distinct: no ties
    out = reference.max_pool2d(x, kernel, stride, padding).shape
    g, t = rng.standard_normal((2, *out)), rng.standard_normal((2, *shape))  # a batch of two leading
    scatter = ops.max_pool2d_scatter(g, x, kernel, stride, padding)
    gather = ops.max_pool2d_gather(t, x, kernel, stride, padding)
    assert np.sum(scatter * t) == pytest.approx(np.sum(g * gather), rel=1e-12)
    # without ties the gather reads t where the window's maximum is: the reference's argmax
    windows = reference.pool_windows(x, kernel, stride, padding, fill=-np.inf)
    at_max = np.take_along_axis(
        reference.pool_windows(t, kernel, stride, padding), windows.argmax(-1)[None, ..., None], -1
    )
    np.testing.assert_allclose(gather, at_max[..., 0], rtol=1e-12)
    spread = ops.avg_pool2d_grad(g, shape[-2:], kernel, stride, padding)
    assert np.sum(spread * t) == pytest.approx(
        np.sum(g * ops.avg_pool2d(t, kernel, stride, padding)), rel=1e-12
    )


def test_a_tie_splits_the_derivative_equally_among_the_maxima_on_every_backend():
    x = np.array([[1.0, 3.0, 0.0, 0.0], [3.0, 2.0, 0.0, 0.0]])  # left window: two maxima; right: four
    expected = np.array([[0.0, 0.5, 0.25, 0.25], [0.5, 0.0, 0.25, 0.25]])
    for backend in RULE_BACKENDS:
        got = adcore.grad(lambda x: adcore.numpy.sum(ops.max_pool2d(x, 2)), backend=backend)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-15, err_msg=backend)
    t = np.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(ops.max_pool2d_gather(t, x, 2), [[(1 + 4) / 2, (2 + 3 + 6 + 7) / 4]])
    np.testing.assert_allclose(
        ops.max_pool2d_scatter(np.array([[2.0, 8.0]]), x, 2), [[0, 1, 2, 2], [1, 0, 2, 2]]
    )


def test_padding_never_wins_a_max_and_counts_as_zero_in_an_average():
    x = -np.arange(1.0, 10.0).reshape(3, 3)  # all negative: a zero (or -inf) pad would show
    pooled = ops.max_pool2d(x, 3, stride=2, padding=1)
    np.testing.assert_array_equal(pooled, [[-1.0, -2.0], [-4.0, -5.0]])  # each window's real top-left
    gx = adcore.grad(lambda x: adcore.numpy.sum(ops.max_pool2d(x, 3, stride=2, padding=1)))(x)
    np.testing.assert_array_equal(gx, [[1, 1, 0], [1, 1, 0], [0, 0, 0]])
    averaged = ops.avg_pool2d(np.ones((3, 3)), 3, stride=2, padding=1)
    np.testing.assert_allclose(averaged, np.full((2, 2), 4 / 9))  # 4 real ones in each 3x3 window


def test_a_nan_in_a_window_comes_out_and_takes_the_gradient_as_in_numpy():
    x = np.array([[1.0, np.nan], [2.0, 0.0]])
    assert np.isnan(ops.max_pool2d(x, 2)).all() and np.isnan(reference.max_pool2d(x, 2)).all()
    np.testing.assert_array_equal(
        ops.max_pool2d_scatter(np.array([[1.0]]), x, 2), [[0, 1], [0, 0]]
    )  # to the NaN


def test_the_leading_axes_of_the_linear_maps_broadcast_against_x_both_ways():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 1, 5, 4))
    t = rng.standard_normal((1, 3, 5, 4))  # broadcasts with x's (2, 1) to (2, 3)
    gathered = ops.max_pool2d_gather(t, x, 2, 1)
    expected = ops.max_pool2d_gather(np.broadcast_to(t, (2, 3, 5, 4)), np.broadcast_to(x, (2, 3, 5, 4)), 2, 1)
    assert gathered.shape == (2, 3, 4, 3)
    np.testing.assert_array_equal(gathered, expected)
