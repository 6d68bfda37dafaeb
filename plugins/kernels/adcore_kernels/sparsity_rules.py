"""The kernel ops' `sparsity` rules: which output elements may depend on which input elements.

Every op here reads its input through windows: output pixel (r, q) and kernel tap (i, j) meet the
input at row r*stride_h + i*dilation_h - padding_h and column q*stride_w + j*dilation_w - padding_w
(_geometry.py), a read outside the input being a zero. `taps` lists those (output pixel, tap,
input pixel) triples once per geometry; each rule spreads them over the batch and channel axes
with broadcasting, so an entry is one (output element, input element) pair the op sums. The
convolutions are bilinear: an entry is kept where the other factor may be non-zero (a known zero,
a constant weight's or any value at a point, reads nothing). Max pooling depends, at a point (or
on a constant x), on each window's maxima only (all of them on a tie), else on the whole window.

The rule form is adcore_sparsity.extend's, imported when a rule runs or the table is first read
(SPARSITY_RULES), so importing this module needs no sparsity plugin: plugin.py registers the table
where adcore-sparsity is installed.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from adcore_kernels.reference import conv2d_output_size, pair


class Taps(NamedTuple):
    """The valid reads of a windowed op on (H, W) inputs, flat: output pixel, tap, input pixel."""

    out: np.ndarray  # r * W' + q
    tap: np.ndarray  # i * kw + j
    into: np.ndarray  # row * W + column


def taps(
    size: Any, kernel: Any, stride: Any, padding: Any, dilation: Any = 1
) -> tuple[Taps, tuple[int, int]]:
    """The taps of a convolution (or pooling) of an input of spatial `size`, and its output size."""
    (h, w), (kh, kw) = pair(size), pair(kernel)
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    out = conv2d_output_size((h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    r, q, i, j = np.ix_(np.arange(out[0]), np.arange(out[1]), np.arange(kh), np.arange(kw))
    row, col = r * sh + i * dh - ph, q * sw + j * dw - pw
    valid = (row >= 0) & (row < h) & (col >= 0) & (col < w)
    shape = valid.shape
    flat = [np.broadcast_to(v, shape)[valid] for v in (r * out[1] + q, i * kw + j, row * w + col)]
    return Taps(*flat), out


def _matrix(rows: np.ndarray, cols: np.ndarray, keep: np.ndarray, shape: tuple[int, int]) -> Any:
    from scipy import sparse

    rows, cols, keep = np.broadcast_arrays(rows, cols, keep)
    rows, cols = rows[keep], cols[keep]
    matrix = sparse.coo_array((np.ones(rows.size), (rows, cols)), shape=shape).tocsr()
    matrix.sum_duplicates()
    return matrix


def _nonzero(x: Any) -> np.ndarray | None:
    """Where a known x may be non-zero; None for an Unknown (anywhere)."""
    return (np.asarray(x) != 0) if _known(x) else None


def _known(x: Any) -> bool:
    """Whether the rule may read x's numbers (a local pattern's value, not a global one's stand-in)."""
    from adcore_sparsity.extend import known

    return known(x)


def _size(shape: Any) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _index(*axes: int) -> tuple[np.ndarray, ...]:
    """Open grids over (n, o, c, entry) for broadcasting."""
    return np.ix_(*(np.arange(a) for a in axes))


# --- convolutions ---------------------------------------------------------------------------------


def _conv_terms(n_batch: int, o: int, c: int, t: Taps):
    """Open grids (n, o, c, e) and the taps, for every term x[n, c, in] w[o, c, tap] of out[n, o, out]."""
    n, oo, cc, e = _index(n_batch, o, c, t.out.size)
    return n, oo, cc, t.out[e], t.tap[e], t.into[e]


