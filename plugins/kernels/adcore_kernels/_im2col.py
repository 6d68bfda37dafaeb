"""The im2col algorithm: unfold the input's windows into a matrix, so conv2d is one matrix multiply.

`cols[n, (c*kh + i)*kw + j, r*W' + q]` is the input pixel that tap (i, j) of channel c
meets at output (r, q). numba does the unfolding (im2col) and its adjoint, the
scatter-add of columns back onto the image (col2im); NumPy's BLAS does the multiplies:

    forward      y[n]  = w (O, C*kh*kw) @ cols[n]
    input grad   gx[n] = col2im(w.T @ g[n])
    weight grad  gw    = sum over n of g[n] @ cols[n].T
"""

from __future__ import annotations

import numpy as np
from numba import njit

from adcore_kernels._direct import valid_range
from adcore_kernels._geometry import Geometry
from adcore_kernels._numba import frozen


@njit(cache=True)
def _im2col(x, kh, kw, out_h, out_w, sh, sw, oh, ow, dh, dw):
    n_batch, n_in, height, width = x.shape
    cols = np.empty((n_batch, n_in * kh * kw, out_h * out_w), dtype=x.dtype)
    for n, c in np.ndindex(n_batch, n_in):
        for i in range(kh):
            for j in range(kw):
                row = (c * kh + i) * kw + j
                shift = j * dw - ow
                q_lo, q_hi = valid_range(shift, sw, width, out_w)
                for r in range(out_h):
                    h = r * sh + i * dh - oh
                    base = r * out_w
                    if 0 <= h < height:
                        for q in range(q_lo):
                            cols[n, row, base + q] = 0
                        for q in range(q_lo, q_hi):
                            cols[n, row, base + q] = x[n, c, h, q * sw + shift]
                        for q in range(q_hi, out_w):
                            cols[n, row, base + q] = 0
                    else:
                        for q in range(out_w):
                            cols[n, row, base + q] = 0
    return cols


@njit(cache=True)
def _col2im(cols, n_in, height, width, kh, kw, out_h, out_w, sh, sw, oh, ow, dh, dw):
    n_batch = cols.shape[0]
    image = np.zeros((n_batch, n_in, height, width), dtype=cols.dtype)
    for n, c in np.ndindex(n_batch, n_in):
        for i in range(kh):
            for j in range(kw):
                row = (c * kh + i) * kw + j
                shift = j * dw - ow
                q_lo, q_hi = valid_range(shift, sw, width, out_w)
                for r in range(out_h):
                    h = r * sh + i * dh - oh
                    if 0 <= h < height:
                        base = r * out_w
                        for q in range(q_lo, q_hi):
                            image[n, c, h, q * sw + shift] += cols[n, row, base + q]
    return image


def forward(x: np.ndarray, w: np.ndarray, geometry: Geometry) -> np.ndarray:
    n_out, n_in, kh, kw = w.shape
    cols = _im2col(frozen(x), kh, kw, *geometry.ints())
    y = np.matmul(w.reshape(n_out, n_in * kh * kw), cols)  # (N, O, H'*W')
    return y.reshape(x.shape[0], n_out, *geometry.out)


def input_grad(g: np.ndarray, w: np.ndarray, input_size: tuple[int, int], geometry: Geometry) -> np.ndarray:
    n_batch, n_out = g.shape[:2]
    _, n_in, kh, kw = w.shape
    taps = g.reshape(n_batch, n_out, g.shape[2] * g.shape[3])
    cols = np.matmul(w.reshape(n_out, n_in * kh * kw).T, taps)  # (N, C*kh*kw, H'*W')
    return _col2im(frozen(cols), n_in, *input_size, kh, kw, *geometry.ints())


def weight_grad(x: np.ndarray, g: np.ndarray, kernel_size: tuple[int, int], geometry: Geometry) -> np.ndarray:
    n_batch, n_out, out_h, out_w = g.shape
    cols = _im2col(frozen(x), *kernel_size, *geometry.ints())
    per_image = np.matmul(
        g.reshape(n_batch, n_out, out_h * out_w), cols.transpose(0, 2, 1)
    )  # (N, O, C*kh*kw)
    return per_image.sum(axis=0).reshape(n_out, x.shape[1], *kernel_size)
