"""Batching rules (kind "batch", read by `adcore.vmap`) in one line for the common kinds of op.

A batch rule receives `dims`, one entry per input: the axis of that input that is the batch
axis (a non-negative int), or None for an input that is not batched (at least one is); then the
op's inputs, then its params as keywords. It returns `(out, out_dim)`: the op's result for every
batch element at once, with its batch axis at `out_dim` (None if it has none). It may return
`NotImplemented` for a call it does not cover (a 1-d operand of matmul, say): vmap then runs the
op once per batch element, which is always right. Rules are written with adcore ops, so they run
on the values of outer transformations too (vmap of grad, grad of vmap).

    elementwise(op)              the rule of an op flagged elementwise (vmap uses it by the flag)
    by_axis(op, "axis")          one batched input, axis params shifted past the batch axis
    leading(op, (2, 2))          ops that broadcast over leading axes (matmul, solve, det, ...)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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


def by_axis(op: Any, *axis_params: str, none_means_all: bool = True) -> BatchRule:
    """The batch rule of an op of one array input that works along axis params (reductions,
    cumsum, flip, sort, ...): the batch axis first, each named param shifted past it. An axis of
    None means every axis when `none_means_all`; otherwise (NumPy flattens first: cumsum, sort)
    the rule flattens each example itself."""

    def rule(dims: Sequence[int | None], x: Any, **params: Any) -> tuple[Any, int]:
        x = moved_to_front(x, dims[0])
        example_ndim = ndim(x) - 1
        for name in axis_params:
            if name not in params:
                continue
            if params[name] is None and not none_means_all:
                x = ops.reshape(x, shape=(x.shape[0], -1))
                example_ndim = 1
                params = {**params, name: 0}
            params = {**params, name: shifted_axis(params[name], example_ndim)}
        return op(x, **params), 0

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