def _bilinear(
    ans: Any, out_flat: np.ndarray, a: Any, a_flat: np.ndarray, b: Any, b_flat: np.ndarray
) -> tuple:
    """The patterns of a bilinear op whose terms a[a_flat] * b[b_flat] sum into ans[out_flat]: a term
    whose other factor is a known zero reaches nothing."""
    nz_a, nz_b = _nonzero(a), _nonzero(b)
    keep_a = True if nz_b is None else nz_b.reshape(-1)[b_flat]
    keep_b = True if nz_a is None else nz_a.reshape(-1)[a_flat]
    size = _size(np.shape(ans))
    return (
        _matrix(out_flat, a_flat, keep_a, (size, _size(np.shape(a)))),
        _matrix(out_flat, b_flat, keep_b, (size, _size(np.shape(b)))),
    )


def _conv2d(
    ans: Any, x: Any, w: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, **_: Any
) -> tuple:
    (nb, nc, hi, wi), (no, _c, kh, kw) = np.shape(x), np.shape(w)
    t, (h2, w2) = taps((hi, wi), (kh, kw), stride, padding, dilation)
    n, o, c, out, tap, into = _conv_terms(nb, no, nc, t)
    out_flat = (n * no + o) * (h2 * w2) + out
    x_flat, w_flat = (n * nc + c) * (hi * wi) + into, (o * nc + c) * (kh * kw) + tap
    return _bilinear(ans, out_flat, x, x_flat, w, w_flat)


def _conv2d_input_grad(
    ans: Any, g: Any, w: Any, input_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, **_: Any
) -> tuple:
    (nb, no, h2, w2), (_o, nc, kh, kw) = np.shape(g), np.shape(w)
    hi, wi = pair(input_size)
    t, _out = taps((hi, wi), (kh, kw), stride, padding, dilation)
    n, o, c, out, tap, into = _conv_terms(nb, no, nc, t)
    ans_flat = (n * nc + c) * (hi * wi) + into
    g_flat, w_flat = (n * no + o) * (h2 * w2) + out, (o * nc + c) * (kh * kw) + tap
    return _bilinear(ans, ans_flat, g, g_flat, w, w_flat)


def _conv2d_weight_grad(
    ans: Any, x: Any, g: Any, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, **_: Any
) -> tuple:
    (nb, nc, hi, wi), (_n, no, h2, w2) = np.shape(x), np.shape(g)
    kh, kw = pair(kernel_size)
    t, _out = taps((hi, wi), (kh, kw), stride, padding, dilation)
    n, o, c, out, tap, into = _conv_terms(nb, no, nc, t)
    ans_flat = (o * nc + c) * (kh * kw) + tap
    x_flat, g_flat = (n * nc + c) * (hi * wi) + into, (n * no + o) * (h2 * w2) + out
    return _bilinear(ans, ans_flat, x, x_flat, g, g_flat)


# --- pooling --------------------------------------------------------------------------------------


def _pool_taps(size: Any, kernel_size: Any, stride: Any, padding: Any) -> tuple[Taps, tuple[int, int]]:
    kernel = pair(kernel_size)
    return taps(size, kernel, kernel if stride is None else stride, padding)


def _leads(first: tuple[int, ...], x: tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray, int]:
    """For each leading index of the output (the leading axes of `first` and of x broadcast), the
    flat leading index into `first` and into x, and their number."""
    lead_x = first if x is None else x
    out = np.broadcast_shapes(first, lead_x)
    into_first = np.broadcast_to(np.arange(_size(first)).reshape(first), out).ravel()
    into_x = np.broadcast_to(np.arange(_size(lead_x)).reshape(lead_x), out).ravel()
    return into_first, into_x, _size(out)


def _maxima(x: np.ndarray, t: Taps, out_pixels: int) -> np.ndarray:
    """(leading index of x, entry): whether the entry's input pixel is a maximum of its window."""
    values = x.reshape(-1, x.shape[-2] * x.shape[-1])[:, t.into]  # (L, entries)
    top = np.full((values.shape[0], out_pixels), -np.inf, dtype=np.float64)
    rows = np.broadcast_to(np.arange(values.shape[0])[:, None], values.shape)
    np.maximum.at(top, (rows, np.broadcast_to(t.out, values.shape)), values)  # a NaN wins, as np.max
    peak = top[:, t.out]
    return (values == peak) | (np.isnan(values) & np.isnan(peak))


