"""Plain NumPy references of the kernel ops: what the numba kernels must agree with.

Written with slicing and `np.tensordot` only, so they run on float arrays (the tests'
reference) and on object arrays of sympy expressions (the symbolic backend's rules) alike.
Layouts are PyTorch's: input (N, C, H, W), weight (O, C, kh, kw), cross-correlation.

For one kernel offset (i, j) the output reads the padded input at rows
`i*dilation + stride*r` for output rows r: `_taps` slices exactly those. The input
gradient scatters the output's cotangent back along the same taps (a transposed
convolution), and the weight gradient correlates the taps with that cotangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def pair(value: Any, name: str = "value") -> tuple[int, int]:
    """An int or a pair of ints as (height, width)."""
    pair_ = (value, value) if np.ndim(value) == 0 else tuple(value)
    if len(pair_) != 2 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair_
    ):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return int(pair_[0]), int(pair_[1])


def conv2d_output_size(
    size: tuple[int, int], kernel: tuple[int, int], stride: Any, padding: Any, dilation: Any
) -> tuple[int, int]:
    """(H', W') of a convolution (or pooling) of an (H, W) input: floor((H + 2p - d(k-1) - 1)/s) + 1."""
    s, p, d = pair(stride), pair(padding), pair(dilation)
    return tuple((n + 2 * p_ - d_ * (k - 1) - 1) // s_ + 1 for n, k, s_, p_, d_ in zip(size, kernel, s, p, d))


def _taps(xp: np.ndarray, i: int, j: int, out: tuple[int, int], stride: Any, dilation: Any) -> tuple:
    """The index of the padded input's (..., H, W) values that kernel offset (i, j) meets."""
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    rows = slice(i * dh, i * dh + sh * (out[0] - 1) + 1, sh)
    cols = slice(j * dw, j * dw + sw * (out[1] - 1) + 1, sw)
    return (..., rows, cols)


def _pad(x: np.ndarray, padding: Any, fill: Any = 0) -> np.ndarray:
    ph, pw = pair(padding)
    widths = [(0, 0)] * (x.ndim - 2) + [(ph, ph), (pw, pw)]
    return np.pad(x, widths, constant_values=fill) if ph or pw else x


def _crop(xp: np.ndarray, padding: Any) -> np.ndarray:
    ph, pw = pair(padding)
    return xp[..., ph : xp.shape[-2] - ph, pw : xp.shape[-1] - pw]


def conv2d(x: np.ndarray, w: np.ndarray, stride: Any = 1, padding: Any = 0, dilation: Any = 1) -> np.ndarray:
    """y[n, o] = sum over c, i, j of w[o, c, i, j] * xpad[n, c, i*d + s*r, j*d + s*q]."""
    xp = _pad(x, padding)
    out = conv2d_output_size(x.shape[-2:], w.shape[-2:], stride, padding, dilation)
    y = np.zeros((x.shape[0], w.shape[0], *out), dtype=np.result_type(x, w))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            taps = xp[_taps(xp, i, j, out, stride, dilation)]  # (N, C, H', W')
            y = y + np.tensordot(taps, w[:, :, i, j], axes=([1], [1])).transpose(0, 3, 1, 2)
    return y


def conv2d_input_grad(
    g: np.ndarray, w: np.ndarray, input_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1
) -> np.ndarray:
    """d<g, conv2d(x, w)>/dx for x of spatial size `input_size`: the transposed convolution."""
    (h, wd), (ph, pw) = pair(input_size, "input_size"), pair(padding)
    out = g.shape[-2:]
    gxp = np.zeros((g.shape[0], w.shape[1], h + 2 * ph, wd + 2 * pw), dtype=np.result_type(g, w))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            share = np.tensordot(g, w[:, :, i, j], axes=([1], [0])).transpose(0, 3, 1, 2)  # (N, C, H', W')
            gxp[_taps(gxp, i, j, out, stride, dilation)] += share
    return _crop(gxp, padding)


def conv2d_weight_grad(
    x: np.ndarray, g: np.ndarray, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1
) -> np.ndarray:
    """d<g, conv2d(x, w)>/dw for w of spatial size `kernel_size`: the taps correlated with g."""
    kh, kw = pair(kernel_size, "kernel_size")
    xp = _pad(x, padding)
    out = g.shape[-2:]
    gw = np.zeros((g.shape[1], x.shape[1], kh, kw), dtype=np.result_type(x, g))
    for i in range(kh):
        for j in range(kw):
            taps = xp[_taps(xp, i, j, out, stride, dilation)]
            gw[:, :, i, j] = np.tensordot(g, taps, axes=([0, 2, 3], [0, 2, 3]))
    return gw


def pool_windows(
    x: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0, fill: Any = 0
) -> np.ndarray:
    """The pooling windows of x (..., H, W) as (..., H', W', kh*kw), padded with `fill`."""
    kernel = pair(kernel_size, "kernel_size")
    stride = kernel if stride is None else pair(stride, "stride")
    xp = _pad(x, padding, fill)
    out = conv2d_output_size(x.shape[-2:], kernel, stride, padding, 1)
    taps = [xp[_taps(xp, i, j, out, stride, 1)] for i in range(kernel[0]) for j in range(kernel[1])]
    return np.stack(taps, axis=-1)


def max_pool2d(x: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
    """The largest value of each window over the last two axes (padding never wins)."""
    return pool_windows(x, kernel_size, stride, padding, fill=-np.inf).max(axis=-1)


def avg_pool2d(x: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
    """The mean of each window over the last two axes, padding counted as zeros (PyTorch's default)."""
    windows = pool_windows(x, kernel_size, stride, padding, fill=0)
    return windows.sum(axis=-1) / windows.shape[-1]
