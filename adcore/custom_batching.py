"""custom_vjp and custom_jvp functions (and checkpoint) under vmap, batched through their rules.

When vmap meets a custom function's op whose derivative an outer transformation takes
(`grad(lambda X: sum(vmap(f)(X)))`), running the body on the batch would differentiate the
body, not the rule. Its batch rule (`batch_rule`) makes it one call of the function's batched
twin: a custom function of the same kind whose body is the body over the batch and whose rules
are the user's, over the batch. custom_vjp: fwd over the batch with its residuals batched, bwd
over the batch, and the cotangent of an input every example shares (in_axes None) summed over
the batch, since each example adds its share to it. custom_jvp: the jvp rule over the batch,
primals and tangents batched alike. The twin's own machinery then runs (fwd again in the
backward pass, the jvp rule pushed forward or transposed), so fwd, bwd or the jvp rule run once
for the whole batch. Where one of them converts a batched value (Python control flow on it),
that part runs once per example instead: right, slower. A checkpointed function's twin is
checkpointed too: its rule recomputes the body over the batch.

One twin per custom function (the batch axes are its static argument), made on first use and
freed with the function, its op with it.
"""

from __future__ import annotations

import numbers
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops, tree
from adcore.batch_trace import BatchTrace, BatchTracer, example, stacked_examples
from adcore.core import Tracer, new_trace
from adcore.custom_values import checked_cotangents, checked_pair, describe, leaf_cotangents, leaf_value
from adcore.errors import BatchedConversionError, InvalidInputError, InvalidOutputError
from adcore.extend.batching import batch_size

Dims = tuple  # one batch axis (a non-negative int) or None per input of a custom op


def batch_rule(dims: Dims, *leaves: Any, call: Any) -> tuple[Any, int]:
    """The batch rule of a custom function's op (its inputs `leaves`, its param `call`): its
    result for every example, from one call of its batched twin, batch axis first."""
    return _twin(call.custom)(call, tuple(dims), *leaves), 0


# custom function -> its twin, which holds no reference to it: both are freed together
_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _twin(custom: Any) -> Any:
    """The batched twin of a custom function, made once: `twin(call, dims, *leaves)`."""
    twin = _twins.get(custom)
    if twin is not None:
        return twin

    def body(call: Any, dims: Dims, *leaves: Any) -> Any:
        return _over_batch(lambda *ls: call.custom.op.impl(*ls, call=call), dims, leaves)

    body.__name__ = body.__qualname__ = f"vmap({getattr(custom.fun, '__name__', 'f')})"
    # type(custom): custom_vjp, custom_jvp or Checkpointed (adcore.custom and adcore.checkpoint use
    # this module, so it does not import them)
    if custom.kind == "checkpoint":  # its rule recomputes the body: the body over the batch
        twin = type(custom)(body, static_argnums=(0, 1))
    elif custom.kind == "custom_vjp":
        twin = type(custom)(body, nondiff_argnums=(0, 1))
        twin.defvjp(_fwd, _bwd)
    else:
        twin = type(custom)(body, nondiff_argnums=(0, 1))
        twin.defjvp(_jvp)
    _twins[custom] = twin
    return twin


# --- the twin's rules: the user's, over the batch ---------------------------------------------


def _fwd(call: Any, dims: Dims, *leaves: Any) -> tuple[Any, _Residuals]:
    """fwd over the batch: (every example's out, batch axis first; the residuals)."""
    label = call.custom._label

    def fwd(*ls: Any) -> tuple:
        return checked_pair(label, "fwd", call.custom.fwd(*call.arguments(ls)), "(out, residuals)")

    size = batch_size(dims, leaves)
    batched = _batched(fwd, dims, leaves, size)
    if batched is not None and not all(isinstance(r, _ARRAYS) for r in tree.leaves(batched[0][1])):
        # a residual adcore cannot look into (a closure, an object) may hold the batch's tracers
        batched = None
    if batched is None:  # fwd converts a batched value: once per example, and so will bwd
        pairs = _examples(fwd, dims, leaves, size)
        out = stacked_examples([pair[0] for pair in pairs], f"{label}'s fwd")
        return out, _Residuals(leaves, size, per_example=[pair[1] for pair in pairs])
    (out, residuals), axes = batched
    if not tree.is_leaf(tree.structure(out)):
        raise InvalidOutputError(
            f"{label}: fwd's out is {describe(out)}; it must be one array, the function's value"
        )
    return _at_front(out, axes[0], size), _Residuals(leaves, size, residuals, axes[1:])


# residual leaves whose batch vmap sees: arrays, numbers, strings (and traced values)
_ARRAYS = (np.ndarray, np.generic, numbers.Number, str, bytes, Tracer)


class _Residuals:
    """What the twin's fwd hands its bwd: the inputs, and fwd's residuals for the whole batch
    (`values`, with each leaf's batch axis in `axes`, None for one every example shares) or one
    per example. A pytree, so that an outer vmap of the twin batches what it holds."""

    def __init__(
        self,
        leaves: tuple,
        size: int,
        values: Any = None,
        axes: list | None = None,
        per_example: list | None = None,
    ) -> None:
        self.leaves, self.size = leaves, size
        self.values, self.axes, self.per_example = values, axes, per_example

    def example(self, i: int) -> Any:
        if self.per_example is not None:
            return self.per_example[i]
        return _example(self.values, self.axes, i)


tree.register(
    _Residuals,
    lambda r: ((r.leaves, r.values, r.per_example), (r.size, None if r.axes is None else tuple(r.axes))),
    lambda aux, kids: _Residuals(kids[0], aux[0], kids[1], None if aux[1] is None else list(aux[1]), kids[2]),
)


