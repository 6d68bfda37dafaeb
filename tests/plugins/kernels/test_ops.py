"""The kernel ops' values, dtypes and checks: against adcore_kernels.reference, errors naming the op."""

from __future__ import annotations

import re
import subprocess
import sys

import adcore_kernels
import numpy as np
import pytest
from adcore_kernels import ops, reference

import adcore
from adcore.errors import AdcoreError

ALGORITHMS = ("auto", "direct", "im2col", "fft", "winograd")
TOLERANCE = {np.float64: 1e-12, np.float32: 1e-4}  # float64 tight, float32 loose


def _draw(rng: np.random.Generator, *shapes: tuple[int, ...], dtype=np.float64) -> list[np.ndarray]:
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


# --- values -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_conv2d_and_its_gradients_match_the_reference_with_every_algorithm(algorithm, dtype):
    rng = np.random.default_rng(0)
    x, w, g = _draw(rng, (2, 3, 6, 5), (4, 3, 3, 3), (2, 4, 6, 5), dtype=dtype)
    params = {"padding": 1, "algorithm": algorithm}  # 3x3, stride 1: winograd applies
    cases = [
        (ops.conv2d(x, w, **params), reference.conv2d(x, w, padding=1)),
        (ops.conv2d_input_grad(g, w, (6, 5), **params), reference.conv2d_input_grad(g, w, (6, 5), padding=1)),
        (
            ops.conv2d_weight_grad(x, g, (3, 3), **params),
            reference.conv2d_weight_grad(x, g, (3, 3), padding=1),
        ),
    ]
    for got, expected in cases:
        assert got.dtype == dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("algorithm", ("direct", "im2col", "fft"))
def test_conv2d_with_stride_padding_and_dilation_pairs_matches_the_reference(algorithm):
    rng = np.random.default_rng(1)
    x, w = _draw(rng, (2, 2, 7, 8), (3, 2, 2, 3))
    geometry = {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 1)}
    got = ops.conv2d(x, w, **geometry, algorithm=algorithm)
    np.testing.assert_allclose(got, reference.conv2d(x, w, **geometry), rtol=1e-12, atol=1e-12)


def test_the_gradient_ops_are_the_transposes_of_conv2d():
    # <conv2d_input_grad(g, w), h> = <g, conv2d(h, w)> and <conv2d_weight_grad(x, g), v> = <g, conv2d(x, v)>
    rng = np.random.default_rng(2)
    geometry = {"stride": 2, "padding": 1, "dilation": (1, 2)}
    x, w, v = _draw(rng, (2, 3, 7, 6), (2, 3, 3, 2), (2, 3, 3, 2))
    g = rng.standard_normal(ops.conv2d(x, w, **geometry).shape)
    h = rng.standard_normal(x.shape)
    left = np.sum(ops.conv2d_input_grad(g, w, x.shape[2:], **geometry) * h)
    assert left == pytest.approx(np.sum(g * ops.conv2d(h, w, **geometry)), rel=1e-12)
    left = np.sum(ops.conv2d_weight_grad(x, g, w.shape[2:], **geometry) * v)
    assert left == pytest.approx(np.sum(g * ops.conv2d(x, v, **geometry)), rel=1e-12)


def test_mixed_float32_and_float64_give_float64_and_params_may_be_positional():
    rng = np.random.default_rng(3)
    x, w = _draw(rng, (1, 2, 5, 5), (2, 2, 3, 3))
    y = ops.conv2d(x.astype(np.float32), w, 2, 1)  # stride 2, padding 1
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, reference.conv2d(x.astype(np.float32), w, 2, 1), rtol=1e-12)
    pooled = ops.max_pool2d(x.astype(np.float32), 2)
    assert pooled.dtype == np.float32 and pooled.shape == (1, 2, 2, 2)  # stride defaults to the kernel


def test_the_package_exports_the_ops_and_optim():
    assert adcore_kernels.conv2d is adcore.ops.conv2d is ops.conv2d
    assert adcore_kernels.max_pool2d is adcore.ops["max_pool2d"]
    assert adcore_kernels.avg_pool2d is adcore.ops.avg_pool2d
    assert adcore_kernels.optim.__name__ == "adcore_kernels.optim"


