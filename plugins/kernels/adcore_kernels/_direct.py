"""The direct algorithm: conv2d and its two gradients as plain numba loops, no matrix multiply.

O(N*C*O*H'*W'*kh*kw) multiply-adds on one core, the innermost loop running along an
output row. The naive baseline the other algorithms are measured against.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from adcore_kernels._geometry import Geometry
from adcore_kernels._numba import frozen


@njit(cache=True)
def valid_range(shift: int, step: int, size: int, count: int) -> tuple[int, int]:
    """[lo, hi): the q in [0, count) with 0 <= q*step + shift < size."""
    lo = 0 if shift >= 0 else (-shift + step - 1) // step
    hi = 0 if size - 1 - shift < 0 else (size - 1 - shift) // step + 1
    return lo, max(lo, min(hi, count))


@njit(cache=True)
def _forward(x, w, out_h, out_w, sh, sw, oh, ow, dh, dw):
    n_batch, n_in, height, width = x.shape
    n_out, _, kh, kw = w.shape
    y = np.zeros((n_batch, n_out, out_h, out_w), dtype=x.dtype)
    for n, o, c, i, j in np.ndindex(n_batch, n_out, n_in, kh, kw):
        weight = w[o, c, i, j]
        q_lo, q_hi = valid_range(j * dw - ow, sw, width, out_w)
        for r in range(out_h):
            h = r * sh + i * dh - oh
            if 0 <= h < height:
                for q in range(q_lo, q_hi):
                    y[n, o, r, q] += weight * x[n, c, h, q * sw + j * dw - ow]
    return y


@njit(cache=True)
def _input_grad(g, w, height, width, sh, sw, oh, ow, dh, dw):
    n_batch, n_out, out_h, out_w = g.shape
    _, n_in, kh, kw = w.shape
    gx = np.zeros((n_batch, n_in, height, width), dtype=g.dtype)
    for n, c, o, i, j in np.ndindex(n_batch, n_in, n_out, kh, kw):
        weight = w[o, c, i, j]
        q_lo, q_hi = valid_range(j * dw - ow, sw, width, out_w)
        for r in range(out_h):
            h = r * sh + i * dh - oh
            if 0 <= h < height:
                for q in range(q_lo, q_hi):
                    gx[n, c, h, q * sw + j * dw - ow] += weight * g[n, o, r, q]
    return gx


@njit(cache=True)
def _weight_grad(x, g, kh, kw, sh, sw, oh, ow, dh, dw):
    n_batch, n_in, height, width = x.shape
    _, n_out, out_h, out_w = g.shape
    gw = np.zeros((n_out, n_in, kh, kw), dtype=x.dtype)
    for o, c, i, j in np.ndindex(n_out, n_in, kh, kw):
        q_lo, q_hi = valid_range(j * dw - ow, sw, width, out_w)
        total = 0.0
        for n in range(n_batch):
            for r in range(out_h):
                h = r * sh + i * dh - oh
                if 0 <= h < height:
                    for q in range(q_lo, q_hi):
                        total += g[n, o, r, q] * x[n, c, h, q * sw + j * dw - ow]
        gw[o, c, i, j] = total
    return gw


def forward(x: np.ndarray, w: np.ndarray, geometry: Geometry) -> np.ndarray:
    return _forward(frozen(x), frozen(w), *geometry.ints())


def input_grad(g: np.ndarray, w: np.ndarray, input_size: tuple[int, int], geometry: Geometry) -> np.ndarray:
    return _input_grad(frozen(g), frozen(w), *input_size, *geometry.ints()[2:])


def weight_grad(x: np.ndarray, g: np.ndarray, kernel_size: tuple[int, int], geometry: Geometry) -> np.ndarray:
    return _weight_grad(frozen(x), frozen(g), *kernel_size, *geometry.ints()[2:])
