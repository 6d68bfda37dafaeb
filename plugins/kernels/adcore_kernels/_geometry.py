"""Where a convolution or pooling reads its input: the one description every algorithm's kernels
take, and the one place the ops' inputs are checked (conv2d, its two gradients, the poolings).

Output pixel (r, q) and kernel tap (i, j) read the *unpadded* input at row
`r*stride_h + i*dilation_h - offset_h` and column `q*stride_w + j*dilation_w - offset_w`;
a read outside the input is a zero. A forward convolution has offset = padding; the
input gradient at stride 1 is such a convolution too, of the cotangent, with offset
`dilation*(k-1) - padding` (negative when the padding is wider than the kernel: a crop).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError
from adcore_kernels.reference import conv2d_output_size


class Geometry(NamedTuple):
    out: tuple[int, int]  # (H', W'): the output's spatial size
    stride: tuple[int, int]
    offset: tuple[int, int]
    dilation: tuple[int, int]

    def ints(self) -> tuple[int, ...]:
        """out_h, out_w, stride_h, stride_w, offset_h, offset_w, dilation_h, dilation_w: the kernels' arguments."""
        return (*self.out, *self.stride, *self.offset, *self.dilation)


def transposed(geometry: Geometry, input_size: tuple[int, int], kernel_size: tuple[int, int]) -> Geometry:
    """The stride-1 convolution of the stride-upsampled cotangent with the flipped kernel that is the input gradient."""
    offset = tuple(d * (k - 1) - p for d, k, p in zip(geometry.dilation, kernel_size, geometry.offset))
    return Geometry(tuple(input_size), (1, 1), offset, geometry.dilation)


def flipped_transposed(w: np.ndarray) -> np.ndarray:
    """w (O, C, kh, kw) rotated by 180° in space with O and C swapped: (C, O, kh, kw), contiguous."""
    return np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))


def upsampled(g: np.ndarray, stride: tuple[int, int]) -> np.ndarray:
    """g with stride-1 zeros between its pixels: (..., s_h*(H'-1)+1, s_w*(W'-1)+1); g itself at stride 1."""
    if stride == (1, 1):
        return g
    sh, sw = stride
    out = np.zeros((*g.shape[:-2], sh * (g.shape[-2] - 1) + 1, sw * (g.shape[-1] - 1) + 1), dtype=g.dtype)
    out[..., ::sh, ::sw] = g
    return out


# ----------------------------------------------------------------------------- checking
# Every check of the kernel ops' inputs, in this one place, from dtypes and shapes alone (no numba
# here): conv.py and ops.py run them before computing, and the sympy rules, which the symbolic
# backend traces instead of the impls, run the same ones, so every backend refuses the same calls
# with the same error. Each error names its op ("op 'conv2d': ..."), as raised: none is rewritten.

ALGORITHMS = ("direct", "im2col", "fft", "winograd")
Pair = tuple[int, int]
GeometryArgs = tuple[Pair, Pair, Pair]  # stride, padding, dilation


def float_array(op: str, name: str, value: Any) -> np.ndarray:
    """value as an array, which must be float32 or float64 (what the kernels are compiled for)."""
    a = np.asarray(value)
    if a.dtype not in (np.float32, np.float64):
        raise InvalidInputError(
            f"op {op!r}: {name} has dtype {a.dtype}; {op} takes float32 or float64 arrays "
            f"(convert with {name}.astype(np.float64))"
        )
    return a


def int_pair(op: str, name: str, value: Any, least: int) -> Pair:
    """An int or an (h, w) pair of ints, each at least `least` (0 or 1), as (h, w)."""
    items = (value, value) if np.ndim(value) == 0 else tuple(value)
    if len(items) != 2 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items
    ):
        raise InvalidValueError(f"op {op!r}: {name} must be an int or a pair of ints, got {value!r}")
    if min(items) < least:
        kind = "positive" if least else "non-negative"
        raise InvalidValueError(f"op {op!r}: {name} must be {kind} ints, got {value!r}")
    return int(items[0]), int(items[1])


def geometry_args(op: str, stride: Any, padding: Any, dilation: Any) -> GeometryArgs:
    """A convolution's (stride, padding, dilation), each an (h, w) pair."""
    return (
        int_pair(op, "stride", stride, 1),
        int_pair(op, "padding", padding, 0),
        int_pair(op, "dilation", dilation, 1),
    )


# --- convolutions


def applicable(kernel_size: Any, stride: Any = 1, dilation: Any = 1) -> tuple[str, ...]:
    """The algorithms that can compute a convolution (and both its gradients) with this geometry."""
    kernel, s = int_pair("conv2d", "kernel_size", kernel_size, 1), int_pair("conv2d", "stride", stride, 1)
    d = int_pair("conv2d", "dilation", dilation, 1)
    winograd = kernel == (3, 3) and s == (1, 1) and d == (1, 1)
    return ALGORITHMS if winograd else tuple(a for a in ALGORITHMS if a != "winograd")


