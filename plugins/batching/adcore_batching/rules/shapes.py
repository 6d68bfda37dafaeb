"""Batch rules of transpose, reshape, broadcasting, indexing, concatenate, stack, the ops that move elements (adcore/ops/shapes.py, rearrangements.py, composite_shapes.py), and kron, outer, cross, diff.

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
from adcore.errors import AdcoreError
from adcore.extend.batching import batch_size, moved_to_front, ndim, with_rank
from adcore.ops.rearrangements import axes_permutation
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