def _bwd(call: Any, dims: Dims, residuals: _Residuals, g: Any) -> tuple:
    """bwd over the batch: one cotangent per input of the twin, an input every example shares
    getting the sum of their shares."""
    label, leaves, size = call.custom._label, residuals.leaves, residuals.size

    def bwd(r: Any, gi: Any, *ls: Any) -> list:
        cts = checked_cotangents(label, call.custom.bwd(*call.static, r, gi), len(call.treedefs))
        return leaf_cotangents(label, "bwd", "cotangent", cts, call, ls)

    batched = None
    if residuals.per_example is None:
        batched = _batched(bwd, (residuals.axes, 0, *dims), (residuals.values, g, *leaves), size)
    if batched is None:  # fwd or bwd converts a batched value: bwd once per example
        _some_examples(size)
        rows = [
            bwd(residuals.example(i), example(g, 0, i), *(example(x, d, i) for x, d in zip(leaves, dims)))
            for i in range(size)
        ]
        cts = [stacked_examples(list(column), f"{label}'s bwd") for column in zip(*rows)]
        axes = [0] * len(cts)
    else:
        cts, axes = batched
    return tuple(_cotangent(ct, a, d, size) for ct, a, d in zip(cts, axes, dims))


def _cotangent(ct: Any, axis: int | None, dim: int | None, size: int) -> Any:
    """One input's cotangent (its batch axis `axis`) for the twin: at the input's batch axis
    `dim`, or summed over the batch for an input every example shares (dim None)."""
    ct = _at_front(ct, axis, size)
    if dim is None:
        return ops.sum(ct, axis=0)
    return ct if dim == 0 else ops.moveaxis(ct, source=0, destination=dim)


def _jvp(call: Any, dims: Dims, primals: tuple, tangents: tuple) -> tuple:
    """The jvp rule over the batch, each tangent batched as its primal: (out, tangent_out), batch
    axis first."""
    label, n = call.custom._label, len(primals)

    def jvp(*values: Any) -> tuple:
        ps, ts = tuple(call.differentiated(values[:n])), tuple(call.differentiated(values[n:]))
        pair = call.custom.jvp(*call.static, ps, ts)
        out, t = checked_pair(label, "the jvp rule", pair, "(out, tangent_out)", (tuple, list))
        return out, leaf_value(t, out, lambda: f"{label}: the jvp rule's tangent_out")

    return _over_batch(jvp, dims + dims, primals + tangents)


# --- running a function over the batch ----------------------------------------------------------
# An entry of `dims` is a batch axis or None for an argument, or a list of them for the leaves
# of an argument that is a pytree (fwd's residuals).


def _over_batch(fn: Callable[..., Any], dims: Sequence[Any], args: Sequence[Any]) -> Any:
    """fn over the batch, each leaf of its output with its batch axis first; once per example
    where fn converts a batched value."""
    size = batch_size(dims, args)
    batched = _batched(fn, dims, args, size)
    if batched is None:
        results = _examples(fn, dims, args, size)
        columns = zip(*(tree.leaves(r) for r in results))
        stacked = [stacked_examples(list(column), "a custom function's rule") for column in columns]
        return tree.unflatten(tree.structure(results[0]), stacked)
    out, axes = batched
    flat, treedef = tree.flatten(out)
    return tree.unflatten(treedef, [_at_front(x, a, size) for x, a in zip(flat, axes)])


def _batched(fn: Callable[..., Any], dims: Sequence[Any], args: Sequence[Any], size: int) -> tuple | None:
    """fn over the batch at once: (its output, the whole batch in each leaf; each leaf's batch
    axis, None for one every example shares), or None where fn converts a batched value."""
    trace = None
    try:
        with new_trace(BatchTrace, size=size) as trace:
            out = fn(*(_traced(trace, x, d) for x, d in zip(args, dims)))
    except BatchedConversionError as e:
        if e.trace is not trace:
            raise
        return None
    flat, treedef = tree.flatten(out)
    mine = [isinstance(x, BatchTracer) and x._trace is trace for x in flat]
    values = tree.unflatten(treedef, [x.value if m else x for x, m in zip(flat, mine)])
    return values, [x.bdim if m else None for x, m in zip(flat, mine)]


def _traced(trace: BatchTrace, x: Any, dim: Any) -> Any:
    if isinstance(dim, list):
        flat, treedef = tree.flatten(x)
        return tree.unflatten(treedef, [_traced(trace, v, d) for v, d in zip(flat, dim)])
    return x if dim is None else BatchTracer(trace, x, dim)


def _example(x: Any, dim: Any, i: int) -> Any:
    if isinstance(dim, list):
        flat, treedef = tree.flatten(x)
        return tree.unflatten(treedef, [example(v, d, i) for v, d in zip(flat, dim)])
    return example(x, dim, i)


def _examples(fn: Callable[..., Any], dims: Sequence[Any], args: Sequence[Any], size: int) -> list:
    """fn once per example (where it converts a batched value)."""
    _some_examples(size)
    return [fn(*(_example(x, d, i) for x, d in zip(args, dims))) for i in range(size)]


def _some_examples(size: int) -> None:
    if size == 0:
        raise InvalidInputError(
            "vmap over an axis of size 0 reached a custom function's rule that converts a batched value, "
            "so it would run once per example, and has no example to learn its result's shape from"
        )


def _at_front(x: Any, axis: int | None, size: int) -> Any:
    """A batched value with its batch axis first; one every example shares broadcast to the batch."""
    if axis is None:
        return ops.broadcast_to(x, shape=(size, *np.shape(x)))
    return x if axis == 0 else ops.moveaxis(x, source=axis, destination=0)
