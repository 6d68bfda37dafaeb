"""`adcore.vmap`: f over a batch at once, by a batching trace (autodidax's; adcore.batch_trace).

JAX's in_axes/out_axes (ints, None, pytrees of them as prefixes, negative axes) and axis_size,
with typed errors. Python control flow on a batched value (`if x > 0`, `float(x)`,
`np.asarray(x)`) has no batched meaning: vmap then runs f once per batch element for that call
and warns once per function (`fallback="error"` raises the BatchedConversionError instead).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import ops, tree
from adcore.batch_trace import BatchTrace, BatchTracer, example, stacked_examples
from adcore.core import new_trace, plain_numbers
from adcore.errors import BatchedConversionError, InvalidInputError, keywords_checked


class VmapFallbackWarning(UserWarning):
    """vmap ran f once per batch element: f converted a batched value (Python control flow on it)."""


# --- the public function ---------------------------------------------------------------------


def vmap(
    f: Callable[..., Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    fallback: str = "loop",
) -> Callable[..., Any]:
    """f mapped over an axis of its arguments, as JAX's vmap: `vmap(f)(xs)` is
    `stack([f(x) for x in xs])`, computed for the whole batch at once.

    `in_axes`: the batched axis of each argument (an int, negative ones from the end; None for
    an argument every example shares), one for all or a tuple with one entry per positional
    argument, each an int, None or a pytree of them mirroring the argument as a prefix (an int
    stands for the whole subtree under it). `out_axes`: the same as a prefix of f's output: where
    the batch axis goes in each output (None: an output that does not depend on the batch).
    `axis_size`: the batch size, needed only when no argument is batched. `fallback`: what to
    do when f converts a batched value (Python control flow on it): "loop" runs f once per
    example and warns once per function (VmapFallbackWarning), "error" raises the
    BatchedConversionError. Keyword arguments of the vmapped function are refused. docs/vmap.md.
    """
    if axis_size is not None and (not _is_axis(axis_size) or axis_size < 0):
        raise InvalidInputError(f"vmap's axis_size is the batch size, a non-negative int, not {axis_size!r}")
    if fallback not in ("loop", "error"):
        raise InvalidInputError(f"vmap's fallback is 'loop' or 'error', not {fallback!r}")
    if not callable(f):
        raise InvalidInputError(f"vmap takes a function, not {type(f).__name__}")

    @functools.wraps(f)
    def batched(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise InvalidInputError(
                f"vmap({_name(f)}) was called with keyword arguments {sorted(kwargs)}: pass them "
                "positionally, with their axes in in_axes (None for one every example shares)"
            )
        leaves, treedef = tree.flatten(list(args))
        axes = _leaf_axes(in_axes, args)
        size = _batch_size(leaves, axes, axis_size, treedef)
        axes = [None if a is None else _normalized(a, np.ndim(x), "in_axes", x) for x, a in zip(leaves, axes)]
        try:
            with new_trace(BatchTrace, size=size) as trace:
                ins = [x if a is None else BatchTracer(trace, x, a) for x, a in zip(leaves, axes)]
                out = f(*tree.unflatten(treedef, ins))
                return _outputs(out, out_axes, trace, size)
        except BatchedConversionError as e:
            if e.trace is not trace or fallback == "error":
                raise
            _warn_once(f, e)
            return _looped_call(f, leaves, axes, treedef, size, out_axes)

    return batched


vmap = keywords_checked(vmap)  # (a slip such as in_axis= is an error, not ignored)


def _name(f: Any) -> str:
    return getattr(f, "__qualname__", None) or type(f).__name__


def _leaf_axes(in_axes: Any, args: tuple) -> list:
    """One axis (or None) per leaf of args, from in_axes: one for all, or a prefix tree of them."""
    if _is_axis(in_axes):
        return [in_axes] * len(tree.leaves(list(args)))
    if not isinstance(in_axes, (tuple, list)) or len(in_axes) != len(args):
        raise InvalidInputError(
            "vmap's in_axes must be an int, None, or a tuple with one entry per positional argument "
            f"({len(args)} here), each an int, None or a pytree of them; got {in_axes!r}"
        )
    out = []
    for i, (arg, axes) in enumerate(zip(args, in_axes)):
        out += _prefix_axes(axes, arg, f"in_axes[{i}]", f"argument {i}")
    return out


def _prefix_axes(axes: Any, value: Any, where: str, of: str) -> list:
    """One axis (or None) per leaf of value, from axes: an int or None for a whole subtree, or a
    container mirroring value's (a tuple for a list is fine, as for a namedtuple)."""
    if _is_axis(axes):
        return [axes] * len(tree.leaves(value))
    if isinstance(axes, (bool, float, str, np.generic, np.ndarray)):
        raise InvalidInputError(f"vmap's {where} holds {axes!r}: an axis is an int, or None for not batched")
    try:
        pairs = _children(axes, value)
    except (KeyError, TypeError, ValueError):
        raise InvalidInputError(
            f"vmap's {where} is {axes!r}, whose structure does not match {of}'s "
            f"({type(value).__name__}): give one int or None for the whole of it, or a pytree of them "
            "with its structure"
        ) from None
    return [a for sub_axes, sub_value in pairs for a in _prefix_axes(sub_axes, sub_value, where, of)]


