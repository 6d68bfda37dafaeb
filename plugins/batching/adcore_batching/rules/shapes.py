"""Batch rules of transpose, reshape, broadcasting, indexing, concatenate, stack, the ops that move
elements (adcore/ops/shapes.py, rearrangements.py; composite_shapes.py's functions are these ops),
and outer (kron and cross are linalg.py's, diff is reductions.py's).

Each rule puts the batch axis first and runs the op once, its axis params past the batch axis, so
every element comes from the same NumPy computation as in a loop over the examples. Params one
example's call refuses (an axis out of range, say) are `NotImplemented`: the loop then raises the
op's own error, where a shifted axis could silently name the batch axis instead."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer
from adcore.errors import AdcoreError
from adcore.extend.batching import batch_size, moved_to_front, ndim, with_rank
from adcore.ops.rearrangements import axes_permutation, source_index
from adcore_batching.rules.table import BATCH_RULES

Dims = Sequence["int | None"]

# what NumPy (or the op) raises for params one example's call refuses
_REFUSED = (ValueError, TypeError, IndexError, AdcoreError)


class _Uncovered(Exception):
    """A call the rule does not cover: it returns NotImplemented and the loop takes the call."""


def _rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn as a batch rule: an _Uncovered call (raised before any op runs) is NotImplemented."""

    @functools.wraps(fn)
    def rule(dims: Dims, *inputs: Any, **params: Any) -> Any:
        try:
            return fn(dims, *inputs, **params)
        except _Uncovered:
            return NotImplemented

    return rule


def _example_shape(x: Any, dim: int | None) -> tuple[int, ...]:
    shape = tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def _axis(axis: Any, n: int) -> int:
    """One example's axis (of n) as a non-negative int; one NumPy would refuse is _Uncovered."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -n <= axis < n:
        raise _Uncovered
    return int(axis) % n


def _axes(axis: Any, n: int, duplicates: bool = False) -> tuple[int, ...]:
    """An int, a sequence of them, or None (every axis) as one example's non-negative axes."""
    if axis is None:
        return tuple(range(n))
    axes = tuple(_axis(a, n) for a in axis) if isinstance(axis, (tuple, list)) else (_axis(axis, n),)
    if not duplicates and len(set(axes)) != len(axes):
        raise _Uncovered
    return axes


def _past_batch(axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a + 1 for a in axes)


def _example_out_shape(op: Any, shape: tuple[int, ...], params: dict) -> tuple[int, ...]:
    """The shape of one example's result, from the op on a stand-in that allocates nothing
    (every stride 0); a call the op refuses is _Uncovered."""
    probe = np.broadcast_to(np.zeros((), dtype=np.int8), shape)
    try:
        return tuple(np.shape(op.impl(probe, **params)))
    except _REFUSED:
        raise _Uncovered from None


def _flat(x: Any) -> Any:
    """A batched x (batch axis first) with each example raveled: shape (B, size)."""
    return ops.reshape(x, shape=(x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))))


# --- shapes: the op on the batch, its params past the batch axis -----------------------------------


def _reshaped(op: Any) -> Callable[..., Any]:
    """Ops whose result is a reshape of x in C order (reshape, expand_dims, squeeze, atleast_*):
    each example's reshape is the batch's, its leading batch axis kept."""

    @_rule
    def rule(dims: Dims, x: Any, **params: Any) -> tuple[Any, int]:
        shape = _example_out_shape(op, _example_shape(x, dims[0]), params)
        x = moved_to_front(x, dims[0])
        return ops.reshape(x, shape=(x.shape[0],) + shape), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


@_rule
def _ravel(dims: Dims, x: Any, order: str = "C") -> tuple[Any, int]:
    _example_out_shape(ops.ravel, _example_shape(x, dims[0]), {"order": order})  # 'A', 'K' refused
    x = moved_to_front(x, dims[0])
    if order == "F":  # each example's axes reversed, then C order
        x = ops.transpose(x, axes=(0,) + tuple(range(ndim(x) - 1, 0, -1)))
    return _flat(x), 0


