"""Where a convolution reads its input: the one description every algorithm's kernels take,
and the checks of the shapes and params that describe it.

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
from adcore_kernels.reference import conv2d_output_size, pair


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
# The three convolutions' shapes and params, checked from shapes alone: conv.py runs these
# before computing, and a backend that traces an op's rule instead of running its impl
# (symbolic) runs them through `check`, so every backend refuses the same calls.

ALGORITHMS = ("direct", "im2col", "fft", "winograd")
GeometryArgs = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]  # stride, padding, dilation


def applicable(kernel_size: Any, stride: Any = 1, dilation: Any = 1) -> tuple[str, ...]:
    """The algorithms that can compute a convolution (and both its gradients) with this geometry."""
    kernel, s, d = pair(kernel_size, "kernel_size"), pair(stride, "stride"), pair(dilation, "dilation")
    winograd = kernel == (3, 3) and s == (1, 1) and d == (1, 1)
    return ALGORITHMS if winograd else tuple(a for a in ALGORITHMS if a != "winograd")


def plan_conv2d(x_shape, w_shape, stride, padding, dilation, algorithm) -> tuple[Geometry, GeometryArgs]:
    """conv2d's geometry and checked (stride, padding, dilation), or the error that names what is wrong."""
    _four_d(x_shape, "x", "(N, C, H, W)")
    _four_d(w_shape, "w", "(O, C, kh, kw)")
    if x_shape[1] != w_shape[1]:
        raise InvalidValueError(
            f"conv2d: x has {x_shape[1]} channels but w (O, C, kh, kw) = {tuple(w_shape)} expects "
            f"{w_shape[1]}; x.shape[1] must equal w.shape[1]"
        )
    args = _geometry_args(stride, padding, dilation)
    geometry = _forward_geometry(x_shape[2:], w_shape[2:], *args)
    _check_algorithm(algorithm, w_shape[2:], args)
    return geometry, args


def plan_input_grad(
    g_shape, w_shape, input_size, stride, padding, dilation, algorithm
) -> tuple[tuple[int, int], Geometry, GeometryArgs]:
    """conv2d_input_grad's input size, geometry and checked (stride, padding, dilation)."""
    _four_d(g_shape, "g", "(N, O, H', W')")
    _four_d(w_shape, "w", "(O, C, kh, kw)")
    size = _positive_pair(input_size, "input_size")
    args = _geometry_args(stride, padding, dilation)
    geometry = _forward_geometry(size, w_shape[2:], *args)
    _check_cotangent(g_shape, (g_shape[0], w_shape[0], *geometry.out))
    _check_algorithm(algorithm, w_shape[2:], args)
    return size, geometry, args


def plan_weight_grad(
    x_shape, g_shape, kernel_size, stride, padding, dilation, algorithm
) -> tuple[tuple[int, int], Geometry, GeometryArgs]:
    """conv2d_weight_grad's kernel size, geometry and checked (stride, padding, dilation)."""
    _four_d(x_shape, "x", "(N, C, H, W)")
    _four_d(g_shape, "g", "(N, O, H', W')")
    kernel = _positive_pair(kernel_size, "kernel_size")
    args = _geometry_args(stride, padding, dilation)
    geometry = _forward_geometry(x_shape[2:], kernel, *args)
    _check_cotangent(g_shape, (x_shape[0], g_shape[1], *geometry.out))
    _check_algorithm(algorithm, kernel, args)
    return kernel, geometry, args


def check(op: str, a_shape: tuple, b_shape: tuple, **params: Any) -> None:
    """Raise the error the impl of `op` (conv2d, conv2d_input_grad or conv2d_weight_grad) would
    raise for inputs of these shapes, prefixed with the op's name as the impls' are."""
    third = {"conv2d": (), "conv2d_input_grad": ("input_size",), "conv2d_weight_grad": ("kernel_size",)}[op]
    plan = {
        "conv2d": plan_conv2d,
        "conv2d_input_grad": plan_input_grad,
        "conv2d_weight_grad": plan_weight_grad,
    }
    defaults = {"stride": 1, "padding": 0, "dilation": 1, "algorithm": "auto"}
    given = {**defaults, **params}
    try:
        plan[op](a_shape, b_shape, *(given[k] for k in (*third, *defaults)))
    except (InvalidInputError, InvalidValueError) as e:
        raise type(e)(f"op {op!r}: {str(e).removeprefix('conv2d: ')}") from e