def test_loading_the_registry_imports_neither_numba_nor_the_kernels():
    code = (
        "import sys, adcore, adcore_kernels; adcore.ops.conv2d; "
        "print(sorted(m for m in ('numba', 'adcore_kernels.pooling', 'adcore_kernels.conv', 'sympy') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- errors: each names the op, and the next call works -------------------------------------------------

X = np.zeros((1, 2, 5, 5))
W = np.zeros((3, 2, 3, 3))
G = np.zeros((1, 3, 3, 3))

BAD_CALLS = [
    ("conv2d", lambda: ops.conv2d(X[0], W), ValueError, "x must be a 4-D array (N, C, H, W)"),
    (
        "conv2d",
        lambda: ops.conv2d(X, W[:, :1]),
        ValueError,
        "x has 2 channels but w (O, C, kh, kw) = (3, 1, 3, 3) expects 1",
    ),
    ("conv2d", lambda: ops.conv2d(X.astype(int), W), TypeError, "takes float32 or float64 arrays"),
    (
        "conv2d",
        lambda: ops.conv2d(X, np.zeros((3, 2, 7, 3))),
        ValueError,
        "is larger than the padded input 5x5",
    ),
    ("conv2d", lambda: ops.conv2d(X, W, dilation=3), ValueError, "spanning 7x7 at dilation (3, 3)"),
    ("conv2d", lambda: ops.conv2d(X, W, stride=0), ValueError, "stride must be positive ints, got 0"),
    ("conv2d", lambda: ops.conv2d(X, W, padding=-1), ValueError, "padding must be non-negative ints, got -1"),
    ("conv2d", lambda: ops.conv2d(X, W, stride=(1, 2, 3)), ValueError, "stride must be an int or a pair"),
    (
        "conv2d",
        lambda: ops.conv2d(X, W, algorithm="gemm"),
        ValueError,
        "unknown algorithm 'gemm'; choose one of auto",
    ),
    ("conv2d", lambda: ops.conv2d(X, W, stride=2, algorithm="winograd"), ValueError, "winograd"),
    (
        "conv2d_input_grad",
        lambda: ops.conv2d_input_grad(G, W, (6, 6)),
        ValueError,
        "g has shape (1, 3, 3, 3) but the convolution's output is (1, 3, 4, 4)",
    ),
    (
        "conv2d_input_grad",
        lambda: ops.conv2d_input_grad(G[:, :2], W, (5, 5)),
        ValueError,
        "g has shape (1, 2, 3, 3) but the convolution's output is (1, 3, 3, 3)",
    ),
    (
        "conv2d_weight_grad",
        lambda: ops.conv2d_weight_grad(X, G, (2, 2)),
        ValueError,
        "g has shape (1, 3, 3, 3) but the convolution's output is (1, 3, 4, 4)",
    ),
    (
        "conv2d_weight_grad",
        lambda: ops.conv2d_weight_grad(X, np.zeros((2, 3, 3, 3)), (3, 3)),
        ValueError,
        "g has shape (2, 3, 3, 3) but the convolution's output is (1, 3, 3, 3)",
    ),
    ("max_pool2d", lambda: ops.max_pool2d(np.zeros(4), 2), ValueError, "at least 2 axes"),
    ("max_pool2d", lambda: ops.max_pool2d(X, 0), ValueError, "kernel_size must be positive ints, got 0"),
    ("max_pool2d", lambda: ops.max_pool2d(X, 2, padding=2), ValueError, "at most half the kernel size"),
    ("max_pool2d", lambda: ops.max_pool2d(X, 8, padding=1), ValueError, "larger than the padded input"),
    ("max_pool2d", lambda: ops.max_pool2d(X.astype(np.int32), 2), TypeError, "float32 or float64"),
    (
        "max_pool2d_scatter",
        lambda: ops.max_pool2d_scatter(np.zeros((3, 3)), X, 2),
        ValueError,
        "g's (H', W')",
    ),
    (
        "max_pool2d_gather",
        lambda: ops.max_pool2d_gather(np.zeros((3, 5, 5)), X, 2),
        ValueError,
        "do not broadcast",
    ),
    (
        "avg_pool2d",
        lambda: ops.avg_pool2d(X, (2, 2), stride=(0, 1)),
        ValueError,
        "stride must be positive ints, got (0, 1)",
    ),
    ("avg_pool2d_grad", lambda: ops.avg_pool2d_grad(np.zeros((3, 3)), (5, 5), 2), ValueError, "g's (H', W')"),
    (
        "avg_pool2d",
        lambda: ops.avg_pool2d(X, (0, 2)),
        ValueError,
        "kernel_size must be positive ints, got (0, 2)",
    ),
    ("avg_pool2d", lambda: ops.avg_pool2d(X, 2.5), ValueError, "kernel_size must be an int or a pair"),
    (
        "max_pool2d",
        lambda: ops.max_pool2d(np.zeros((1, 0, 4)), 1),
        ValueError,
        "input size (H, W) must be positive ints",
    ),
    ("conv2d", lambda: ops.conv2d(X, np.zeros((3, 2, 0, 3))), ValueError, "the kernel is 0x3, empty"),
    ("conv2d_input_grad", lambda: ops.conv2d_input_grad(G, W[..., :0], (5, 5)), ValueError, "is 3x0, empty"),
    (
        "conv2d_weight_grad",
        lambda: ops.conv2d_weight_grad(X, G, (3, 0)),
        ValueError,
        "kernel_size must be positive",
    ),
    # the poolings' linear maps: their first input's shape and dtype too
    (
        "max_pool2d_gather",
        lambda: ops.max_pool2d_gather(np.zeros((1, 2, 5, 4)), X, 2),
        ValueError,
        "t's (H, W)",
    ),
    (
        "max_pool2d_gather",
        lambda: ops.max_pool2d_gather(np.zeros(5), X, 2),
        ValueError,
        "t must have at least 2",
    ),
    (
        "max_pool2d_scatter",
        lambda: ops.max_pool2d_scatter(np.zeros((1, 2, 2, 2), np.int64), X, 2),
        TypeError,
        "g has dtype int64; max_pool2d_scatter takes float32 or float64 arrays",
    ),
    (
        "max_pool2d_scatter",
        lambda: ops.max_pool2d_scatter(np.zeros((3, 2, 2)), X, 2),
        ValueError,
        "broadcast",
    ),
    (
        "avg_pool2d_grad",
        lambda: ops.avg_pool2d_grad(np.zeros(2), (5, 5), 2),
        ValueError,
        "g must have at least",
    ),
    (
        "avg_pool2d_grad",
        lambda: ops.avg_pool2d_grad(np.zeros((2, 2)), "5x5", 2),
        ValueError,
        "input size (H, W)",
    ),
    (
        "avg_pool2d",
        lambda: ops.avg_pool2d(X, 3, padding=(0, -1)),
        ValueError,
        "padding must be non-negative ints",
    ),
    (
        "avg_pool2d",
        lambda: ops.avg_pool2d(X, True),
        ValueError,
        "kernel_size must be an int or a pair of ints",
    ),
    # the convolutions' other inputs
    ("conv2d_weight_grad", lambda: ops.conv2d_weight_grad(X[0], G, (3, 3)), ValueError, "add a batch axis"),
    (
        "conv2d_input_grad",
        lambda: ops.conv2d_input_grad(G, W[0], (5, 5)),
        ValueError,
        "w must be a 4-D array",
    ),
    (
        "conv2d_input_grad",
        lambda: ops.conv2d_input_grad(G, W, (5, 0)),
        ValueError,
        "input_size must be positive",
    ),
    (
        "conv2d_weight_grad",
        lambda: ops.conv2d_weight_grad(X, G.astype(np.float16), (3, 3)),
        TypeError,
        "g has dtype float16",
    ),
    ("conv2d", lambda: ops.conv2d(X, W, dilation=(1, 2.0)), ValueError, "dilation must be an int or a pair"),
]


@pytest.mark.parametrize(
    ("op", "call", "error", "words"), BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)]
)
def test_bad_calls_raise_an_error_naming_the_op_and_leave_nothing_broken(op, call, error, words):
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, AdcoreError)
    assert info.value.__context__ is None  # raised as it reads, not caught and rewritten
    assert str(info.value).startswith(f"op {op!r}: ") and words in str(info.value)
    x = np.arange(50.0).reshape(X.shape)
    np.testing.assert_allclose(ops.conv2d(x, W + 1), reference.conv2d(x, W + 1))
    np.testing.assert_array_equal(ops.max_pool2d(x, 2), reference.max_pool2d(x, 2))