def _is_axis(axes: Any) -> bool:
    """An int (a NumPy one too) or None; not a bool, which would be a slip."""
    return axes is None or (isinstance(axes, (int, np.integer)) and not isinstance(axes, bool))


def _children(axes: Any, value: Any) -> list[tuple[Any, Any]]:
    """The (axes, value) pairs one level down, where axes mirrors value's container, in the order
    tree.leaves walks value (an OrderedDict's keys as they are, a dict's sorted)."""
    if isinstance(axes, dict):
        if not isinstance(value, dict) or set(axes) != set(value):
            raise KeyError
        kids, keys = tree.children(value)
        return [(axes[k], kid) for k, kid in zip(keys, kids)]
    if isinstance(axes, (tuple, list)) and isinstance(value, (tuple, list)) and len(axes) == len(value):
        return list(zip(axes, value))
    if type(axes) is type(value):  # a registered class: its children by name
        (axes_kids, axes_keys), (kids, keys) = tree.children(axes), tree.children(value)
        if axes_keys == keys:
            return list(zip(axes_kids, kids))
    raise TypeError


def _normalized(axis: int, ndim: int, what: str, value: Any = None) -> int:
    if not -ndim <= axis < ndim:
        raise InvalidInputError(
            f"vmap's {what} asks for axis {axis} of a value with {ndim} axes "
            f"(shape {np.shape(value) if value is not None else '?'}): out of range"
        )
    return axis % ndim


def _batch_size(leaves: list, axes: list, axis_size: int | None, treedef: Any) -> int:
    sizes = {}  # by leaf; the leaves' paths (a tree walk) are built only for an error's message
    for k, (x, a) in enumerate(zip(leaves, axes)):
        if a is not None:
            shape = np.shape(x)
            if not -len(shape) <= a < len(shape):
                _normalized(a, len(shape), f"in_axes ({tree.paths(treedef, 'args')[k]})", x)
            sizes[k] = shape[a]
    if not sizes:
        if axis_size is None:
            raise InvalidInputError(
                "vmap needs a batch: every in_axes is None, so pass axis_size= (or batch an argument)"
            )
        return axis_size
    if len(set(sizes.values())) > 1 or (axis_size is not None and axis_size not in sizes.values()):
        paths = tree.paths(treedef, "args")
        listed = ", ".join(f"{paths[k]} has {n}" for k, n in sizes.items())
        given = f"; axis_size={axis_size}" if axis_size is not None else ""
        raise InvalidInputError(
            f"vmap got batched axes of different sizes: {listed}{given}; every batched axis must have "
            "the same length"
        )
    return next(iter(sizes.values()))


