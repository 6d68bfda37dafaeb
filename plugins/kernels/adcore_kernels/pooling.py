"""Pooling kernels (numba): max and average pooling over the last two axes, and their transposes.

Every function pools the last two axes (H, W) of an array with any leading axes, which the
kernels see flattened into one axis L. Params are already checked and
normalized to (h, w) pairs by `adcore_kernels._geometry` (which the ops' impls in
`adcore_kernels.ops` call first); the output has the inputs' dtype.

Window (r, q) covers rows r*sh - ph ... r*sh - ph + kh - 1 (and likewise columns) of the
input; the positions that fall in the padding are skipped. So max pooling never picks the
padding (PyTorch pads with -inf), and average pooling counts it as zeros by dividing every
window's sum by kh*kw (PyTorch's count_include_pad=True).

Max pooling's derivative at a window goes to the window's maxima, split equally among the
k of them on a tie (docs/conventions.md): `max_pool2d_gather` reads a tangent there,
`max_pool2d_scatter` spreads a cotangent back there. The two are each other's transpose,
and each takes a first input with more leading axes than x (a batch of tangents).

numba is imported with this module, which only the ops' impls import, when they first run;
each kernel compiles on its first call (`cache=True`: later processes load it from disk), once
per dtype (its inputs are handed over read-only, `_numba.frozen`). The window helpers are plain
calls, which LLVM inlines: numba's `inline="always"` made the kernels ~8% slower to compile and
no faster to run (3x3/2 max pooling of a (32, 64, 32, 32) float64 array, scatter, gather, avg).

The kernels run on one thread. `parallel=True` did not pay on the 2-core machine this was
measured on: pooling reads memory more than it computes (max pooling 3x3/2 of a
(32, 64, 32, 32) float64 array: 7.8 ms serial, 7.1 ms parallel; its scatter 15.5 ms serial,
16.9 ms parallel), waking the threads costs 5 us per call idle and milliseconds on a busy
machine (the conformance suite makes thousands of tiny calls).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from adcore_kernels._numba import frozen
from adcore_kernels.reference import conv2d_output_size

Pair = tuple[int, int]


# --- kernels ---------------------------------------------------------------------------------
# x is (L, H, W); a window is clipped to the input: rows y0 + i for i in range(i0, i1).


@njit(cache=True)
def _clip(start: int, k: int, n: int) -> tuple[int, int]:
    """The kernel offsets i in [i0, i1) with start + i inside [0, n)."""
    return max(0, -start), min(k, n - start)


@njit(cache=True)
def _window_max(x, n, y0, i0, i1, z0, j0, j1):
    """The largest value of x[n] in the window; NaN if the window holds a NaN (as np.max)."""
    m = -np.inf
    for i in range(i0, i1):
        for j in range(j0, j1):
            v = x[n, y0 + i, z0 + j]
            if v > m or v != v:
                m = v
                if v != v:
                    return m
    return m


@njit(cache=True)
def _is_max(v, m) -> bool:
    return v == m or (v != v and m != m)


@njit(cache=True)
def _count_max(x, n, y0, i0, i1, z0, j0, j1, top):
    """How many values of x[n] in the window equal its maximum `top` (at least 1)."""
    count = 0
    for i in range(i0, i1):
        for j in range(j0, j1):
            if _is_max(x[n, y0 + i, z0 + j], top):
                count += 1
    return count


@njit(cache=True)
def _max_pool(x, kh, kw, sh, sw, ph, pw, out):
    L, H, W = x.shape
    for n in range(L):
        for r in range(out.shape[1]):
            y0 = r * sh - ph
            i0, i1 = _clip(y0, kh, H)
            for q in range(out.shape[2]):
                z0 = q * sw - pw
                j0, j1 = _clip(z0, kw, W)
                out[n, r, q] = _window_max(x, n, y0, i0, i1, z0, j0, j1)


@njit(cache=True)
def _max_pool_gather(t, x, kh, kw, sh, sw, ph, pw, out):
    """out[m, n, r, q]: the mean of t[m, n] over the maxima of x[n]'s window (r, q)."""
    M, L, H, W = t.shape
    for n in range(L):
        for r in range(out.shape[2]):
            y0 = r * sh - ph
            i0, i1 = _clip(y0, kh, H)
            for q in range(out.shape[3]):
                z0 = q * sw - pw
                j0, j1 = _clip(z0, kw, W)
                top = _window_max(x, n, y0, i0, i1, z0, j0, j1)
                count = _count_max(x, n, y0, i0, i1, z0, j0, j1, top)
                for m in range(M):
                    total = 0.0
                    for i in range(i0, i1):
                        for j in range(j0, j1):
                            if _is_max(x[n, y0 + i, z0 + j], top):
                                total += t[m, n, y0 + i, z0 + j]
                    out[m, n, r, q] = total / count


@njit(cache=True)
def _max_pool_scatter(g, x, kh, kw, sh, sw, ph, pw, out):
    """out[m, n] (zeros on entry) += g[m, n, r, q] split equally among the maxima of x[n]'s window (r, q)."""
    M, L, H, W = out.shape
    for n in range(L):
        for r in range(g.shape[2]):
            y0 = r * sh - ph
            i0, i1 = _clip(y0, kh, H)
            for q in range(g.shape[3]):
                z0 = q * sw - pw
                j0, j1 = _clip(z0, kw, W)
                top = _window_max(x, n, y0, i0, i1, z0, j0, j1)
                count = _count_max(x, n, y0, i0, i1, z0, j0, j1, top)
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        if _is_max(x[n, y0 + i, z0 + j], top):
                            for m in range(M):
                                out[m, n, y0 + i, z0 + j] += g[m, n, r, q] / count