@_rule
def _broadcast_to(dims: Dims, x: Any, shape: Any) -> tuple[Any, int]:
    out = _example_out_shape(ops.broadcast_to, _example_shape(x, dims[0]), {"shape": shape})
    x = with_rank(moved_to_front(x, dims[0]), len(out))
    return ops.broadcast_to(x, shape=(x.shape[0],) + out), 0


def _permuted(op: Any) -> Callable[..., Any]:
    """Ops that only reorder axes (transpose, swapaxes, moveaxis, rollaxis): one transpose of the
    batch, its batch axis left where it is."""

    @_rule
    def rule(dims: Dims, x: Any, **params: Any) -> tuple[Any, int]:
        d = dims[0]
        try:
            order = axes_permutation(op.impl, ndim(x) - 1, params)
        except _REFUSED:
            raise _Uncovered from None
        axes = tuple(a + (a >= d) for a in order)
        return ops.transpose(x, axes=axes[:d] + (d,) + axes[d:]), d

    rule.__name__ = f"batch_{op.name}"
    return rule


@_rule
def _astype(dims: Dims, x: Any, dtype: Any) -> tuple[Any, int | None]:
    return ops.astype(x, dtype=dtype), dims[0]


# --- concatenate and stack: unbatched inputs broadcast to the batch -----------------------------


def _all_batched(dims: Dims, xs: tuple) -> list:
    """Every input with a leading batch axis; an unbatched one broadcast along it."""
    size = batch_size(dims, xs)
    return [
        ops.broadcast_to(x, shape=(size,) + tuple(np.shape(x))) if d is None else moved_to_front(x, d)
        for x, d in zip(xs, dims)
    ]


@_rule
def _concatenate(dims: Dims, *xs: Any, axis: Any = 0) -> tuple[Any, int]:
    ranks = {len(_example_shape(x, d)) for x, d in zip(xs, dims)}
    if axis is None:  # each example's inputs raveled first
        return ops.concatenate(*(_flat(x) for x in _all_batched(dims, xs)), axis=1), 0
    if len(ranks) != 1:
        raise _Uncovered
    axis = _axis(axis, ranks.pop())
    return ops.concatenate(*_all_batched(dims, xs), axis=axis + 1), 0


@_rule
def _stack(dims: Dims, *xs: Any, axis: int = 0) -> tuple[Any, int]:
    shapes = {_example_shape(x, d) for x, d in zip(xs, dims)}
    if len(shapes) != 1:
        raise _Uncovered
    axis = _axis(axis, len(shapes.pop()) + 1)
    return ops.stack(*_all_batched(dims, xs), axis=axis + 1), 0


# fmt: off
# --- shapes ---------------------------------------------------------------------------------------
BATCH_RULES.add("reshape",      _reshaped(ops.reshape))
BATCH_RULES.add("expand_dims",  _reshaped(ops.expand_dims))
BATCH_RULES.add("squeeze",      _reshaped(ops.squeeze))
BATCH_RULES.add("atleast_1d",   _reshaped(ops.atleast_1d))
BATCH_RULES.add("atleast_2d",   _reshaped(ops.atleast_2d))
BATCH_RULES.add("atleast_3d",   _reshaped(ops.atleast_3d))
BATCH_RULES.add("ravel",        _ravel)
BATCH_RULES.add("broadcast_to", _broadcast_to)
BATCH_RULES.add("transpose",    _permuted(ops.transpose))
BATCH_RULES.add("swapaxes",     _permuted(ops.swapaxes))
BATCH_RULES.add("moveaxis",     _permuted(ops.moveaxis))
BATCH_RULES.add("rollaxis",     _permuted(ops.rollaxis))
BATCH_RULES.add("astype",       _astype)
BATCH_RULES.add("concatenate",  _concatenate)
BATCH_RULES.add("stack",        _stack)
# fmt: on


# --- ops that move elements: the op on the batch, or a gather through its source-index map ---------


def _flipped(dims: Dims, x: Any, axes: tuple[int, ...]) -> tuple[Any, int]:
    return ops.flip(moved_to_front(x, dims[0]), axis=_past_batch(axes)), 0


@_rule
def _flip(dims: Dims, x: Any, axis: Any = None) -> tuple[Any, int]:
    return _flipped(dims, x, _axes(axis, ndim(x) - 1))