def _outputs(out: Any, out_axes: Any, trace: BatchTrace, size: int) -> Any:
    leaves, treedef = tree.flatten(out)
    axes = _prefix_axes(out_axes, out, "out_axes", "f's output")
    return tree.unflatten(treedef, [_output(x, a, trace, size) for x, a in zip(leaves, axes)])


def _batched_out_axes_none() -> InvalidInputError:
    return InvalidInputError(
        "vmap's out_axes is None for an output that depends on the batched arguments: give it an axis "
        "(0) to return one result per example, or reduce over the batch inside f"
    )


def _output(x: Any, axis: int | None, trace: BatchTrace, size: int) -> Any:
    """One output with its batch axis at `axis`: an unbatched one broadcast over the batch."""
    mine = isinstance(x, BatchTracer) and x._trace is trace
    if axis is None:
        if mine:
            raise _batched_out_axes_none()
        return x
    if mine:
        value, dim = x.value, x.bdim
    else:
        value, dim = ops.broadcast_to(x, shape=(size,) + tuple(np.shape(x))), 0
    return _with_batch_axis_at(value, dim, axis)


def _with_batch_axis_at(value: Any, dim: int, axis: int) -> Any:
    """A batched output (its batch axis at dim) with the batch axis where out_axes puts it."""
    axis = _normalized(axis, len(value.shape), "out_axes", value)
    return value if dim == axis else ops.moveaxis(value, source=dim, destination=axis)


def _looped_call(f: Callable, leaves: list, axes: list, treedef: Any, size: int, out_axes: Any) -> Any:
    """f once per example, the results stacked: what vmap falls back to."""
    if size == 0:
        raise InvalidInputError("vmap fell back to a loop over an empty batch: no example gives f's output")
    results = [
        f(*tree.unflatten(treedef, [example(x, a, i) for x, a in zip(leaves, axes)])) for i in range(size)
    ]
    treedef_out = tree.structure(results[0])
    per_leaf = []
    for i, result in enumerate(results):
        leaves_i, treedef_i = tree.flatten(result)
        if treedef_i != treedef_out:
            raise InvalidInputError(
                f"vmap ran f once per example (it converted a batched value), and example {i}'s output "
                f"has another structure than example 0's ({treedef_i} vs {treedef_out}): vmap's output "
                "needs one structure for every example"
            )
        per_leaf.append(leaves_i)
    stacked = []
    for j, axis in enumerate(_prefix_axes(out_axes, results[0], "out_axes", "f's output")):
        column = [leaves_i[j] for leaves_i in per_leaf]
        if axis is None:
            stacked.append(_shared(column))
        else:
            stacked.append(_with_batch_axis_at(stacked_examples(column, "f"), 0, axis))
    return tree.unflatten(treedef_out, stacked)


def _shared(column: list) -> Any:
    """The one output every example gave for an out_axes of None; the batched path's error if
    they differ (it depends on the batch)."""
    first = column[0]
    plain = [plain_numbers(x) for x in column]
    if not all(x is first for x in column) and not all(
        np.shape(p) == np.shape(plain[0]) and np.array_equal(p, plain[0], equal_nan=True) for p in plain
    ):
        raise _batched_out_axes_none()
    return first


_warned: set = set()


def _warn_once(f: Callable, error: BatchedConversionError) -> None:
    key = getattr(inspect.unwrap(f), "__code__", None) or id(f)  # (grad's wrapper: f's own code)
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(
        f"vmap({_name(f)}) runs f once per batch element: {error.what} has no batched meaning. The "
        "result is right, only slower; choose between values with anp.where(cond, a, b) to keep f "
        "batched, or pass vmap(..., fallback='error') to make this an error",
        VmapFallbackWarning,
        stacklevel=3,  # the line that called the vmapped function
    )
