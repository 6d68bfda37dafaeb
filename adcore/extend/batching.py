"""Batching rules (kind "batch", read by `adcore.vmap`) in one line for the common kinds of op.

A batch rule receives `dims`, one entry per input: the axis of that input that is the batch
axis (a non-negative int), or None for an input that is not batched (at least one is); then the
op's inputs, then its params as keywords. It returns `(out, out_dim)`: the op's result for every
batch element at once, with its batch axis at `out_dim` (None if it has none). It may return
`NotImplemented` for a call it does not cover (a 1-d operand of matmul, say): vmap then runs the
op once per batch element, which is always right. Rules are written with adcore ops, so they run
on the values of outer transformations too (vmap of grad, grad of vmap).

    elementwise(op)              the rule of an op flagged elementwise (vmap uses it by the flag)
    by_axis(op, axis=None)       one batched input, axis params (with their defaults) past the batch axis
    leading(op, (2, 2))          ops that broadcast over leading axes (matmul, solve, det, ...)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops

BatchRule = Callable[..., Any]


def ndim(x: Any) -> int:
    return len(getattr(x, "shape", ()))


def moved_to_front(x: Any, dim: int | None) -> Any:
    """x with its batch axis first (x itself when it is already, or has none)."""
    if dim is None or dim == 0:
        return x
    return ops.moveaxis(x, source=dim, destination=0)


def batch_size(dims: Sequence[int | None], inputs: Sequence[Any]) -> int:
    """The batch axis's length, read off the first batched input."""
    return next(x.shape[d] for x, d in zip(inputs, dims) if d is not None)


def with_rank(x: Any, rank: int) -> Any:
    """A batched x (batch axis first) with singleton axes after the batch axis, so its
    per-example part has `rank` axes and broadcasts against the others right-aligned."""
    missing = rank - (ndim(x) - 1)
    if missing <= 0:
        return x
    return ops.reshape(x, shape=(x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))


def shifted_axis(axis: Any, example_ndim: int) -> Any:
    """An axis param of one example (int, tuple of ints, or None for every axis) as the same
    axes of the batched value, whose batch axis is first: non-negative ones move up by one."""
    if axis is None:
        return tuple(range(1, example_ndim + 1))
    if isinstance(axis, (tuple, list)):
        return type(axis)(shifted_axis(a, example_ndim) for a in axis)
    axis = int(axis)
    if axis < -example_ndim:  # out of range for one example: kept out of range (NumPy refuses it),
        return axis - 1  # where as it is it would name the batch axis
    return axis + 1 if axis >= 0 else axis


def elementwise(op: Any) -> BatchRule:
    """The batch rule of an elementwise op: batched inputs get their batch axis first and
    singleton axes up to the examples' broadcast rank; unbatched ones broadcast as they are."""

    def rule(dims: Sequence[int | None], *inputs: Any, **params: Any) -> tuple[Any, int]:
        rank = max(ndim(x) - (d is not None) for x, d in zip(inputs, dims))
        batched = [x if d is None else with_rank(moved_to_front(x, d), rank) for x, d in zip(inputs, dims)]
        return op(*batched, **params), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


def outermost(x: Any) -> Any:
    """A batch (batch axis first) laid out with its batch axis outermost in memory, each example
    as it is laid out alone (its axes' order by stride kept): NumPy then sums each example in the
    order it sums one example. The value of an outer transformation is left as it is."""
    if not isinstance(x, np.ndarray) or x.ndim < 2 or x.flags.c_contiguous:
        return x
    strides = [abs(s) for s in x.strides]
    if all(strides[0] >= s for s, n in zip(strides[1:], x.shape[1:]) if n > 1):
        return x
    by_stride = sorted(range(1, x.ndim), key=lambda a: -strides[a])  # an example's memory order
    packed = np.ascontiguousarray(np.transpose(x, [0, *by_stride]))
    return np.transpose(packed, np.argsort([0, *by_stride]))


def in_range(axis: Any, example_ndim: int) -> bool:
    """Whether `axis` (None, an int or a tuple of them) names axes of one example: shifted past the
    batch axis, a negative axis beyond them would name the batch axis itself, and an axis beyond
    them fails in other words than the loop's (the loop takes both)."""
    if axis is None:
        return True
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return all(isinstance(a, (int, np.integer)) and -example_ndim <= a < example_ndim for a in axes)


def by_axis(op: Any, rounds_by_order: bool = True, none_means_all: bool = True, **defaults: Any) -> BatchRule:
    """The batch rule of an op of one array input that works along axis params (reductions,
    cumsum, sort, softmax, ...), each given with the op's default (`by_axis(ops.sum, axis=None)`):
    vmap passes only the params a call gave, and the default on the batch would take the batch
    axis in. The batch axis goes first and each axis param past it; an axis that names no axis of
    an example is the loop's (which raises NumPy's error). Where the op's sums or products round by
    their order, a plain batch is laid out `outermost` first. An axis of None means every axis of
    an example, or, without `none_means_all` (cumsum, sort: NumPy flattens first), the flattened
    example."""

    def rule(dims: Sequence[int | None], x: Any, **params: Any) -> Any:
        x = moved_to_front(x, dims[0])
        params = {**defaults, **params}
        if not all(in_range(params[name], ndim(x) - 1) for name in defaults):
            return NotImplemented
        if not none_means_all and any(params[name] is None for name in defaults):
            # the example's length, not -1, which an empty batch leaves undetermined
            x = ops.reshape(x, shape=(x.shape[0], int(np.prod(x.shape[1:], dtype=int))))
            params = {**params, **{name: 0 for name in defaults if params[name] is None}}
        if rounds_by_order:
            x = outermost(x)
        shifted = {name: shifted_axis(params[name], ndim(x) - 1) for name in defaults}
        return op(x, **{**params, **shifted}), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


def leading(op: Any, core_ndims: Sequence[int]) -> BatchRule:
    """The batch rule of an op that broadcasts over its inputs' leading axes (matmul: core
    ndims (2, 2); solve (2, 2); det, inv, cholesky (2,)). Batched inputs get their batch axis
    first and singleton axes so their leading parts line up; unbatched ones broadcast as they are.
    An input with fewer axes than its core (a 1-d operand) is `NotImplemented`: the loop takes it."""

    def rule(dims: Sequence[int | None], *inputs: Any, **params: Any) -> Any:
        examples = [ndim(x) - (d is not None) for x, d in zip(inputs, dims)]
        if any(n < core for n, core in zip(examples, core_ndims)):
            return NotImplemented
        lead = max(n - core for n, core in zip(examples, core_ndims))
        batched = [
            x if d is None else with_rank(moved_to_front(x, d), lead + core)
            for x, d, core in zip(inputs, dims, core_ndims)
        ]
        return op(*batched, **params), 0

    rule.__name__ = f"batch_{op.name}"
    return rule