@_rule
def _flipud(dims: Dims, x: Any) -> tuple[Any, int]:
    return _flipped(dims, x, (_axis(0, ndim(x) - 1),))


@_rule
def _fliplr(dims: Dims, x: Any) -> tuple[Any, int]:
    if ndim(x) - 1 < 2:  # NumPy refuses a 1-d one
        raise _Uncovered
    return _flipped(dims, x, (1,))


@_rule
def _rot90(dims: Dims, x: Any, k: int = 1, axes: Any = (0, 1)) -> tuple[Any, int]:
    if not isinstance(axes, (tuple, list)) or len(axes) != 2:
        raise _Uncovered
    axes = _axes(axes, ndim(x) - 1)
    return ops.rot90(moved_to_front(x, dims[0]), k=k, axes=_past_batch(axes)), 0


@_rule
def _roll(dims: Dims, x: Any, shift: Any, axis: Any = None) -> tuple[Any, int]:
    x = moved_to_front(x, dims[0])
    if axis is None:  # each example raveled, rolled, and shaped back
        return ops.reshape(ops.roll(_flat(x), shift=shift, axis=1), shape=tuple(x.shape)), 0
    axes = _past_batch(_axes(axis, ndim(x) - 1, duplicates=True))  # NumPy adds up shifts of one axis
    return ops.roll(x, shift=shift, axis=axes if isinstance(axis, (tuple, list)) else axes[0]), 0


@_rule
def _repeat(dims: Dims, x: Any, repeats: Any, axis: Any = None) -> tuple[Any, int]:
    x = moved_to_front(x, dims[0])
    if axis is None:  # each example raveled first (a count per element counts the raveled ones)
        return ops.repeat(_flat(x), repeats=repeats, axis=1), 0
    return ops.repeat(x, repeats=repeats, axis=_axis(axis, ndim(x) - 1) + 1), 0


@_rule
def _tile(dims: Dims, x: Any, reps: Any) -> tuple[Any, int]:
    try:
        reps = tuple(reps)
    except TypeError:
        reps = (reps,)
    if not all(
        isinstance(r, (int, np.integer)) and not isinstance(r, (bool, np.bool_)) and r >= 0 for r in reps
    ):
        raise _Uncovered
    shape = _example_shape(x, dims[0])
    rank = max(len(reps), len(shape))  # NumPy pads the shorter of x's shape and reps with leading 1s
    x = moved_to_front(x, dims[0])
    x = ops.reshape(x, shape=(x.shape[0],) + (1,) * (rank - len(shape)) + shape)
    return ops.tile(x, reps=(1,) * (1 + rank - len(reps)) + tuple(int(r) for r in reps)), 0


def _pairs(value: Any, n: int, as_index: bool) -> np.ndarray:
    """pad_width or constant_values as np.pad reads them: a (before, after) pair per axis."""
    if isinstance(value, Tracer) or (
        isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) for v in value)
    ):
        raise _Uncovered  # (the op refuses a traced constant; its own error says so)
    value = np.asarray(value)
    if as_index and (value.dtype.kind not in "iu" or (value.size and value.min() < 0)):
        raise _Uncovered  # (NumPy rounds float widths; the loop does that)
    try:
        return np.broadcast_to(value, (n, 2))
    except ValueError:
        raise _Uncovered from None


@_rule
def _pad(dims: Dims, x: Any, pad_width: Any, mode: Any = "constant", **params: Any) -> tuple[Any, int]:
    n = ndim(x) - 1
    widths = _pairs(pad_width, n, as_index=True)
    batched_params = dict(
        params, pad_width=np.concatenate([np.zeros((1, 2), widths.dtype), widths]), mode=mode
    )
    if mode == "constant" and "constant_values" in params:  # (the batch axis's pair pads nothing)
        values = _pairs(params["constant_values"], n, as_index=False)
        batched_params["constant_values"] = np.concatenate([np.zeros((1, 2), values.dtype), values])
    return ops.pad(moved_to_front(x, dims[0]), **batched_params), 0


@_rule
def _take(dims: Dims, x: Any, indices: Any, axis: Any = None, **params: Any) -> tuple[Any, int]:
    x = moved_to_front(x, dims[0])
    if axis is None:  # from each example raveled
        return ops.take(_flat(x), indices=indices, axis=1, **params), 0
    return ops.take(x, indices=indices, axis=_axis(axis, ndim(x) - 1) + 1, **params), 0


