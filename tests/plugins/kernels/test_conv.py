"""conv2d's four algorithms and `auto` against the NumPy reference, each other, and their own adjoint identities.

Forward, input gradient and weight gradient over strides, paddings (wider than the kernel
too), dilations, odd and non-square sizes, batch 1 and 1 channel; float64 tight, float32
loose. Then the choice `auto` makes, and every error message (after which the next call works).
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import _winograd, conv, reference
from adcore_kernels._numba import PARALLEL_FROM
from hypothesis import given, settings
from hypothesis import strategies as st

from adcore.errors import InvalidInputError, InvalidValueError

TOLERANCE = {np.float64: 1e-10, np.float32: 1e-4}  # relative to the largest |reference value| (at least 1)

# (x shape, w shape, stride, padding, dilation)
CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1),  # winograd applies; odd sizes, so tiles hang off the edge
    ((1, 1, 7, 7), (1, 1, 3, 3), 1, 0, 1),  # batch 1, one channel, no padding
    ((2, 3, 7, 5), (2, 3, 3, 3), 1, 3, 1),  # padding wider than the kernel: the input gradient crops g
    ((1, 2, 11, 7), (3, 2, 2, 4), 2, (1, 2), (2, 1)),  # non-square kernel, per-axis padding and dilation
    ((2, 2, 10, 9), (3, 2, 3, 2), (3, 2), 2, 2),  # per-axis stride, rows past the last window
    ((1, 1, 5, 5), (1, 1, 5, 5), 3, 4, 1),  # kernel as large as the input
    ((3, 2, 6, 13), (2, 2, 1, 1), 1, 0, 1),  # 1x1 kernel
    ((1, 2, 12, 12), (2, 2, 7, 7), 1, 3, 1),  # a large kernel (auto takes fft)
]


def case_id(case) -> str:
    x_shape, w_shape, s, p, d = case
    return f"x{x_shape}-w{w_shape}-s{s}-p{p}-d{d}".replace(" ", "")


def random_arrays(case, dtype, seed=0):
    x_shape, w_shape, s, p, d = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    g = rng.standard_normal(reference.conv2d(x, w, s, p, d).shape).astype(dtype)
    return x, w, g


def assert_close(got: np.ndarray, expected: np.ndarray, dtype, what: str) -> None:
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    error = np.abs(got - expected).max(initial=0) / max(np.abs(expected).max(initial=0), 1.0)
    assert error <= TOLERANCE[dtype], f"{what}: relative error {error:.2e}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_algorithm_matches_the_reference(case, dtype):
    x_shape, w_shape, s, p, d = case
    x, w, g = random_arrays(case, dtype)
    y = reference.conv2d(x, w, s, p, d)
    gx = reference.conv2d_input_grad(g, w, x_shape[2:], s, p, d)
    gw = reference.conv2d_weight_grad(x, g, w_shape[2:], s, p, d)
    for algorithm in ("auto", *conv.applicable(w_shape[2:], s, d)):
        assert_close(conv.conv2d(x, w, s, p, d, algorithm), y, dtype, f"{algorithm} forward")
        got = conv.conv2d_input_grad(g, w, x_shape[2:], s, p, d, algorithm)
        assert_close(got, gx, dtype, f"{algorithm} input grad")
        got = conv.conv2d_weight_grad(x, g, w_shape[2:], s, p, d, algorithm)
        assert_close(got, gw, dtype, f"{algorithm} weight grad")


# the grid the issue asks for: strides x paddings x dilations (groups of one), a 3x3 kernel so
# winograd takes the stride-1, dilation-1 cells; odd, non-square input
STRIDES, PADDINGS, DILATIONS = (1, 2, (2, 1)), (0, 1, (2, 0)), (1, 2)
GRID = [(s, p, d) for s in STRIDES for p in PADDINGS for d in DILATIONS]
GRID_SHAPES = ((2, 3, 9, 8), (4, 3, 3, 3))


def grid_id(cell) -> str:
    return "s{}-p{}-d{}".format(*cell).replace(" ", "")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cell", GRID, ids=grid_id)
def test_every_algorithm_on_the_stride_padding_dilation_grid(cell, dtype):
    s, p, d = cell
    case = (*GRID_SHAPES, s, p, d)
    x, w, g = random_arrays(case, dtype, seed=11)
    x64, w64, g64 = (a.astype(np.float64) for a in (x, w, g))  # the reference in float64 for both
    expected = (
        reference.conv2d(x64, w64, s, p, d),
        reference.conv2d_input_grad(g64, w64, x.shape[2:], s, p, d),
        reference.conv2d_weight_grad(x64, g64, w.shape[2:], s, p, d),
    )
    algorithms = conv.applicable(w.shape[2:], s, d)
    assert ("winograd" in algorithms) == (s == 1 and d == 1)
    for algorithm in ("auto", *algorithms):
        got = (
            conv.conv2d(x, w, s, p, d, algorithm),
            conv.conv2d_input_grad(g, w, x.shape[2:], s, p, d, algorithm),
            conv.conv2d_weight_grad(x, g, w.shape[2:], s, p, d, algorithm),
        )
        for what, a, b in zip(("forward", "input grad", "weight grad"), got, expected):
            assert_close(a, b.astype(dtype), dtype, f"{algorithm} {what}")


@st.composite
def geometries(draw):
    """A random convolution whose dilated kernel fits in the padded input."""
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    s, p, d = (tuple(draw(st.integers(lo, hi)) for _ in "hw") for lo, hi in ((1, 3), (0, 3), (1, 2)))
    h = draw(st.integers(max(1, d[0] * (kh - 1) + 1 - 2 * p[0]), 9))
    w = draw(st.integers(max(1, d[1] * (kw - 1) + 1 - 2 * p[1]), 9))
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (n, c, h, w), (o, c, kh, kw), s, p, d


@settings(max_examples=40, deadline=None)
@given(geometries(), st.integers(0, 2**32 - 1))
def test_algorithms_agree_on_random_geometries(case, seed):
    x_shape, w_shape, s, p, d = case
    x, w, g = random_arrays(case, np.float64, seed)
    expected = (
        reference.conv2d(x, w, s, p, d),
        reference.conv2d_input_grad(g, w, x_shape[2:], s, p, d),
        reference.conv2d_weight_grad(x, g, w_shape[2:], s, p, d),
    )
    for algorithm in conv.applicable(w_shape[2:], s, d):
        got = (
            conv.conv2d(x, w, s, p, d, algorithm),
            conv.conv2d_input_grad(g, w, x_shape[2:], s, p, d, algorithm),
            conv.conv2d_weight_grad(x, g, w_shape[2:], s, p, d, algorithm),
        )
        for what, a, b in zip(("forward", "input grad", "weight grad"), got, expected):
            assert_close(a, b, np.float64, f"{algorithm} {what}")


@pytest.mark.parametrize("algorithm", conv.ALGORITHMS)
def test_the_gradients_are_the_adjoints_of_the_forward(algorithm):
    # <g, conv2d(x, w)> = <conv2d_input_grad(g, w), x> = <conv2d_weight_grad(x, g), w>, whatever the reference says
    case = ((2, 4, 9, 10), (5, 4, 3, 3), 1, 2, 1)
    x, w, g = random_arrays(case, np.float64, seed=7)
    pairing = np.vdot(g, conv.conv2d(x, w, 1, 2, 1, algorithm))
    assert np.isclose(
        np.vdot(conv.conv2d_input_grad(g, w, (9, 10), 1, 2, 1, algorithm), x), pairing, rtol=1e-12
    )
    assert np.isclose(
        np.vdot(conv.conv2d_weight_grad(x, g, (3, 3), 1, 2, 1, algorithm), w), pairing, rtol=1e-12
    )


def test_mixed_dtypes_compute_in_float64_and_views_are_accepted():
    x, w, g = random_arrays(CASES[0], np.float64)
    x32 = x.astype(np.float32)
    y = conv.conv2d(x32, w, padding=1, algorithm="winograd")
    assert y.dtype == np.float64
    assert_close(y, reference.conv2d(x32.astype(np.float64), w, 1, 1, 1), np.float64, "mixed")
    x_view = np.asfortranarray(x)[:, :, ::-1][:, :, ::-1]  # not C-contiguous
    for algorithm in conv.ALGORITHMS:
        assert_close(
            conv.conv2d(x_view, w, 1, 1, 1, algorithm), reference.conv2d(x, w, 1, 1, 1), np.float64, algorithm
        )


def test_an_empty_batch_gives_empty_results():
    x, w, g = np.zeros((0, 3, 6, 6)), np.ones((2, 3, 3, 3)), np.zeros((0, 2, 6, 6))
    for algorithm in conv.ALGORITHMS:
        assert conv.conv2d(x, w, padding=1, algorithm=algorithm).shape == (0, 2, 6, 6)
        assert conv.conv2d_input_grad(g, w, (6, 6), padding=1, algorithm=algorithm).shape == (0, 3, 6, 6)
        gw = conv.conv2d_weight_grad(x, g, (3, 3), padding=1, algorithm=algorithm)
        assert gw.shape == (2, 3, 3, 3) and not gw.any()


def test_winograd_on_large_arrays_runs_its_parallel_transforms_and_agrees_with_the_reference():
    # x and g have PARALLEL_FROM elements: forward and both gradients go through the parallel
    # variants of all three transforms, which the small arrays of the other tests never reach
    case = ((2, 4, 64, 64), (4, 4, 3, 3), 1, 1, 1)
    x, w, g = random_arrays(case, np.float64, seed=3)
    assert x.size == g.size == PARALLEL_FROM
    transforms = (_winograd._input_transform, _winograd._output_transform, _winograd._cotangent_transform)
    assert_close(
        conv.conv2d(x, w, 1, 1, 1, "winograd"), reference.conv2d(x, w, 1, 1, 1), np.float64, "forward"
    )
    got = conv.conv2d_input_grad(g, w, (64, 64), 1, 1, 1, "winograd")
    assert_close(got, reference.conv2d_input_grad(g, w, (64, 64), 1, 1, 1), np.float64, "input grad")
    got = conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, "winograd")
    assert_close(got, reference.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1), np.float64, "weight grad")
    assert all(t.parallel.signatures for t in transforms)


# ----------------------------------------------------------------------------- choosing
def test_winograd_applies_to_3x3_stride_1_dilation_1_only():
    assert conv.applicable(3) == conv.ALGORITHMS
    assert conv.applicable((3, 3), stride=(1, 1), dilation=1) == conv.ALGORITHMS
    for kernel, stride, dilation in (
        ((5, 5), 1, 1),
        ((3, 2), 1, 1),
        ((3, 3), 2, 1),
        ((3, 3), (1, 2), 1),
        (3, 1, 2),
    ):
        assert conv.applicable(kernel, stride, dilation) == ("direct", "im2col", "fft")


@pytest.mark.parametrize("function", conv.FUNCTIONS)
def test_auto_rule(function):
    choose = conv.choose_algorithm
    assert choose((8, 64, 32, 32), (64, 64, 3, 3), 1, 1, 1, function) == "winograd"
    assert choose((8, 64, 32, 32), (4, 64, 3, 3), 1, 1, 1, function) == "winograd"
    assert choose((8, 2, 32, 32), (2, 2, 3, 3), 1, 1, 1, function) == "winograd"
    assert choose((8, 3, 32, 32), (64, 3, 3, 3), 1, 1, 1, function) == "im2col"  # few input channels
    assert choose((8, 16, 32, 32), (64, 16, 3, 3), 1, 1, 1, function) == "im2col"
    assert choose((8, 64, 32, 32), (64, 64, 3, 3), 2, 1, 1, function) == "im2col"  # strided
    assert choose((2, 8, 64, 64), (8, 8, 15, 15), 1, 7, 1, function) == "fft"  # large kernel
    assert choose((2, 8, 64, 64), (8, 8, 15, 15), 2, 7, 1, function) == "im2col"
    assert choose((8, 64, 32, 32), (64, 64, 5, 5), 1, 2, 1, function) == "im2col"  # 12 * 64 > 8 * 25
    # fft: 5x5 or larger at stride 1 when 12 * O <= N * kh * kw (the batch pays for the kernels' spectra)
    assert choose((8, 64, 32, 32), (16, 64, 5, 5), 1, 2, 1, function) == "fft"  # 192 <= 200
    assert choose((8, 64, 32, 32), (17, 64, 5, 5), 1, 2, 1, function) == "im2col"  # 204 > 200
    assert choose((8, 64, 32, 32), (32, 64, 7, 7), 1, 3, 1, function) == "fft"  # 384 <= 392
    assert choose((2, 64, 32, 32), (64, 64, 7, 7), 1, 3, 1, function) == "im2col"  # 768 > 98
    assert choose((64, 3, 32, 32), (3, 3, 3, 3), 1, 1, 2, function) == "im2col"  # 9 taps, dilated
    assert choose((64, 3, 32, 32), (3, 3, 5, 1), 1, 0, 1, function) == "im2col"  # 5 taps


# ----------------------------------------------------------------------------- errors
X, W = np.ones((2, 3, 6, 6)), np.ones((4, 3, 3, 3))
G = np.ones((2, 4, 6, 6))  # the cotangent of conv2d(X, W, padding=1)

ERRORS = {
    "x-ndim": (
        lambda: conv.conv2d(X[0], W),
        r"op 'conv2d': x must be a 4-D array \(N, C, H, W\), got shape \(3, 6, 6\)",
    ),
    "w-ndim": (
        lambda: conv.conv2d(X, W[0]),
        r"op 'conv2d': w must be a 4-D array \(O, C, kh, kw\), got shape",
    ),
    "g-ndim": (
        lambda: conv.conv2d_input_grad(G[0], W, (6, 6), padding=1),
        r"op 'conv2d_input_grad': g must be a 4-D array",
    ),
    "channels": (
        lambda: conv.conv2d(X, np.ones((4, 2, 3, 3))),
        r"op 'conv2d': x has 3 channels but w .* expects 2",
    ),
    "kernel-too-large": (
        lambda: conv.conv2d(X, np.ones((4, 3, 9, 9)), padding=1),
        r"op 'conv2d': the 9x9 kernel .* is larger than the padded input 8x8 .*more padding",
    ),
    "dilated-too-large": (
        lambda: conv.conv2d(X, W, dilation=3),
        r"op 'conv2d': the 3x3 kernel \(spanning 7x7",
    ),
    "int-dtype": (
        lambda: conv.conv2d(X.astype(int), W),
        r"op 'conv2d': x has dtype int64; conv2d takes float32 or float64",
    ),
    "complex-dtype": (lambda: conv.conv2d(X, W + 0j), r"op 'conv2d': w has dtype complex128; .*astype"),
    "stride-0": (lambda: conv.conv2d(X, W, stride=0), r"op 'conv2d': stride must be positive ints, got 0"),
    "dilation-negative": (
        lambda: conv.conv2d(X, W, dilation=(1, -1)),
        r"op 'conv2d': dilation must be positive ints",
    ),
    "padding-negative": (
        lambda: conv.conv2d(X, W, padding=-1),
        r"op 'conv2d': padding must be non-negative ints, got -1",
    ),
    "stride-triple": (
        lambda: conv.conv2d(X, W, stride=(1, 1, 1)),
        r"op 'conv2d': stride must be an int or a pair of ints",
    ),
    "stride-float": (
        lambda: conv.conv2d(X, W, stride=1.5),
        r"op 'conv2d': stride must be an int or a pair of ints",
    ),
    "unknown-algorithm": (
        lambda: conv.conv2d(X, W, algorithm="gemm"),
        r"op 'conv2d': unknown algorithm 'gemm'; choose one of auto, direct, im2col, fft, winograd",
    ),
    "winograd-5x5": (
        lambda: conv.conv2d(X, np.ones((4, 3, 5, 5)), padding=2, algorithm="winograd"),
        r"op 'conv2d': algorithm 'winograd' does not apply to a 5x5 kernel .*algorithms that apply: direct, im2col, fft$",
    ),
    "winograd-stride-input-grad": (
        lambda: conv.conv2d_input_grad(G[:, :, :3, :3], W, (6, 6), stride=2, padding=1, algorithm="winograd"),
        r"op 'conv2d_input_grad': algorithm 'winograd' does not apply .* stride \(2, 2\).*: direct, im2col, fft$",
    ),
    "winograd-dilation-weight-grad": (
        lambda: conv.conv2d_weight_grad(
            X, G[:, :, :4, :4], (3, 3), padding=1, dilation=2, algorithm="winograd"
        ),
        r"op 'conv2d_weight_grad': algorithm 'winograd' does not apply .* dilation \(2, 2\).*: direct, im2col, fft$",
    ),
    "input-grad-g-shape": (
        lambda: conv.conv2d_input_grad(G, W, (6, 6), padding=0),
        r"op 'conv2d_input_grad': the cotangent g has shape \(2, 4, 6, 6\) but the convolution's output is \(2, 4, 4, 4\)",
    ),
    "input-grad-g-channels": (
        lambda: conv.conv2d_input_grad(G[:, :3], W, (6, 6), padding=1),
        r"op 'conv2d_input_grad': the cotangent g has shape \(2, 3, 6, 6\) but the convolution's output is \(2, 4, 6, 6\)",
    ),
    "weight-grad-g-batch": (
        lambda: conv.conv2d_weight_grad(X, G[:1], (3, 3), padding=1),
        r"op 'conv2d_weight_grad': the cotangent g has shape \(1, 4, 6, 6\) but the convolution's output is \(2, 4, 6, 6\)",
    ),
    "kernel-size-zero": (
        lambda: conv.conv2d_weight_grad(X, G, (0, 3), padding=1),
        r"op 'conv2d_weight_grad': kernel_size must be positive",
    ),
    # a kernel with a zero dimension: the output-size formula alone gave a larger all-zero output
    "w-kernel-height-zero": (
        lambda: conv.conv2d(X, np.ones((4, 3, 0, 3))),
        r"op 'conv2d': the kernel is 0x3, empty; w \(O, C, kh, kw\) needs kh >= 1 and kw >= 1",
    ),
    "w-kernel-width-zero-input-grad": (
        lambda: conv.conv2d_input_grad(G, np.ones((4, 3, 3, 0)), (6, 6)),
        r"op 'conv2d_input_grad': the kernel is 3x0, empty",
    ),
    "input-size-bad": (
        lambda: conv.conv2d_input_grad(G, W, "6x6", padding=1),
        r"op 'conv2d_input_grad': input_size must be an int or a pair of ints",
    ),
    "unknown-function": (
        lambda: conv.choose_algorithm(X.shape, W.shape, function="hessian"),
        r"choose_algorithm: unknown",
    ),
}


@pytest.mark.parametrize("call, message", ERRORS.values(), ids=ERRORS.keys())
def test_errors_say_what_is_wrong_and_the_next_call_works(call, message):
    # typed: an AdcoreError that is also the builtin a caller may already catch
    expected_type = InvalidInputError if "dtype" in message else InvalidValueError
    with pytest.raises(expected_type, match=message):
        call()
    y = conv.conv2d(X, W, padding=1, algorithm="winograd")
    np.testing.assert_allclose(y, reference.conv2d(X, W, 1, 1, 1), rtol=1e-12)
