"""Winograd F(4x4, 3x3): 3x3 kernels at stride 1 and dilation 1, 36 multiplies per 4x4 output tile instead of 144.

Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (arXiv 1509.09308), with
the interpolation points 0, ±1, ±2 and ∞. The output is cut into 4x4 tiles; tile t reads a
6x6 input patch d (overlapping its neighbours by 2) and is

    y_t = A^T [ sum over c of (G w G^T) ⊙ (B^T d B) ] A.

numba does the transforms (input patches -> V, and the products back -> y); the sum over
channels, for each of the 36 positions of the 6x6 product, is one BLAS matrix multiply:
M[k] (O, tiles) = U[k] (O, C) @ V[k] (C, tiles). The weight gradient is the adjoint of the
same map in w: dU[k] = sum over tiles of (A e_t A^T)[k] V_t[k] (e_t the cotangent's 4x4 tile),
then gw = G^T dU G. The input gradient is a stride-1 3x3 convolution of the cotangent, so
conv.py runs `forward` on it.

Each transform works on one (image, channel) plane at a time and first splits it by row and
column phase (index mod 4): row a, column b of every tile's patch is then one shifted run of
the split plane, so both of its passes (along the patch rows, then down the columns) are loops
over all the plane's tiles at once, with unit strides that LLVM vectorizes. (Loops over the
tiles of one row, 8 on a 32x32 image, are too short for that: they ran 3x slower.)

The weight gradient needs the V of x its forward computed: `MEMO` (an `InputTransforms`) keeps
it, reused only for an x byte-equal to a copy of the forward's (forward + both gradients 7-9%
faster, median of 40 interleaved runs). Computing the forward image by image, so that V and M
stay in cache, did not pay (6.1-7.6 ms against 6.0).

Measured (2-core AMD EPYC, float32, N=8, C=O=64, 32x32, padding 1; CPU ms on one thread, the
best of 25, F(2x2) -> F(4x4)): input transform 2.62 -> 1.62, output transform 1.55 -> 1.06,
cotangent transform 1.82 -> 0.99, the forward's GEMMs 4.54 -> 2.47, the weight gradient's
4.69 -> 3.03. Against torch on one thread: forward 0.68-0.74x, forward + both gradients 0.55-0.60x.
"""

from __future__ import annotations

import threading
import zlib

import numpy as np
from numba import njit, prange

from adcore_kernels._direct import valid_range
from adcore_kernels._geometry import Geometry
from adcore_kernels._numba import SerialOrParallel, frozen  # first: sets numba's threading layer

TILE = 4  # the output tile's side; the input patch's is TILE + 2
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)
KRON_G = np.kron(G, G)  # (36, 9): row 6a+b, column 3i+j is G[a, i] * G[b, j], so U[6a+b] = KRON_G @ w[3i+j]
# B^T and A^T as matrices (the tests' reference; the kernels spell out their rows in _b_t and _a_t)
B_T = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=float,
)
A_T = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], dtype=float
)
CHUNK = 8  # planes per parallel work item: each item allocates its scratch once


