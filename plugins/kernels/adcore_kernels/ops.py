"""The kernel ops: what each computes, its checks, and where the conformance suite draws its inputs.

Convolution (NCHW input, OIHW weight, cross-correlation as in PyTorch) and its two
gradients, each a bilinear op, so the set is closed under differentiation:

    conv2d(x, w)                           y  (N, O, H', W')
    conv2d_input_grad(g, w, input_size)    gx (N, C, H, W):   <g, conv2d(x, w)> differentiated in x
    conv2d_weight_grad(x, g, kernel_size)  gw (O, C, kh, kw): <g, conv2d(x, w)> differentiated in w

Pooling over the last two axes of an array with any leading axes (..., H, W), stride
kernel_size by default, as in PyTorch. avg_pool2d counts padding as zeros; max_pool2d
never picks it, and its derivative goes to each window's maxima, split equally on a tie:

    max_pool2d(x)               avg_pool2d(x)
    max_pool2d_gather(t, x)     avg_pool2d_grad(g, input_size)   (the linear maps that
    max_pool2d_scatter(g, x)                                      differentiate them)

The impls run the numba kernels of `adcore_kernels.conv` and `adcore_kernels.pooling`,
imported on the first call: loading the plugin imports neither numba nor the kernels.
Bad inputs raise typed errors that name the op (`op 'max_pool2d': ...`), from one place:
`_geometry` checks every op's dtypes, shapes and params (conv.py calls it for the
convolutions, this module for the poolings, the sympy rules for the symbolic backend).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import Domain, OpSpec, Sample
from adcore.spec import REAL, Kink
from adcore_kernels._geometry import (
    float_array,
    plan_avg_pool_grad,
    plan_max_pool_gather,
    plan_max_pool_scatter,
    plan_pool,
)
from adcore_kernels.reference import conv2d_output_size

AUTO = "auto"
DISTINCT = Domain(distinct=True)  # max pooling: no near-ties for a finite difference to straddle
# convolutions: values of both signs, so sums cancel and FFT and winograd round by eps * the size of
# the whole output; the numeric backend measures f's noise, so its error bars allow for that
CONV_DOMAIN = REAL

# --- convolution: conv.py's functions, which check their inputs (in _geometry) -------------------------


def _conv2d(
    x: Any, w: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, algorithm: str = AUTO
) -> Any:
    from adcore_kernels import conv

    return conv.conv2d(x, w, stride, padding, dilation, algorithm)


def _conv2d_input_grad(
    g: Any,
    w: Any,
    input_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: str = AUTO,
) -> Any:
    from adcore_kernels import conv

    return conv.conv2d_input_grad(g, w, input_size, stride, padding, dilation, algorithm)


def _conv2d_weight_grad(
    x: Any,
    g: Any,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: str = AUTO,
) -> Any:
    from adcore_kernels import conv

    return conv.conv2d_weight_grad(x, g, kernel_size, stride, padding, dilation, algorithm)


# --- pooling: checked by _geometry, then pooling.py's kernels ---------------------------------------------


def _max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    from adcore_kernels import pooling

    x = float_array("max_pool2d", "x", x)
    geometry = plan_pool("max_pool2d", x.shape, kernel_size, stride, padding)
    return pooling.max_pool2d(x, *geometry.args())


def _max_pool2d_gather(t: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    from adcore_kernels import pooling

    t, x = float_array("max_pool2d_gather", "t", t), float_array("max_pool2d_gather", "x", x)
    geometry = plan_max_pool_gather(t.shape, x.shape, kernel_size, stride, padding)
    return pooling.max_pool2d_gather(t, x, *geometry.args())


def _max_pool2d_scatter(g: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    from adcore_kernels import pooling

    g, x = float_array("max_pool2d_scatter", "g", g), float_array("max_pool2d_scatter", "x", x)
    geometry = plan_max_pool_scatter(g.shape, x.shape, kernel_size, stride, padding)
    return pooling.max_pool2d_scatter(g, x, *geometry.args())


def _avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    from adcore_kernels import pooling

    x = float_array("avg_pool2d", "x", x)
    geometry = plan_pool("avg_pool2d", x.shape, kernel_size, stride, padding)
    return pooling.avg_pool2d(x, *geometry.args())


def _avg_pool2d_grad(g: Any, input_size: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    from adcore_kernels import pooling

    g = float_array("avg_pool2d_grad", "g", g)
    geometry = plan_avg_pool_grad(g.shape, input_size, kernel_size, stride, padding)
    return pooling.avg_pool2d_grad(g, geometry.size, *geometry.args())


# --- samples: tiny shapes (symbolic traces every element, numeric perturbs every one) -----------------

# (x shape, w shape, params): batch 1 and channel 1, odd sizes, stride, padding, dilation, and each
# algorithm (winograd: 3x3 kernels, stride 1 and dilation 1 only); numeric perturbs and symbolic
# traces every element, so they are small
CONV_CALLS: tuple[tuple[tuple[int, ...], tuple[int, ...], dict], ...] = (
    ((1, 1, 3, 3), (1, 1, 2, 2), {}),
    ((2, 2, 4, 3), (3, 2, 2, 2), {"stride": 2, "padding": 1, "algorithm": "im2col"}),
    (
        (1, 2, 5, 5),
        (2, 2, 2, 3),
        {"stride": (1, 2), "padding": (1, 0), "dilation": (2, 1), "algorithm": "fft"},
    ),
    ((1, 1, 5, 5), (1, 1, 2, 2), {"stride": 2, "padding": 1, "dilation": (1, 2), "algorithm": "direct"}),
    *(
        ((1, 1, 4, 4), (2, 1, 3, 3), {"padding": 1, "algorithm": a})
        for a in ("direct", "im2col", "fft", "winograd")
    ),
    ((2, 2, 3, 4), (2, 2, 3, 3), {"padding": 1, "algorithm": "winograd"}),
)


def _conv_out(x_shape: tuple[int, ...], w_shape: tuple[int, ...], params: dict) -> tuple[int, ...]:
    stride, padding, dilation = (
        params.get(k, d) for k, d in (("stride", 1), ("padding", 0), ("dilation", 1))
    )
    return (x_shape[0], w_shape[0], *conv2d_output_size(x_shape[2:], w_shape[2:], stride, padding, dilation))


def _conv_samples(role: str):
    """Samples of conv2d ("forward") or of one of its gradients ("input_grad", "weight_grad")
    at the calls of CONV_CALLS."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        out = []
        for x_shape, w_shape, params in CONV_CALLS:
            x, w = CONV_DOMAIN.draw(rng, x_shape, dtype), CONV_DOMAIN.draw(rng, w_shape, dtype)
            g = CONV_DOMAIN.draw(rng, _conv_out(x_shape, w_shape, params), dtype)
            if role == "forward":
                out.append(Sample((x, w), dict(params)))
            elif role == "input_grad":
                out.append(Sample((g, w), {"input_size": x_shape[2:], **params}))
            else:
                out.append(Sample((x, g), {"kernel_size": w_shape[2:], **params}))
        return out

    return draw