def test_an_error_under_a_derivative_leaves_the_next_derivative_working():
    f = adcore.grad(lambda x: adcore.numpy.sum(ops.conv2d(x, W)))
    with pytest.raises(AdcoreError, match="op 'conv2d': x has 1 channels"):
        f(np.ones((1, 1, 5, 5)))
    np.testing.assert_allclose(f(np.ones(X.shape)), np.zeros(X.shape))  # W is zero


X4 = np.ones((1, 2, 4, 4))
BAD_UNDER_A_DERIVATIVE = {  # f(w) or f(x) with x = X4, and the argument it is called with
    "zero-kernel": (lambda w: ops.conv2d(X4, w), (1, 2, 0, 2), "op 'conv2d': the kernel is 0x2, empty"),
    "channels": (lambda w: ops.conv2d(X4, w), (1, 3, 2, 2), "op 'conv2d': x has 2 channels"),
    "kernel-too-large": (lambda w: ops.conv2d(X4, w), (1, 2, 5, 5), "op 'conv2d': the 5x5 kernel"),
    "stride-0": (lambda w: ops.conv2d(X4, w, stride=0), (1, 2, 2, 2), "stride must be positive"),
    "winograd-2x2": (lambda w: ops.conv2d(X4, w, algorithm="winograd"), (1, 2, 2, 2), "does not apply"),
    "pool-kernel-0": (
        lambda x: ops.max_pool2d(x, 0),
        X4.shape,
        "op 'max_pool2d': kernel_size must be positive ints",
    ),
    "pool-padding": (lambda x: ops.max_pool2d(x, 2, padding=2), X4.shape, "at most half the kernel size"),
    "pool-too-large": (
        lambda x: ops.avg_pool2d(x, 8),
        X4.shape,
        "op 'avg_pool2d': kernel_size (8, 8) is larger",
    ),
    "pool-1d": (lambda x: ops.avg_pool2d(x, 1), (4,), "op 'avg_pool2d': x must have at least 2 axes"),
    # the linear maps' first input (the symbolic backend traces their sympy rules, which check it too)
    "gather-t-size": (
        lambda t: ops.max_pool2d_gather(t, X4, 2),
        (1, 2, 3, 4),
        "op 'max_pool2d_gather': t's (H, W) against x's: expected (4, 4), got (3, 4)",
    ),
    "scatter-g-size": (
        lambda g: ops.max_pool2d_scatter(g, X4, 2),
        (1, 2, 3, 3),
        "op 'max_pool2d_scatter': g's (H', W') for x's pooled size: expected (2, 2), got (3, 3)",
    ),
    "avg-grad-g-size": (
        lambda g: ops.avg_pool2d_grad(g, (4, 4), 2),
        (1, 2, 3, 3),
        "op 'avg_pool2d_grad': g's (H', W') for input_size (4, 4): expected (2, 2), got (3, 3)",
    ),
}


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic"])
@pytest.mark.parametrize("case", BAD_UNDER_A_DERIVATIVE.values(), ids=BAD_UNDER_A_DERIVATIVE.keys())
def test_a_bad_call_under_a_derivative_is_refused_alike_on_every_backend(backend, case):
    # symbolic traces the ops' sympy rules, not their impls: it used to return a Jacobian of a
    # made-up shape (an empty kernel gave a (1, 1, 5, 3) output) instead of refusing
    f, shape, message = case
    with pytest.raises(AdcoreError, match=re.escape(message)) as info:
        adcore.jacobian(f, backend=backend)(np.ones(shape))
    assert isinstance(info.value, ValueError)
    # the next call works: d/dw sum(conv2d(x, w)) with x all ones is 9 at every tap (3x3 outputs)
    g = adcore.grad(lambda w: adcore.numpy.sum(ops.conv2d(X4, w)), backend=backend)(np.ones((1, 2, 2, 2)))
    np.testing.assert_allclose(g, np.full((1, 2, 2, 2), 9.0), rtol=1e-6)