def tile_counts(out: tuple[int, int]) -> tuple[int, int]:
    return -(-out[0] // TILE), -(-out[1] // TILE)


# ----------------------------------------------------------------------------- the 1-D transforms
# Multiples by doubling (exact): numba types `2 * a` for a float32 a as float64, which is not vectorized.
@njit(cache=True, inline="always")
def _x2(a):
    return a + a


@njit(cache=True, inline="always")
def _x4(a):
    return _x2(_x2(a))


@njit(cache=True, inline="always")
def _b_t(d0, d1, d2, d3, d4, d5):
    """B^T d for six values d along one side of an input patch."""
    return (
        _x4(d0 - d2) + (d4 - d2),
        (d3 + d4) - _x4(d1 + d2),
        (d4 - d3) + _x4(d1 - d2),
        (d4 - d2) + _x2(d3 - d1),
        (d4 - d2) - _x2(d3 - d1),
        _x4(d1 - d3) + (d5 - d3),
    )


@njit(cache=True, inline="always")
def _a_t(m0, m1, m2, m3, m4, m5):
    """A^T m for six values m along one side of a tile's product."""
    return (
        m0 + (m1 + m2) + (m3 + m4),
        (m1 - m2) + _x2(m3 - m4),
        (m1 + m2) + _x4(m3 + m4),
        (m1 - m2) + _x4(_x2(m3 - m4)) + m5,
    )


@njit(cache=True, inline="always")
def _a(e0, e1, e2, e3):
    """A e for four values e along one side of a cotangent tile (the adjoint of _a_t)."""
    near, far = e0 + _x4(e2), _x2(e1 + _x4(e3))
    return e0, (e0 + e2) + (e1 + e3), (e0 + e2) - (e1 + e3), near + far, near - far, e3


@njit(cache=True, inline="always")
def _four(a, first, step):
    """Four rows of a 2-D array, `step` apart."""
    return a[first], a[first + step], a[first + 2 * step], a[first + 3 * step]


@njit(cache=True, inline="always")
def _six(a, first, step):
    """Six rows of a 2-D array, `step` apart."""
    return _four(a, first, step) + (a[first + 4 * step], a[first + 5 * step])


@njit(cache=True, inline="always")
def _positions(a, b, plane, lo, hi):
    """Column b of the 6x6 product, rows 0..5 (positions b, b+6, ..., b+30 of a (36, planes, tiles)),
    tiles lo to hi of one plane: each a[k, plane, lo:hi], which numba types as contiguous, so the loops
    over it vectorize (a view a[:, plane, lo:hi] has a row stride LLVM cannot see, in a parallel kernel)."""
    return (
        a[b, plane, lo:hi],
        a[b + 6, plane, lo:hi],
        a[b + 12, plane, lo:hi],
        a[b + 18, plane, lo:hi],
        a[b + 24, plane, lo:hi],
        a[b + 30, plane, lo:hi],
    )


# ----------------------------------------------------------------------------- the tile transforms
@SerialOrParallel
def _input_transform(x, tiles_h, tiles_w, oh, ow):
    """V (36, C, N*tiles): B^T d B of every 6x6 input patch d, d[a, b] = x[4*ty + a - oh, 4*tx + b - ow] (0 outside)."""
    n_batch, n_in, height, width = x.shape
    tiles, planes, run = tiles_h * tiles_w, n_batch * n_in, (tiles_h + 1) * tiles_w
    row_lo, row_hi = max(0, -oh), min(height, 4 * tiles_h + 2 - oh)
    col_lo, col_hi = max(0, -ow), min(width, 4 * tiles_w + 2 - ow)
    inner_lo, inner_hi = valid_range(-ow, 4, width - 3, tiles_w)  # column groups with all 4 on the input
    edges = np.empty(max(0, col_hi - col_lo), dtype=np.int64)  # the input columns outside those groups
    n_edges = 0
    for col in range(col_lo, col_hi):
        if not inner_lo <= (col + ow) // 4 < inner_hi:
            edges[n_edges] = col
            n_edges += 1
    v = np.empty((36, n_in, n_batch * tiles), dtype=x.dtype)
    for chunk in prange((planes + CHUNK - 1) // CHUNK):
        # padded x[r, q] -> split[4*(r%4) + q%4, (r//4)*tiles_w + q//4] for q < 4*tiles_w, the last two
        # padded columns -> past[2*(r%4) + q - 4*tiles_w, r//4]; what is never written (padding) stays 0
        split = np.zeros((16, run + 1), dtype=x.dtype)
        past = np.zeros((8, tiles_h + 1), dtype=x.dtype)
        half = np.empty((24, run), dtype=x.dtype)  # half[4*b + r%4, (r//4)*tiles_w + tx] = (d B)[r, b]
        for nc in range(chunk * CHUNK, min(planes, chunk * CHUNK + CHUNK)):
            n, c = nc // n_in, nc % n_in
            for h in range(row_lo, row_hi):
                phase, base, row = 4 * ((h + oh) & 3), ((h + oh) >> 2) * tiles_w, x[n, c, h]
                s0, s1, s2, s3 = _four(split, phase, 1)
                for tx in range(inner_lo, inner_hi):
                    col = 4 * tx - ow
                    s0[base + tx] = row[col]
                    s1[base + tx] = row[col + 1]
                    s2[base + tx] = row[col + 2]
                    s3[base + tx] = row[col + 3]
                for e in range(n_edges):
                    col = edges[e]
                    q = col + ow
                    if q < 4 * tiles_w:
                        split[phase + (q & 3), base + (q >> 2)] = row[col]
                    else:
                        past[phase // 2 + q - 4 * tiles_w, (h + oh) >> 2] = row[col]
            for rp in range(4):  # d B along the patch rows of phase rp, all tiles at once
                s0, s1, s2, s3 = _four(split, 4 * rp, 1)
                h0, h1, h2, h3, h4, h5 = _six(half, rp, 4)
                for i in range(run):
                    h0[i], h1[i], h2[i], h3[i], h4[i], h5[i] = _b_t(
                        s0[i], s1[i], s2[i], s3[i], s0[i + 1], s1[i + 1]
                    )
                for big in range(tiles_h + 1):  # the last tile of a row reads its last 2 columns from past
                    i, p0, p1 = big * tiles_w + tiles_w - 1, past[2 * rp, big], past[2 * rp + 1, big]
                    h0[i], h1[i], h2[i], h3[i], h4[i], h5[i] = _b_t(s0[i], s1[i], s2[i], s3[i], p0, p1)
            lo, hi = n * tiles, (n + 1) * tiles
            # B^T (d B) down the patch columns: tile t's patch row a is at t + (a//4)*tiles_w
            for b in range(6):
                r0, r1, r2, r3 = _four(half, 4 * b, 1)
                o0, o1, o2, o3, o4, o5 = _positions(v, b, c, lo, hi)
                for t in range(tiles):
                    below = t + tiles_w  # patch rows 4 and 5 are rows 0 and 1 of the next tile row
                    o0[t], o1[t], o2[t], o3[t], o4[t], o5[t] = _b_t(
                        r0[t], r1[t], r2[t], r3[t], r0[below], r1[below]
                    )
    return v


@SerialOrParallel
def _output_transform(m, n_batch, out_h, out_w, tiles_h, tiles_w):
    """y (N, O, H', W') from M (36, O, N*tiles): A^T m A of every tile, the part inside the output."""
    n_out = m.shape[1]
    tiles, planes, inner = tiles_h * tiles_w, n_batch * n_out, min(tiles_w, out_w // 4)
    y = np.empty((n_batch, n_out, out_h, out_w), dtype=m.dtype)
    for chunk in prange((planes + CHUNK - 1) // CHUNK):
        half = np.empty((24, tiles), dtype=m.dtype)  # half[4*b + a, t] = (A^T m_t)[a, b]
        split = np.empty((16, tiles), dtype=m.dtype)  # split[4*a + i, t] = y_t[a, i]
        for no in range(chunk * CHUNK, min(planes, chunk * CHUNK + CHUNK)):
            n, o = no // n_out, no % n_out
            lo, hi = n * tiles, (n + 1) * tiles
            for b in range(6):  # A^T m down the columns, all tiles at once
                m0, m1, m2, m3, m4, m5 = _positions(m, b, o, lo, hi)
                h0, h1, h2, h3 = _four(half, 4 * b, 1)
                for t in range(tiles):
                    h0[t], h1[t], h2[t], h3[t] = _a_t(m0[t], m1[t], m2[t], m3[t], m4[t], m5[t])
            for a in range(4):  # (A^T m) A along the rows
                h0, h1, h2, h3, h4, h5 = _six(half, a, 4)
                y0, y1, y2, y3 = _four(split, 4 * a, 1)
                for t in range(tiles):
                    y0[t], y1[t], y2[t], y3[t] = _a_t(h0[t], h1[t], h2[t], h3[t], h4[t], h5[t])
            for h in range(out_h):  # interleave the phases back into y's rows
                phase, base, row = 4 * (h & 3), (h >> 2) * tiles_w, y[n, o, h]
                y0, y1, y2, y3 = _four(split, phase, 1)
                for tx in range(inner):
                    row[4 * tx] = y0[base + tx]
                    row[4 * tx + 1] = y1[base + tx]
                    row[4 * tx + 2] = y2[base + tx]
                    row[4 * tx + 3] = y3[base + tx]
                for col in range(4 * inner, out_w):
                    row[col] = split[phase + (col & 3), base + (col >> 2)]
    return y


@SerialOrParallel
def _cotangent_transform(g, tiles_h, tiles_w):
    """(36, O, N*tiles): A e A^T of every 4x4 cotangent tile e (zeros past the output's edge)."""
    n_batch, n_out, out_h, out_w = g.shape
    tiles, planes, inner = tiles_h * tiles_w, n_batch * n_out, min(tiles_w, out_w // 4)
    gm = np.empty((36, n_out, n_batch * tiles), dtype=g.dtype)
    for chunk in prange((planes + CHUNK - 1) // CHUNK):
        split = np.zeros((16, tiles), dtype=g.dtype)  # split[4*(r%4) + q%4, (r//4)*tiles_w + q//4] = g[r, q]
        half = np.empty((24, tiles), dtype=g.dtype)  # half[4*b + r%4, (r//4)*tiles_w + tx] = (e A^T)[r, b]
        for no in range(chunk * CHUNK, min(planes, chunk * CHUNK + CHUNK)):
            n, o = no // n_out, no % n_out
            for h in range(out_h):
                phase, base, row = 4 * (h & 3), (h >> 2) * tiles_w, g[n, o, h]
                s0, s1, s2, s3 = _four(split, phase, 1)
                for tx in range(inner):
                    s0[base + tx] = row[4 * tx]
                    s1[base + tx] = row[4 * tx + 1]
                    s2[base + tx] = row[4 * tx + 2]
                    s3[base + tx] = row[4 * tx + 3]
                for col in range(4 * inner, out_w):
                    split[phase + (col & 3), base + (col >> 2)] = row[col]
            for rp in range(4):  # e A^T along the rows of phase rp
                e0, e1, e2, e3 = _four(split, 4 * rp, 1)
                h0, h1, h2, h3, h4, h5 = _six(half, rp, 4)
                for t in range(tiles):
                    h0[t], h1[t], h2[t], h3[t], h4[t], h5[t] = _a(e0[t], e1[t], e2[t], e3[t])
            lo, hi = n * tiles, (n + 1) * tiles
            for b in range(6):  # A (e A^T) down the columns
                h0, h1, h2, h3 = _four(half, 4 * b, 1)
                o0, o1, o2, o3, o4, o5 = _positions(gm, b, o, lo, hi)
                for t in range(tiles):
                    o0[t], o1[t], o2[t], o3[t], o4[t], o5[t] = _a(h0[t], h1[t], h2[t], h3[t])
    return gm


def _kernel_transform(w: np.ndarray) -> np.ndarray:
    """U (36, O, C): G w G^T of every 3x3 kernel, as one matrix product with kron(G, G)."""
    n_out, n_in = w.shape[:2]
    return (KRON_G.astype(w.dtype) @ w.reshape(n_out * n_in, 9).T).reshape(36, n_out, n_in)


# ----------------------------------------------------------------------------- reusing V
class InputTransforms:
    """The input transforms V of the latest forwards, each kept with a copy of its x.

    `weight_grad` needs the V of x that the forward computed. It reuses a kept one only for the
    same dtype, shape and geometry and an x byte-equal to the copy (x's CRC-32 finds the candidates,
    np.array_equal confirms: two reads of x, where the transform reads it and writes 2.25x as
    much), so a V is never stale, whoever mutated x since; a lookup compares no kept copy whose
    checksum differs (numeric's perturbed xs, many of one shape, each missed after a full compare). The newest are kept up to `max_bytes` in all (x's copies and Vs), so a network's
    backward sweep, which runs its layers' weight gradients in reverse, finds each layer's V
    while they fit. Thread-safe; a kept V is read-only.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.hits = self.misses = 0  # lookups that found a V, that did not
        self._kept: list[
            tuple[tuple, int, np.ndarray, np.ndarray]
        ] = []  # (key, crc32 of x, copy of x, V), newest first
        self._lock = threading.Lock()

    def keep(self, x: np.ndarray, key: tuple, v: np.ndarray) -> None:
        if x.nbytes + v.nbytes > self.max_bytes:
            return
        v.flags.writeable = False
        bits = _bits(x)
        entry = (key, zlib.crc32(bits), bits.copy(), v)
        with self._lock:
            kept, total = [entry], x.nbytes + v.nbytes
            for old in self._kept:  # the newest that fit beside it
                total += old[2].nbytes + old[3].nbytes
                if total > self.max_bytes:
                    break
                kept.append(old)
            self._kept = kept

    def find(self, x: np.ndarray, key: tuple) -> np.ndarray | None:
        with self._lock:
            kept = list(self._kept)
        bits = _bits(x)  # the copies and Vs are never written: compared outside the lock
        crc = zlib.crc32(bits)  # one read of x, and then only an x with the same checksum is compared
        same = (v for k, c, copy, v in kept if c == crc and k == key and np.array_equal(copy, bits))
        v = next(same, None)
        with self._lock:
            self.hits, self.misses = self.hits + (v is not None), self.misses + (v is None)
        return v

    def clear(self) -> None:
        """Forget every kept transform and zero the counts."""
        with self._lock:
            self._kept, self.hits, self.misses = [], 0, 0


def _bits(a: np.ndarray) -> np.ndarray:
    """a's bytes as one flat array of unsigned ints: equal only where a is bit for bit (-0.0 is not 0.0)."""
    return np.ascontiguousarray(a).reshape(-1).view(f"u{a.itemsize}")


MEMO = InputTransforms()


# ----------------------------------------------------------------------------- the two entry points
def forward(x: np.ndarray, w: np.ndarray, geometry: Geometry, keep: bool = True) -> np.ndarray:
    """y; V kept for x's weight gradient unless `keep` is False (the input gradient's forward of g)."""
    tiles_h, tiles_w = tile_counts(geometry.out)
    v = _input_transform(frozen(x), tiles_h, tiles_w, *geometry.offset)
    if keep:
        MEMO.keep(x, (x.dtype, x.shape, geometry), v)
    m = np.matmul(_kernel_transform(w), v)  # (36, O, N*tiles): 36 BLAS multiplies
    return _output_transform(frozen(m), x.shape[0], *geometry.out, tiles_h, tiles_w)


def weight_grad(x: np.ndarray, g: np.ndarray, geometry: Geometry) -> np.ndarray:
    tiles_h, tiles_w = tile_counts(geometry.out)
    v = MEMO.find(x, (x.dtype, x.shape, geometry))
    if v is None:
        v = _input_transform(frozen(x), tiles_h, tiles_w, *geometry.offset)
    gm = _cotangent_transform(frozen(g), tiles_h, tiles_w)
    du = np.matmul(gm, v.transpose(0, 2, 1))  # (36, O, C)
    n_out, n_in = du.shape[1:]
    return (du.reshape(36, n_out * n_in).T @ KRON_G.astype(x.dtype)).reshape(n_out, n_in, 3, 3)  # G^T dU G