@njit(cache=True)
def _avg_pool(x, kh, kw, sh, sw, ph, pw, out):
    L, H, W = x.shape
    for n in range(L):
        for r in range(out.shape[1]):
            y0 = r * sh - ph
            i0, i1 = _clip(y0, kh, H)
            for q in range(out.shape[2]):
                z0 = q * sw - pw
                j0, j1 = _clip(z0, kw, W)
                total = 0.0
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        total += x[n, y0 + i, z0 + j]
                out[n, r, q] = total / (kh * kw)


@njit(cache=True)
def _avg_pool_grad(g, kh, kw, sh, sw, ph, pw, out):
    """out[n] (zeros on entry) += g[n, r, q] / (kh*kw) over window (r, q)."""
    L, H, W = out.shape
    for n in range(L):
        for r in range(g.shape[1]):
            y0 = r * sh - ph
            i0, i1 = _clip(y0, kh, H)
            for q in range(g.shape[2]):
                z0 = q * sw - pw
                j0, j1 = _clip(z0, kw, W)
                share = g[n, r, q] / (kh * kw)
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        out[n, y0 + i, z0 + j] += share


# --- the arrays the kernels take ----------------------------------------------------------------


def _flat(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x as a read-only C-contiguous (L, H, W) array of `dtype`: one compiled kernel per dtype."""
    return frozen(x, dtype).reshape((math.prod(x.shape[:-2]), *x.shape[-2:]))


def _batched(first: np.ndarray, x: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, tuple]:
    """first (..., h, w) and x (..., H, W) as read-only (M, L, h, w) and (L, H, W), their leading axes
    broadcast together; and the broadcast leading shape. x is copied out to the broadcast
    shape only where its own leading axes are not the trailing ones of that shape."""
    lead = np.broadcast_shapes(first.shape[:-2], x.shape[:-2])
    own = x.shape[:-2]
    if lead[len(lead) - len(own) :] != own:
        x, own = np.broadcast_to(x, lead + x.shape[-2:]), lead
    first = np.broadcast_to(first, lead + first.shape[-2:])
    shape = (math.prod(lead[: len(lead) - len(own)]), math.prod(own), *first.shape[-2:])
    return frozen(first, dtype).reshape(shape), _flat(x, dtype), lead


# --- the ops' computations ------------------------------------------------------------------------


def max_pool2d(x: np.ndarray, kernel: Pair, stride: Pair, padding: Pair) -> np.ndarray:
    """The largest value of each window of x (..., H, W): (..., H', W')."""
    flat = _flat(x, x.dtype)
    out = np.empty((flat.shape[0], *conv2d_output_size(x.shape[-2:], kernel, stride, padding, 1)), x.dtype)
    _max_pool(flat, *kernel, *stride, *padding, out)
    return out.reshape(x.shape[:-2] + out.shape[-2:])


def max_pool2d_gather(t: np.ndarray, x: np.ndarray, kernel: Pair, stride: Pair, padding: Pair) -> np.ndarray:
    """t (..., H, W) read at each window's maxima of x (ties averaged): (..., H', W')."""
    dtype = np.result_type(t, x)
    t4, x3, lead = _batched(t, x, dtype)
    out = np.empty((*t4.shape[:2], *conv2d_output_size(x.shape[-2:], kernel, stride, padding, 1)), dtype)
    _max_pool_gather(t4, x3, *kernel, *stride, *padding, out)
    return out.reshape(lead + out.shape[-2:])


def max_pool2d_scatter(g: np.ndarray, x: np.ndarray, kernel: Pair, stride: Pair, padding: Pair) -> np.ndarray:
    """g (..., H', W') spread onto each window's maxima of x (ties split equally): (..., H, W)."""
    dtype = np.result_type(g, x)
    g4, x3, lead = _batched(g, x, dtype)
    out = np.zeros((*g4.shape[:2], *x.shape[-2:]), dtype)
    _max_pool_scatter(g4, x3, *kernel, *stride, *padding, out)
    return out.reshape(lead + out.shape[-2:])


def avg_pool2d(x: np.ndarray, kernel: Pair, stride: Pair, padding: Pair) -> np.ndarray:
    """The mean of each window of x (..., H, W), padding counted as zeros: (..., H', W')."""
    flat = _flat(x, x.dtype)
    out = np.empty((flat.shape[0], *conv2d_output_size(x.shape[-2:], kernel, stride, padding, 1)), x.dtype)
    _avg_pool(flat, *kernel, *stride, *padding, out)
    return out.reshape(x.shape[:-2] + out.shape[-2:])


def avg_pool2d_grad(g: np.ndarray, input_size: Pair, kernel: Pair, stride: Pair, padding: Pair) -> np.ndarray:
    """g (..., H', W') spread evenly over each window of an input of `input_size`: (..., H, W)."""
    flat = _flat(g, g.dtype)
    out = np.zeros((flat.shape[0], *input_size), g.dtype)
    _avg_pool_grad(flat, *kernel, *stride, *padding, out)
    return out.reshape(g.shape[:-2] + tuple(input_size))