@_rule
def _take_along_axis(dims: Dims, x: Any, indices: Any, axis: Any = -1) -> tuple[Any, int]:
    if isinstance(indices, Tracer):
        raise _Uncovered
    indices = np.asarray(indices)
    x = moved_to_front(x, dims[0])
    if axis is None:  # from each example raveled; indices 1-d
        if indices.ndim != 1:
            raise _Uncovered
        x, axis = _flat(x), 0
    elif indices.ndim != ndim(x) - 1:
        raise _Uncovered
    else:
        axis = _axis(axis, ndim(x) - 1)
    # the same indices for every example: a length-1 batch axis, which NumPy broadcasts
    return ops.take_along_axis(x, indices=indices[None], axis=axis + 1), 0


def _gathered(op: Any, dims: Dims, x: Any, params: dict) -> tuple[Any, int]:
    """The op's result for every example as one gather from the raveled examples, through the
    op's source-index map (position -1, a constant zero, reads an appended zero column)."""
    try:
        source = source_index(op.impl, _example_shape(x, dims[0]), params)
    except _REFUSED:
        raise _Uncovered from None
    flat = _flat(moved_to_front(x, dims[0]))
    if source.size and source.min() < 0:
        flat = ops.concatenate(flat, np.zeros((flat.shape[0], 1), dtype=flat.dtype), axis=1)
    return ops.getitem(flat, index=(slice(None), source)), 0


@_rule
def _diag(dims: Dims, x: Any, k: int = 0) -> tuple[Any, int]:
    if ndim(x) - 1 == 2:  # a matrix's k-th diagonal
        return ops.diagonal(moved_to_front(x, dims[0]), offset=k, axis1=1, axis2=2), 0
    return _gathered(ops.diag, dims, x, {"k": k})  # a vector on a matrix's k-th diagonal