# (x shape, params): 2-D and with leading axes, odd sizes, default stride, stride and padding
POOL_CALLS: tuple[tuple[tuple[int, ...], dict], ...] = (
    ((4, 4), {"kernel_size": 2}),
    ((1, 1, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 5), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)}),
    ((2, 1, 3, 4), {"kernel_size": 2, "stride": 1}),
)


# the leading axes of the first input of the linear maps where they are not x's: at call 1 a batch of
# two tangents (extra axes), at call 3 axes that broadcast against x's (2, 1) both ways
LINEAR_LEADS = {1: (2, 1, 1), 3: (1, 3)}


def _pool_samples(role: str, domain: Domain):
    """Samples of a pooling op at POOL_CALLS: role "x" (pool x), "scatter"/"gather" (a
    cotangent or tangent, then x) or "avg_grad" (a cotangent), whose leading axes are
    LINEAR_LEADS' where given."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        out = []
        for k, (shape, params) in enumerate(POOL_CALLS):
            x = domain.draw(rng, shape, dtype)
            pooled = plan_pool("pool", shape, **params).out
            lead = LINEAR_LEADS.get(k, shape[:-2])
            if role == "x":
                out.append(Sample((x,), dict(params)))
            elif role == "gather":
                out.append(Sample((REAL.draw(rng, (*lead, *shape[-2:]), dtype), x), dict(params)))
            elif role == "scatter":
                out.append(Sample((REAL.draw(rng, (*lead, *pooled), dtype), x), dict(params)))
            else:
                out.append(
                    Sample((REAL.draw(rng, (*lead, *pooled), dtype),), {"input_size": shape[-2:], **params})
                )
        return out

    return draw


# --- the ops ---------------------------------------------------------------------------------------------

CONV_PARAMS = ("stride", "padding", "dilation", "algorithm")
POOL_PARAMS = ("kernel_size", "stride", "padding")

conv2d = OpSpec(
    "conv2d",
    _conv2d,
    nin=2,
    params=CONV_PARAMS,
    samples=_conv_samples("forward"),
    doc="conv2d(x, w, stride=1, padding=0, dilation=1, algorithm='auto'): x (N, C, H, W) cross-correlated "
    "with w (O, C, kh, kw) as in PyTorch; algorithm direct, im2col, fft, winograd or auto",
)
conv2d_input_grad = OpSpec(
    "conv2d_input_grad",
    _conv2d_input_grad,
    nin=2,
    params=("input_size", *CONV_PARAMS),
    samples=_conv_samples("input_grad"),
    doc="conv2d_input_grad(g, w, input_size, ...): the gradient of <g, conv2d(x, w)> in x of spatial size "
    "input_size (a transposed convolution)",
)
conv2d_weight_grad = OpSpec(
    "conv2d_weight_grad",
    _conv2d_weight_grad,
    nin=2,
    params=("kernel_size", *CONV_PARAMS),
    samples=_conv_samples("weight_grad"),
    doc="conv2d_weight_grad(x, g, kernel_size, ...): the gradient of <g, conv2d(x, w)> in w of spatial size "
    "kernel_size",
)
max_pool2d = OpSpec(
    "max_pool2d",
    _max_pool2d,
    params=POOL_PARAMS,
    samples=_pool_samples("x", DISTINCT),
    doc="max_pool2d(x, kernel_size, stride=None, padding=0): the largest value of each window over the last "
    "two axes; padding never wins; the gradient is split equally among ties",
    kinks=(
        Kink(
            ([[1.0, 3.0, 0.0, 0.0], [3.0, 2.0, 0.0, 0.0]],),
            (np.array([[[[0.0, 0.5, 0, 0], [0.5, 0.0, 0, 0]], [[0, 0, 0.25, 0.25], [0, 0, 0.25, 0.25]]]]),),
            {"kernel_size": 2},
            why="a pooling window's k tied maxima get 1/k each",
        ),
    ),
)
max_pool2d_gather = OpSpec(
    "max_pool2d_gather",
    _max_pool2d_gather,
    nin=2,
    differentiable=(0,),
    params=POOL_PARAMS,
    samples=_pool_samples("gather", DISTINCT),
    doc="max_pool2d_gather(t, x, ...): t read at the maxima of each window of x (averaged over ties); "
    "max_pool2d's JVP, linear in t (which may have extra leading axes)",
)
max_pool2d_scatter = OpSpec(
    "max_pool2d_scatter",
    _max_pool2d_scatter,
    nin=2,
    differentiable=(0,),
    params=POOL_PARAMS,
    samples=_pool_samples("scatter", DISTINCT),
    doc="max_pool2d_scatter(g, x, ...): g spread onto the maxima of each window of x (split over ties); "
    "max_pool2d's VJP, linear in g (which may have extra leading axes)",
)
avg_pool2d = OpSpec(
    "avg_pool2d",
    _avg_pool2d,
    params=POOL_PARAMS,
    samples=_pool_samples("x", REAL),
    doc="avg_pool2d(x, kernel_size, stride=None, padding=0): the mean of each window over the last two axes, "
    "padding counted as zeros (PyTorch's count_include_pad=True)",
)
avg_pool2d_grad = OpSpec(
    "avg_pool2d_grad",
    _avg_pool2d_grad,
    params=("input_size", *POOL_PARAMS),
    samples=_pool_samples("avg_grad", REAL),
    doc="avg_pool2d_grad(g, input_size, kernel_size, stride=None, padding=0): g spread evenly over each "
    "window of an input of spatial size input_size; avg_pool2d's VJP",
)

OPS: tuple[OpSpec, ...] = (
    conv2d,
    conv2d_input_grad,
    conv2d_weight_grad,
    max_pool2d,
    max_pool2d_gather,
    max_pool2d_scatter,
    avg_pool2d,
    avg_pool2d_grad,
)