def _four_d(shape: tuple, name: str, layout: str) -> None:
    if len(shape) != 4:
        raise InvalidValueError(
            f"conv2d: {name} must be a 4-D array {layout}, got shape {tuple(shape)}"
            + ("; add a batch axis with [None]" if len(shape) == 3 and name != "w" else "")
        )


def _geometry_args(stride: Any, padding: Any, dilation: Any) -> GeometryArgs:
    checked = []
    for name, value, least in (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1)):
        try:
            v = pair(value, name)
        except (TypeError, ValueError) as error:
            raise InvalidValueError(f"conv2d: {error}") from None
        if min(v) < least:
            kind = "positive" if least else "non-negative"
            raise InvalidValueError(f"conv2d: {name} must be {kind} ints, got {value!r}")
        checked.append(v)
    return tuple(checked)


def _positive_pair(value: Any, name: str) -> tuple[int, int]:
    try:
        size = pair(value, name)
    except (TypeError, ValueError) as error:
        raise InvalidValueError(f"conv2d: {error}") from None
    if min(size) < 1:
        raise InvalidValueError(f"conv2d: {name} must be positive, got {value!r}")
    return size


def _forward_geometry(input_size, kernel_size, stride, padding, dilation) -> Geometry:
    """The forward's geometry, once the kernel is known to be non-empty and to fit in the padded input."""
    if min(kernel_size) < 1:  # the output-size formula would give a larger, all-zero output, silently
        raise InvalidValueError(
            f"conv2d: the kernel is {kernel_size[0]}x{kernel_size[1]}, empty; "
            "w (O, C, kh, kw) needs kh >= 1 and kw >= 1"
        )
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel_size))
    padded = tuple(n + 2 * p for n, p in zip(input_size, padding))
    if extent[0] > padded[0] or extent[1] > padded[1]:
        raise InvalidValueError(
            f"conv2d: the {kernel_size[0]}x{kernel_size[1]} kernel (spanning {extent[0]}x{extent[1]} at "
            f"dilation {dilation}) is larger than the padded input {padded[0]}x{padded[1]} (input "
            f"{input_size[0]}x{input_size[1]}, padding {padding}); use a smaller kernel or dilation, or "
            "more padding"
        )
    out = conv2d_output_size(input_size, kernel_size, stride, padding, dilation)
    return Geometry(out, stride, padding, dilation)


def _check_cotangent(g_shape: tuple, expected: tuple[int, ...]) -> None:
    if tuple(g_shape) != expected:
        raise InvalidValueError(
            f"conv2d: the cotangent g has shape {tuple(g_shape)} but the convolution's output is {expected}; "
            f"pass the g of this convolution (same stride, padding and dilation)"
        )


def _check_algorithm(algorithm: Any, kernel: tuple, args: GeometryArgs) -> None:
    """`auto`, or an algorithm that applies to this kernel and geometry."""
    if algorithm == "auto":
        return
    if algorithm not in ALGORITHMS:
        raise InvalidValueError(
            f"conv2d: unknown algorithm {algorithm!r}; choose one of auto, {', '.join(ALGORITHMS)}"
        )
    stride, _, dilation = args
    fitting = applicable(tuple(kernel), stride, dilation)
    if algorithm not in fitting:
        kh, kw = kernel
        raise InvalidValueError(
            f"conv2d: algorithm {algorithm!r} does not apply to a {kh}x{kw} kernel at stride {stride} and "
            f"dilation {dilation} (winograd is F(2x2, 3x3): 3x3 kernels, stride 1, dilation 1 only); "
            f"algorithms that apply: {', '.join(fitting)}"
        )