@_rule
def _diagonal(dims: Dims, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> tuple[Any, int]:
    axis1, axis2 = _axes((axis1, axis2), ndim(x) - 1)
    return ops.diagonal(moved_to_front(x, dims[0]), offset=offset, axis1=axis1 + 1, axis2=axis2 + 1), 0


def _triangle(op: Any) -> Callable[..., Any]:
    """tril and triu work on the last two axes, so on the batch as it is (the batch axis moved
    first if it is one of those); a 1-d example (NumPy broadcasts it to a square matrix) is a gather."""

    @_rule
    def rule(dims: Dims, x: Any, k: int = 0) -> tuple[Any, int]:
        n, d = ndim(x) - 1, dims[0]
        if n < 2:
            return _gathered(op, dims, x, {"k": k})
        if d >= n - 1:
            x, d = moved_to_front(x, d), 0
        return op(x, k=k), d

    rule.__name__ = f"batch_{op.name}"
    return rule


@_rule
def _diagflat(dims: Dims, x: Any, k: int = 0) -> tuple[Any, int]:
    return _gathered(ops.diagflat, dims, x, {"k": k})


# fmt: off
# --- ops that move elements ---------------------------------------------------------------------------
BATCH_RULES.add("flip",            _flip)
BATCH_RULES.add("flipud",          _flipud)
BATCH_RULES.add("fliplr",          _fliplr)
BATCH_RULES.add("rot90",           _rot90)
BATCH_RULES.add("roll",            _roll)
BATCH_RULES.add("repeat",          _repeat)
BATCH_RULES.add("tile",            _tile)
BATCH_RULES.add("pad",             _pad)
BATCH_RULES.add("take",            _take)
BATCH_RULES.add("take_along_axis", _take_along_axis)
BATCH_RULES.add("diag",            _diag)
BATCH_RULES.add("diagonal",        _diagonal)
BATCH_RULES.add("diagflat",        _diagflat)
BATCH_RULES.add("tril",            _triangle(ops.tril))
BATCH_RULES.add("triu",            _triangle(ops.triu))
# fmt: on


# --- indexing ---------------------------------------------------------------------------------------


def _index_parts(index: Any) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _batch_axis_after_indexing(parts: tuple) -> int:
    """Where NumPy puts the batch axis of x[(slice(None),) + parts]: first, unless the advanced
    indices (integer and boolean arrays, and the integers among them) are apart in `parts` (a
    slice, None or Ellipsis between them), when NumPy puts their broadcast axes first. A part
    this rule does not read (a 0-d boolean, a traced index) is _Uncovered."""
    advanced, shapes, arrays = [], [], False
    for part in parts:
        if part is None or part is Ellipsis or isinstance(part, slice):
            advanced.append(False)
        elif isinstance(part, (bool, np.bool_)):
            raise _Uncovered  # (a new axis of length 1 or 0; rare enough for the loop)
        elif isinstance(part, (int, np.integer)):
            advanced.append(True)
            shapes.append(())
        elif isinstance(part, (np.ndarray, list)):
            array = np.asarray(part)
            if array.dtype.kind == "b" and array.ndim:
                shapes.append((int(np.count_nonzero(array)),))  # its nonzero() indices' shape
            elif array.dtype.kind in "iu":
                shapes.append(array.shape)
            else:
                raise _Uncovered
            advanced.append(True)
            arrays = True
        else:
            raise _Uncovered
    positions = [k for k, a in enumerate(advanced) if a]
    if not arrays or positions == list(range(positions[0], positions[-1] + 1)):
        return 0  # basic indexing, or advanced indices side by side: their axes stay in place
    try:
        return len(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _Uncovered from None


@_rule
def _getitem(dims: Dims, x: Any, index: Any) -> tuple[Any, int]:
    parts = _index_parts(index)
    out_dim = _batch_axis_after_indexing(parts)
    return ops.getitem(moved_to_front(x, dims[0]), index=(slice(None),) + parts), out_dim


@_rule
def _scatter_add(dims: Dims, values: Any, index: Any, shape: Any) -> tuple[Any, int]:
    """getitem's transpose: the values go where getitem of the batch would take them from."""
    parts = _index_parts(index)
    at = _batch_axis_after_indexing(parts)
    try:  # the region the values land in, which they broadcast to (right-aligned)
        region = np.broadcast_to(np.zeros((), dtype=np.int8), tuple(shape))[parts].shape
        fits = np.broadcast_shapes(_example_shape(values, dims[0]), region) == region
    except _REFUSED:
        raise _Uncovered from None
    if not fits:
        raise _Uncovered
    values = with_rank(moved_to_front(values, dims[0]), len(region))
    if at:
        values = ops.moveaxis(values, source=0, destination=at)
    size = values.shape[at]
    return ops.scatter_add(values, index=(slice(None),) + parts, shape=(size,) + tuple(shape)), 0


# --- outer: each example's raveled inputs, one broadcast product ---------------------------------------


def _raveled_examples(x: Any, dim: int | None) -> Any:
    """x's examples raveled, shape (B, size); an unbatched x as one example, (1, size)."""
    if dim is None:
        return ops.reshape(x, shape=(1, int(np.prod(np.shape(x), dtype=np.int64))))
    return _flat(moved_to_front(x, dim))


def _outer(dims: Dims, a: Any, b: Any) -> tuple[Any, int]:
    a, b = _raveled_examples(a, dims[0]), _raveled_examples(b, dims[1])
    if dims[0] is not None and dims[1] is not None and np.result_type(a.dtype, b.dtype).kind == "f":
        # the same products, written by einsum ~1.3x faster than the broadcast multiply: a
        # per-example weight gradient outer(x, g) of the MLP benchmark (complex ones it rounds otherwise)
        return ops.einsum(a, b, subscripts="bi,bj->bij"), 0
    columns = ops.reshape(a, shape=(a.shape[0], a.shape[1], 1))
    rows = ops.reshape(b, shape=(b.shape[0], 1, b.shape[1]))
    return ops.multiply(columns, rows), 0  # NumPy's outer: the same products


# fmt: off
# --- indexing -------------------------------------------------------------------------------------------
BATCH_RULES.add("getitem",     _getitem)
BATCH_RULES.add("scatter_add", _scatter_add)

# --- outer products ----------------------------------------------------------------------------------
BATCH_RULES.add("outer",       _outer)
# fmt: on