def plan_conv2d(
    x_shape: tuple,
    w_shape: tuple,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: Any = "auto",
) -> tuple[Geometry, GeometryArgs]:
    """conv2d's geometry and checked (stride, padding, dilation), or the error that names what is wrong."""
    op = "conv2d"
    _four_d(op, x_shape, "x", "(N, C, H, W)")
    _four_d(op, w_shape, "w", "(O, C, kh, kw)")
    if x_shape[1] != w_shape[1]:
        raise InvalidValueError(
            f"op {op!r}: x has {x_shape[1]} channels but w (O, C, kh, kw) = {tuple(w_shape)} expects "
            f"{w_shape[1]}; x.shape[1] must equal w.shape[1]"
        )
    args = geometry_args(op, stride, padding, dilation)
    geometry = _forward_geometry(op, tuple(x_shape[2:]), tuple(w_shape[2:]), *args)
    _check_algorithm(op, algorithm, tuple(w_shape[2:]), args)
    return geometry, args


def plan_input_grad(
    g_shape: tuple,
    w_shape: tuple,
    input_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: Any = "auto",
) -> tuple[Pair, Geometry, GeometryArgs]:
    """conv2d_input_grad's input size, geometry and checked (stride, padding, dilation)."""
    op = "conv2d_input_grad"
    _four_d(op, g_shape, "g", "(N, O, H', W')")
    _four_d(op, w_shape, "w", "(O, C, kh, kw)")
    size = int_pair(op, "input_size", input_size, 1)
    args = geometry_args(op, stride, padding, dilation)
    geometry = _forward_geometry(op, size, tuple(w_shape[2:]), *args)
    _check_cotangent(op, g_shape, (g_shape[0], w_shape[0], *geometry.out))
    _check_algorithm(op, algorithm, tuple(w_shape[2:]), args)
    return size, geometry, args


def plan_weight_grad(
    x_shape: tuple,
    g_shape: tuple,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: Any = "auto",
) -> tuple[Pair, Geometry, GeometryArgs]:
    """conv2d_weight_grad's kernel size, geometry and checked (stride, padding, dilation)."""
    op = "conv2d_weight_grad"
    _four_d(op, x_shape, "x", "(N, C, H, W)")
    _four_d(op, g_shape, "g", "(N, O, H', W')")
    kernel = int_pair(op, "kernel_size", kernel_size, 1)
    args = geometry_args(op, stride, padding, dilation)
    geometry = _forward_geometry(op, tuple(x_shape[2:]), kernel, *args)
    _check_cotangent(op, g_shape, (x_shape[0], g_shape[1], *geometry.out))
    _check_algorithm(op, algorithm, kernel, args)
    return kernel, geometry, args


CONV_PLANS = {
    "conv2d": plan_conv2d,
    "conv2d_input_grad": plan_input_grad,
    "conv2d_weight_grad": plan_weight_grad,
}


def check(op: str, a_shape: tuple, b_shape: tuple, **params: Any) -> None:
    """Raise the error the impl of the convolution `op` raises for inputs of these shapes (if any)."""
    CONV_PLANS[op](tuple(a_shape), tuple(b_shape), **params)


def _four_d(op: str, shape: tuple, name: str, layout: str) -> None:
    if len(shape) != 4:
        raise InvalidValueError(
            f"op {op!r}: {name} must be a 4-D array {layout}, got shape {tuple(shape)}"
            + ("; add a batch axis with [None]" if len(shape) == 3 and name != "w" else "")
        )


def _forward_geometry(op: str, input_size: Pair, kernel_size: Pair, stride, padding, dilation) -> Geometry:
    """The forward's geometry, once the kernel is known to be non-empty and to fit in the padded input."""
    if min(kernel_size) < 1:  # the output-size formula would give a larger, all-zero output, silently
        raise InvalidValueError(
            f"op {op!r}: the kernel is {kernel_size[0]}x{kernel_size[1]}, empty; "
            "w (O, C, kh, kw) needs kh >= 1 and kw >= 1"
        )
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel_size))
    padded = tuple(n + 2 * p for n, p in zip(input_size, padding))
    if extent[0] > padded[0] or extent[1] > padded[1]:
        raise InvalidValueError(
            f"op {op!r}: the {kernel_size[0]}x{kernel_size[1]} kernel (spanning {extent[0]}x{extent[1]} at "
            f"dilation {dilation}) is larger than the padded input {padded[0]}x{padded[1]} (input "
            f"{input_size[0]}x{input_size[1]}, padding {padding}); use a smaller kernel or dilation, or "
            "more padding"
        )
    out = conv2d_output_size(input_size, kernel_size, stride, padding, dilation)
    return Geometry(out, stride, padding, dilation)


def _check_cotangent(op: str, g_shape: tuple, expected: tuple[int, ...]) -> None:
    if tuple(g_shape) != expected:
        raise InvalidValueError(
            f"op {op!r}: the cotangent g has shape {tuple(g_shape)} but the convolution's output is "
            f"{expected}; pass the g of this convolution (same stride, padding and dilation)"
        )


