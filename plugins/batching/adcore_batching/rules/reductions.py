"""Batch rules of sums, means, extrema, statistics, cumulative ops, sorting, softmax and norms
(adcore/ops/reductions.py, cumulative.py, norms.py, nn.py; trace of contractions.py).

Each reduces or runs along the axes of one example, shifted past the batch axis, which is put
first. Two things make the batched value the loop's bit for bit:

- vmap passes only the params a call gave, so each rule fills in the op's default axis: the
  default on the batch (sum's None: every axis) would take the batch axis in too;
- a plain batch whose batch axis is not outermost in memory (in_axes=1, say) is copied so that it
  is, each example keeping the layout it has alone: NumPy sums an array in the order its memory
  runs, pairwise along a contiguous run, so a batch interleaved with its examples would sum each
  example in another order and differ from the loop in the last bits.

What a rule cannot give exactly it leaves to the loop (NotImplemented): an average whose weights
do not match its input as np.average requires, or whose batched weights lie along the axis (a
tuple of axes lays them out in another order); a p-norm (ord other than None, ±1, 2, ±inf, 0) of
1-d examples, whose last power NumPy takes in its scalar math; a norm with ord and no axis of an
input of more than 2 axes (the loop raises norm's own refusal); an axis that names no axis of
an example (a negative one would name the batch axis); median and quantile of an empty batch.
On an outer transformation's value, norm with no axis (NumPy's BLAS dot of the ravel) is norm
of the flattened rows, for its own derivative: equal but for the last bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer
from adcore.extend.batching import (
    BatchRule,
    batch_size,
    by_axis,
    in_range,
    moved_to_front,
    ndim,
    outermost,
    shifted_axis,
)
from adcore.ops.norms import norm_axes
from adcore_batching.rules.table import BATCH_RULES

Dims = Sequence[int | None]


def _memory_order(x: Any) -> Any:
    """A plain batch with each example's axes in its memory order (x.ravel(order='K') of one
    example is then a C-order row, as np.linalg.norm ravels it)."""
    if not isinstance(x, np.ndarray) or x.flags.c_contiguous:
        return x
    by_stride = sorted(range(1, x.ndim), key=lambda a: -abs(x.strides[a]))
    return np.transpose(x, [0, *by_stride])


def nonempty(rule: BatchRule) -> BatchRule:
    """`rule` for a batch of at least one example: NumPy's median and quantile over several axes
    reshape with -1, which an empty batch leaves undetermined (the loop then says so, typed)."""

    def checked(dims: Dims, *inputs: Any, **params: Any) -> Any:
        return NotImplemented if batch_size(dims, inputs) == 0 else rule(dims, *inputs, **params)

    checked.__name__ = rule.__name__
    return checked


def _quantile(op: Any) -> BatchRule:
    """quantile and percentile: the result's leading axes are q's, so the batch axis follows them."""

    def rule(dims: Dims, x: Any, q: Any, axis: Any = None, **params: Any) -> Any:
        x = moved_to_front(x, dims[0])
        if not in_range(axis, ndim(x) - 1):
            return NotImplemented
        return op(x, q=q, axis=shifted_axis(axis, ndim(x) - 1), **params), np.ndim(q)

    rule.__name__ = f"batch_{op.name}"
    return rule


def batch_diff(
    dims: Dims, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None
) -> Any:
    """diff; an array prepend or append (one example's) is repeated for each example."""
    x = moved_to_front(x, dims[0])
    if not in_range(axis, ndim(x) - 1):
        return NotImplemented
    ends = {}
    for name, end in (("prepend", prepend), ("append", append)):
        if end is None:
            continue
        if isinstance(end, Tracer):
            return NotImplemented
        if np.ndim(end) > 0:
            end = np.broadcast_to(end, (x.shape[0], *np.shape(end)))
        ends[name] = end
    return ops.diff(x, n=n, axis=shifted_axis(axis, ndim(x) - 1), **ends), 0


def batch_trace(dims: Dims, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    x = outermost(moved_to_front(x, dims[0]))
    example_ndim = ndim(x) - 1
    if not in_range((axis1, axis2), example_ndim):
        return NotImplemented
    axis1, axis2 = shifted_axis(axis1, example_ndim), shifted_axis(axis2, example_ndim)
    return ops.trace(x, offset=offset, axis1=axis1, axis2=axis2), 0


# --- average: weights are an input, batched or not ------------------------------------------


def batch_average(
    dims: Dims, a: Any, weights: Any, axis: Any = None, keepdims: bool = False, returned: bool = False
) -> Any:
    """np.average with weights of a's shape (each example's, or one for all) or, unbatched, of a's
    shape along `axis`, which np.average lays out itself."""
    size = batch_size(dims, (a, weights))
    a_shape, w_shape = _example_shape(a, dims[0]), _example_shape(weights, dims[1])
    if not in_range(axis, len(a_shape)):
        return NotImplemented
    if w_shape != a_shape and (dims[1] is not None or axis is None):
        return NotImplemented  # weights along the axis are batched, or the loop raises NumPy's error
    a = ops.broadcast_to(a, shape=(size, *a_shape)) if dims[0] is None else moved_to_front(a, dims[0])
    if dims[1] is not None:
        weights = outermost(moved_to_front(weights, dims[1]))
    elif w_shape == a_shape and axis is not None and len(np.atleast_1d(axis)) < len(a_shape):
        # np.average takes weights of a's whole shape, or of its shape along the axis
        weights = outermost(ops.broadcast_to(weights, shape=(size, *a_shape)))
    axis = shifted_axis(axis, len(a_shape))
    return ops.average(outermost(a), weights, axis=axis, keepdims=keepdims, returned=returned), 0


def _example_shape(x: Any, dim: int | None) -> tuple[int, ...]:
    return tuple(n for i, n in enumerate(x.shape) if i != dim)


# --- norm: np.linalg.norm's paths -------------------------------------------------------------


def _by_dot(ord: Any, example_ndim: int) -> bool:
    """Whether np.linalg.norm with no axis takes the square root of x.ravel() dotted with itself."""
    return ord is None or (ord in ("f", "fro") and example_ndim == 2) or (ord == 2 and example_ndim == 1)


def _self_dot(rows: np.ndarray) -> np.ndarray:
    """Each row dotted with itself, (B, n) -> (B,): matmul of (1, n) by (n, 1) calls the BLAS dot
    that np.dot of one row calls (strided rows too: a complex row's real parts)."""
    return np.matmul(rows[:, None, :], rows[:, :, None])[:, 0, 0]


def _dot_norm(x: Any) -> Any:
    """np.linalg.norm of each example with no axis, where NumPy takes the square root of the
    example's ravel dotted with itself."""
    size, n = x.shape[0], int(np.prod(x.shape[1:], dtype=int))  # not -1: an empty batch
    if isinstance(x, Tracer):
        # norm's own rules (derivative 0 at x = 0, where the square root of a dot has none); its
        # sum of squares rounds otherwise than BLAS's dot: the last bits
        return ops.norm(ops.reshape(x, shape=(size, n)), axis=1)
    rows = _memory_order(outermost(x)).reshape(size, n)
    if np.iscomplexobj(rows):  # as NumPy: the real parts' dot plus the imaginary parts'
        return np.sqrt(_self_dot(rows.real) + _self_dot(rows.imag))
    return np.sqrt(_self_dot(rows))  # in x's dtype, as adcore's norm gives it


def batch_norm(dims: Dims, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    x = moved_to_front(x, dims[0])
    example = tuple(x.shape[1:])
    if axis is None and ord is not None and len(example) not in (1, 2):
        return NotImplemented  # the loop raises norm's refusal
    axes, _ = norm_axes(SimpleNamespace(shape=example), ord, axis)  # an example's refusal, as the loop's
    if len(axes) == len(example) == 1 and not keepdims and ord not in (None, 1, 2, np.inf, -np.inf, 0):
        # a p-norm of one vector ends in a NumPy scalar's power (its scalar math), the batch's in
        # the array loop's power, which may differ in the last bit (complex64 did)
        return NotImplemented
    if axis is None and _by_dot(ord, len(example)):
        out = _dot_norm(x)
        return ops.reshape(out, shape=(x.shape[0], *(1,) * len(example))) if keepdims else out, 0
    axis = tuple(range(len(example))) if axis is None else axis
    return ops.norm(outermost(x), ord=ord, axis=shifted_axis(axis, len(example)), keepdims=keepdims), 0


# fmt: off
# --- sums, means, extrema ------------------------------------------------------------------
BATCH_RULES.add("sum",         by_axis(ops.sum, axis=None))
BATCH_RULES.add("mean",        by_axis(ops.mean, axis=None))
BATCH_RULES.add("prod",        by_axis(ops.prod, axis=None))
BATCH_RULES.add("nansum",      by_axis(ops.nansum, axis=None))
BATCH_RULES.add("nanmean",     by_axis(ops.nanmean, axis=None))
BATCH_RULES.add("average",     batch_average)
BATCH_RULES.add("max",         by_axis(ops.max, rounds_by_order=False, axis=None))
BATCH_RULES.add("min",         by_axis(ops.min, rounds_by_order=False, axis=None))
BATCH_RULES.add("ptp",         by_axis(ops.ptp, rounds_by_order=False, axis=None))
BATCH_RULES.add("trace",       batch_trace)

# --- statistics ----------------------------------------------------------------------------
BATCH_RULES.add("var",         by_axis(ops.var, axis=None))
BATCH_RULES.add("std",         by_axis(ops.std, axis=None))
BATCH_RULES.add("median",      nonempty(by_axis(ops.median, rounds_by_order=False, axis=None)))
BATCH_RULES.add("quantile",    nonempty(_quantile(ops.quantile)))
BATCH_RULES.add("percentile",  nonempty(_quantile(ops.percentile)))

# --- cumulative and ordering: axis None runs over the flattened example ----------------------
BATCH_RULES.add("cumsum",      by_axis(ops.cumsum, rounds_by_order=False, none_means_all=False, axis=None))
BATCH_RULES.add("cumprod",     by_axis(ops.cumprod, rounds_by_order=False, none_means_all=False, axis=None))
BATCH_RULES.add("diff",        batch_diff)
BATCH_RULES.add("sort",        by_axis(ops.sort, rounds_by_order=False, none_means_all=False, axis=-1))

# --- softmax and norms ---------------------------------------------------------------------
BATCH_RULES.add("softmax",     by_axis(ops.softmax, axis=-1))
BATCH_RULES.add("log_softmax", by_axis(ops.log_softmax, axis=-1))
BATCH_RULES.add("logsumexp",   by_axis(ops.logsumexp, axis=None))
BATCH_RULES.add("norm",        batch_norm)
# fmt: on