def _window_pattern(
    lead_out, lead_in, in_pixels, out_pixels, t: Taps, pooled_out: bool, keep: Any, shape
) -> Any:
    """The pattern of a pooling (pooled_out: output pixels are windows) or of its transpose."""
    lo = lead_out[:, None]
    li = lead_in[:, None]
    if pooled_out:
        return _matrix(lo * out_pixels + t.out[None], li * in_pixels + t.into[None], keep, shape)
    return _matrix(lo * in_pixels + t.into[None], li * out_pixels + t.out[None], keep, shape)


def _max_pool2d(ans: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> tuple:
    shape = tuple(np.shape(x))
    t, (h2, w2) = _pool_taps(shape[-2:], kernel_size, stride, padding)
    lead, _, count = _leads(shape[:-2], None)
    keep = _maxima(np.asarray(x, dtype=np.float64), t, h2 * w2) if _known(x) else True
    size = (_size(np.shape(ans)), _size(shape))
    return (_window_pattern(lead, lead, shape[-2] * shape[-1], h2 * w2, t, True, keep, size),)


def _max_pool2d_linear(pooled_out: bool):
    """max_pool2d_gather (pooled_out) or max_pool2d_scatter: linear in their first input, read or
    spread at x's window maxima (x known) or over the whole windows (x traced: any entry may be one)."""

    def dependencies(
        ans: Any, first: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0
    ) -> tuple:
        x_shape = tuple(np.shape(x))
        t, (h2, w2) = _pool_taps(x_shape[-2:], kernel_size, stride, padding)
        into_first, into_x, _ = _leads(tuple(np.shape(first))[:-2], x_shape[:-2])
        keep = True
        if _known(x):
            keep = _maxima(np.asarray(x, dtype=np.float64), t, h2 * w2)[into_x]
        size = (_size(np.shape(ans)), _size(np.shape(first)))
        pattern = _window_pattern(
            np.arange(into_first.size),
            into_first,
            x_shape[-2] * x_shape[-1],
            h2 * w2,
            t,
            pooled_out,
            keep,
            size,
        )
        return pattern, None

    return dependencies


def _avg_pool2d(ans: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> tuple:
    shape = tuple(np.shape(x))
    t, (h2, w2) = _pool_taps(shape[-2:], kernel_size, stride, padding)
    lead, _, _ = _leads(shape[:-2], None)
    size = (_size(np.shape(ans)), _size(shape))
    return (_window_pattern(lead, lead, shape[-2] * shape[-1], h2 * w2, t, True, True, size),)


def _avg_pool2d_grad(
    ans: Any, g: Any, input_size: Any, kernel_size: Any, stride: Any = None, padding: Any = 0
) -> tuple:
    shape = tuple(np.shape(g))
    h, w = pair(input_size)
    t, (h2, w2) = _pool_taps((h, w), kernel_size, stride, padding)
    lead, _, _ = _leads(shape[:-2], None)
    size = (_size(np.shape(ans)), _size(shape))
    return (_window_pattern(lead, lead, h * w, h2 * w2, t, False, True, size),)


@functools.cache
def _table() -> dict[str, Any]:
    from adcore_sparsity.extend import SparsityRule

    return {
        "conv2d": SparsityRule(_conv2d, "multilinear", exact=True),
        "conv2d_input_grad": SparsityRule(_conv2d_input_grad, "multilinear", exact=True),
        "conv2d_weight_grad": SparsityRule(_conv2d_weight_grad, "multilinear", exact=True),
        # max is linear where it is differentiable (a kink has no second derivative to miss)
        "max_pool2d": SparsityRule(_max_pool2d, "linear", exact=True),
        "max_pool2d_gather": SparsityRule(_max_pool2d_linear(True), "linear", exact=True),
        "max_pool2d_scatter": SparsityRule(_max_pool2d_linear(False), "linear", exact=True),
        "avg_pool2d": SparsityRule(_avg_pool2d, "linear", exact=True),
        "avg_pool2d_grad": SparsityRule(_avg_pool2d_grad, "linear", exact=True),
    }


def __getattr__(name: str) -> Any:
    # SPARSITY_RULES, the op name -> SparsityRule table, is built on first read (see the docstring)
    if name == "SPARSITY_RULES":
        return _table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
