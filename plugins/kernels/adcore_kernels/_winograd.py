"""Winograd F(2x2, 3x3): 3x3 kernels at stride 1 and dilation 1, 16 multiplies per 2x2 output tile instead of 36.

Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (arXiv 1509.09308). The
output is cut into 2x2 tiles; tile t reads a 4x4 input patch d (overlapping its
neighbours by 2) and is

    y_t = A^T [ sum over c of (G w G^T) ⊙ (B^T d B) ] A.

numba does the transforms (input patches -> V, and the products back -> y); the sum over
channels, for each of the 16 positions of the 4x4 product, is one BLAS matrix multiply:
M[k] (O, tiles) = U[k] (O, C) @ V[k] (C, tiles). The weight gradient is the adjoint of the
same map in w: dU[k] = (A g_t A^T)[k] summed against V[k], then gw = G^T dU G. The input
gradient is a stride-1 3x3 convolution of the cotangent, so conv.py runs `forward` on it.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from adcore_kernels._geometry import Geometry
from adcore_kernels._numba import SerialOrParallel, frozen  # first: sets numba's threading layer

G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
KRON_G = np.kron(G, G)  # (16, 9): row 4a+b, column 3i+j is G[a, i] * G[b, j], so U[4a+b] = KRON_G @ w[3i+j]


def tile_counts(out: tuple[int, int]) -> tuple[int, int]:
    return (out[0] + 1) // 2, (out[1] + 1) // 2


@SerialOrParallel
def _input_transform(x, tiles_h, tiles_w, oh, ow):
    """V (16, C, N*tiles): B^T d B of every 4x4 input patch d, read at rows 2*ty - oh + a (zeros outside)."""
    n_batch, n_in, height, width = x.shape
    tiles, span = tiles_h * tiles_w, 2 * tiles_w + 2
    inside_lo = min(max(0, ow), span)  # the columns of a patch row that lie on the input
    inside_hi = max(inside_lo, min(span, width + ow))
    v = np.empty((16, n_in, n_batch * tiles), dtype=x.dtype)
    for nc in prange(n_batch * n_in):  # one (image, channel) plane per iteration, its own scratch
        n, c = nc // n_in, nc % n_in
        rows = np.zeros((4, span), dtype=x.dtype)  # the 4 input rows of one row of tiles
        t = np.empty((4, span), dtype=x.dtype)
        for ty in range(tiles_h):
            for a in range(4):  # element by element: an array slice assignment compiles ~2 s more
                h = 2 * ty - oh + a
                if 0 <= h < height:
                    for col in range(inside_lo, inside_hi):
                        rows[a, col] = x[n, c, h, col - ow]
                else:
                    for col in range(inside_lo, inside_hi):
                        rows[a, col] = 0
            for col in range(span):  # t = B^T rows
                t[0, col] = rows[0, col] - rows[2, col]
                t[1, col] = rows[1, col] + rows[2, col]
                t[2, col] = rows[2, col] - rows[1, col]
                t[3, col] = rows[1, col] - rows[3, col]
            p = n * tiles + ty * tiles_w
            for a in range(4):  # V = t B, tile by tile along the row
                for tx in range(tiles_w):
                    q = 2 * tx
                    v[4 * a + 0, c, p + tx] = t[a, q] - t[a, q + 2]
                    v[4 * a + 1, c, p + tx] = t[a, q + 1] + t[a, q + 2]
                    v[4 * a + 2, c, p + tx] = t[a, q + 2] - t[a, q + 1]
                    v[4 * a + 3, c, p + tx] = t[a, q + 1] - t[a, q + 3]
    return v


@SerialOrParallel
def _output_transform(m, n_batch, out_h, out_w, tiles_h, tiles_w):
    """y (N, O, H', W') from M (16, O, N*tiles): A^T m A of every tile, the part inside the output."""
    n_out = m.shape[1]
    tiles, whole = tiles_h * tiles_w, out_w // 2  # tiles whose two columns are both inside
    y = np.empty((n_batch, n_out, out_h, out_w), dtype=m.dtype)
    for no in prange(n_batch * n_out):  # one (image, filter) plane per iteration, its own scratch
        n, o = no // n_out, no % n_out
        s = np.empty((2, 4, tiles_w), dtype=m.dtype)
        for ty in range(tiles_h):
            p = n * tiles + ty * tiles_w
            for b in range(4):  # s = A^T m
                for tx in range(tiles_w):
                    m0, m1, m2, m3 = (
                        m[b, o, p + tx],
                        m[4 + b, o, p + tx],
                        m[8 + b, o, p + tx],
                        m[12 + b, o, p + tx],
                    )
                    s[0, b, tx] = m0 + m1 + m2
                    s[1, b, tx] = m1 - m2 - m3
            for a in range(min(2, out_h - 2 * ty)):  # y = s A
                r = 2 * ty + a
                for tx in range(whole):
                    y[n, o, r, 2 * tx] = s[a, 0, tx] + s[a, 1, tx] + s[a, 2, tx]
                    y[n, o, r, 2 * tx + 1] = s[a, 1, tx] - s[a, 2, tx] - s[a, 3, tx]
                if whole < tiles_w:
                    y[n, o, r, 2 * whole] = s[a, 0, whole] + s[a, 1, whole] + s[a, 2, whole]
    return y


@SerialOrParallel
def _cotangent_transform(g, tiles_h, tiles_w):
    """(16, O, N*tiles): A e A^T of every 2x2 cotangent tile e (zeros past the output's edge)."""
    n_batch, n_out, out_h, out_w = g.shape
    tiles, span = tiles_h * tiles_w, 2 * tiles_w
    gm = np.empty((16, n_out, n_batch * tiles), dtype=g.dtype)
    for no in prange(n_batch * n_out):  # one (image, filter) plane per iteration, its own scratch
        n, o = no // n_out, no % n_out
        e = np.zeros((2, span), dtype=g.dtype)  # two rows of g, a zero column past an odd width
        t = np.empty((4, span), dtype=g.dtype)
        for ty in range(tiles_h):
            for a in range(2):
                r = 2 * ty + a
                if r < out_h:
                    for col in range(out_w):
                        e[a, col] = g[n, o, r, col]
                else:
                    for col in range(out_w):
                        e[a, col] = 0
            for col in range(span):  # t = A e
                t[0, col] = e[0, col]
                t[1, col] = e[0, col] + e[1, col]
                t[2, col] = e[0, col] - e[1, col]
                t[3, col] = -e[1, col]
            p = n * tiles + ty * tiles_w
            for a in range(4):  # t A^T, tile by tile along the row
                for tx in range(tiles_w):
                    q = 2 * tx
                    gm[4 * a + 0, o, p + tx] = t[a, q]
                    gm[4 * a + 1, o, p + tx] = t[a, q] + t[a, q + 1]
                    gm[4 * a + 2, o, p + tx] = t[a, q] - t[a, q + 1]
                    gm[4 * a + 3, o, p + tx] = -t[a, q + 1]
    return gm


def _kernel_transform(w: np.ndarray) -> np.ndarray:
    """U (16, O, C): G w G^T of every 3x3 kernel, as one matrix product with kron(G, G)."""
    n_out, n_in = w.shape[:2]
    return (KRON_G.astype(w.dtype) @ w.reshape(n_out * n_in, 9).T).reshape(16, n_out, n_in)


def forward(x: np.ndarray, w: np.ndarray, geometry: Geometry) -> np.ndarray:
    tiles_h, tiles_w = tile_counts(geometry.out)
    v = _input_transform(frozen(x), tiles_h, tiles_w, *geometry.offset)
    m = np.matmul(_kernel_transform(w), v)  # (16, O, N*tiles): 16 BLAS multiplies
    return _output_transform(frozen(m), x.shape[0], *geometry.out, tiles_h, tiles_w)


def weight_grad(x: np.ndarray, g: np.ndarray, geometry: Geometry) -> np.ndarray:
    tiles_h, tiles_w = tile_counts(geometry.out)
    v = _input_transform(frozen(x), tiles_h, tiles_w, *geometry.offset)
    gm = _cotangent_transform(frozen(g), tiles_h, tiles_w)
    du = np.matmul(gm, v.transpose(0, 2, 1))  # (16, O, C)
    n_out, n_in = du.shape[1:]
    return (du.reshape(16, n_out * n_in).T @ KRON_G.astype(x.dtype)).reshape(n_out, n_in, 3, 3)  # G^T dU G