def _check_algorithm(op: str, algorithm: Any, kernel: Pair, args: GeometryArgs) -> None:
    """`auto`, or an algorithm that applies to this kernel and geometry."""
    if algorithm == "auto":
        return
    if algorithm not in ALGORITHMS:
        raise InvalidValueError(
            f"op {op!r}: unknown algorithm {algorithm!r}; choose one of auto, {', '.join(ALGORITHMS)}"
        )
    stride, _, dilation = args
    fitting = applicable(kernel, stride, dilation)
    if algorithm not in fitting:
        raise InvalidValueError(
            f"op {op!r}: algorithm {algorithm!r} does not apply to a {kernel[0]}x{kernel[1]} kernel at stride "
            f"{stride} and dilation {dilation} (winograd takes 3x3 kernels at stride 1 and dilation 1 only); "
            f"algorithms that apply: {', '.join(fitting)}"
        )


# --- poolings: over the last two axes (..., H, W), stride kernel_size by default


class PoolGeometry(NamedTuple):
    """A pooling's checked params and sizes."""

    size: Pair  # the input's (H, W)
    kernel: Pair
    stride: Pair
    padding: Pair
    out: Pair  # (H', W')

    def args(self) -> tuple[Pair, Pair, Pair]:
        """kernel, stride, padding: what the pooling kernels take."""
        return self.kernel, self.stride, self.padding


def plan_pool(
    op: str, x_shape: tuple, kernel_size: Any, stride: Any = None, padding: Any = 0
) -> PoolGeometry:
    """The geometry of pooling x (..., H, W) (max_pool2d, avg_pool2d; and x of the linear maps)."""
    _at_least_2d(op, "x", x_shape)
    return pool_geometry(op, tuple(x_shape[-2:]), kernel_size, stride, padding)


def pool_geometry(op: str, size: Any, kernel_size: Any, stride: Any, padding: Any) -> PoolGeometry:
    """The geometry of pooling an input of spatial size `size` (H, W)."""
    size = int_pair(op, "input size (H, W)", size, 1)
    kernel = int_pair(op, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None else int_pair(op, "stride", stride, 1)
    padding = int_pair(op, "padding", padding, 0)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise InvalidValueError(
            f"op {op!r}: padding must be at most half the kernel size, got padding {padding} for "
            f"kernel_size {kernel}"
        )
    padded = tuple(n + 2 * p for n, p in zip(size, padding))
    if any(k > n for k, n in zip(kernel, padded)):
        raise InvalidValueError(f"op {op!r}: kernel_size {kernel} is larger than the padded input {padded}")
    return PoolGeometry(size, kernel, stride, padding, conv2d_output_size(size, kernel, stride, padding, 1))


def plan_max_pool_gather(
    t_shape: tuple, x_shape: tuple, kernel_size: Any, stride=None, padding=0
) -> PoolGeometry:
    """max_pool2d_gather(t, x): t (..., H, W) has x's (H, W), its leading axes broadcast with x's."""
    op = "max_pool2d_gather"
    geometry = plan_pool(op, x_shape, kernel_size, stride, padding)
    _at_least_2d(op, "t", t_shape)
    _same(op, "t's (H, W) against x's", t_shape[-2:], geometry.size)
    _leading(op, "t", t_shape, x_shape)
    return geometry


def plan_max_pool_scatter(
    g_shape: tuple, x_shape: tuple, kernel_size: Any, stride=None, padding=0
) -> PoolGeometry:
    """max_pool2d_scatter(g, x): g (..., H', W') has x's pooled size, its leading axes broadcast with x's."""
    op = "max_pool2d_scatter"
    geometry = plan_pool(op, x_shape, kernel_size, stride, padding)
    _at_least_2d(op, "g", g_shape)
    _same(op, "g's (H', W') for x's pooled size", g_shape[-2:], geometry.out)
    _leading(op, "g", g_shape, x_shape)
    return geometry


def plan_avg_pool_grad(
    g_shape: tuple, input_size: Any, kernel_size: Any, stride=None, padding=0
) -> PoolGeometry:
    """avg_pool2d_grad(g, input_size): g (..., H', W') has the pooled size of an input of input_size."""
    op = "avg_pool2d_grad"
    _at_least_2d(op, "g", g_shape)
    geometry = pool_geometry(op, input_size, kernel_size, stride, padding)
    _same(op, f"g's (H', W') for input_size {geometry.size}", g_shape[-2:], geometry.out)
    return geometry


def _at_least_2d(op: str, name: str, shape: tuple) -> None:
    if len(shape) < 2:
        raise InvalidValueError(
            f"op {op!r}: {name} must have at least 2 axes (..., H, W), got shape {tuple(shape)}"
        )


def _same(op: str, what: str, got: tuple, expected: tuple) -> None:
    if tuple(got) != tuple(expected):
        raise InvalidValueError(f"op {op!r}: {what}: expected {tuple(expected)}, got {tuple(got)}")


def _leading(op: str, name: str, first: tuple, x: tuple) -> None:
    """The leading axes (before H, W) of the first input and x must broadcast."""
    a, b = tuple(first[:-2])[::-1], tuple(x[:-2])[::-1]
    if any(p != q and 1 not in (p, q) for p, q in zip(a, b)):
        raise InvalidValueError(
            f"op {op!r}: the leading axes of {name} {tuple(first)} and x {tuple(x)} do not broadcast"
        )
