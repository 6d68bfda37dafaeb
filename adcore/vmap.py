"""`adcore.vmap`: f over a batch at once, by a batching trace (autodidax's), with the registry's rules.

A `BatchTracer` is one example's value as f sees it (its `shape` is one example's) and holds the
whole batch: `value`, with the batch axis at `bdim`. Each op on one is the op's "batch" rule
(`adcore.extend.batching` says what a rule receives), from the plugin that brings the kind
(adcore-batching for the core ops) or the op's own plugin; an op flagged elementwise needs none;
a traceable op runs its body on the tracers; any other op, or a rule returning NotImplemented,
runs once per batch element (the loop rule, always right).

Python control flow on a batched value (`if x > 0`, `float(x)`, `np.asarray(x)`) has no batched
meaning: vmap then runs f once per batch element for that call and warns once per function
(`fallback="error"` raises the BatchedConversionError instead). Comparisons and predicates of a
batched value are batched booleans, so `anp.where(x > 0, a, b)` stays batched.
"""

from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops, tree
from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, Tracer, concrete, new_trace
from adcore.errors import BatchedConversionError, InvalidInputError, keywords_checked
from adcore.extend.batching import elementwise, moved_to_front, with_rank
from adcore.numpy_dispatch import INDEX_FUNCTIONS, function_call, is_predicate, numpy_op
from adcore.plugins import get_registry


class VmapFallbackWarning(UserWarning):
    """vmap ran f once per batch element: f converted a batched value (Python control flow on it)."""


class BatchTrace(Trace):
    """One vmap: each op on its tracers runs once for the whole batch of `size` examples."""

    copies_params = False  # rules read params inside process only

    def __init__(self, size: int) -> None:
        self.size = size
        self.registry = get_registry()
        self.rules = self.registry.rules["batch"]

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        if params:
            _refuse_batched_params(self, op, params)
        values, dims = [], []
        for a in args:
            if isinstance(a, BatchTracer) and a._trace is self:
                values.append(a.value)
                dims.append(a.bdim)
            else:
                values.append(a)
                dims.append(None)
        rule = self.rules.get(op.name)
        if rule is None and op.elementwise:
            rule = _elementwise_rule(op)
        if rule is None and op.traceable and self._body_is_its_derivative(op, values):
            return op.impl(*args, **params)
        out = NotImplemented if rule is None else rule(tuple(dims), *values, **params)
        if out is NotImplemented:
            out = looped(op, dims, values, params, self.size)
        value, dim = out
        return value if dim is None else BatchTracer(self, value, dim)

    def _body_is_its_derivative(self, op: Any, values: list) -> bool:
        """Whether running a traceable op's body on the batch is right: always for its value, and
        under an outer transformation only if no rule of another kind (custom_vjp's) overrides
        the body's derivative; else the loop, so each example's call meets that rule."""
        if not any(isinstance(v, Tracer) for v in values):
            return True
        return not any(op.name in table for kind, table in self.registry.rules.items() if kind != "batch")


@functools.cache
def _elementwise_rule(op: Any) -> Callable[..., Any]:
    return elementwise(op)


def looped(op: Any, dims: Sequence[int | None], values: Sequence[Any], params: dict, size: int) -> tuple:
    """The loop rule: the op once per batch element, the results stacked along a new axis 0."""
    if size == 0:
        raise InvalidInputError(
            f"vmap over an axis of size 0 reached op {op.name!r}, which has no batch rule, so vmap would "
            "run it once per element and has no element to learn its result's shape from; give the "
            "op a batch rule, or leave empty batches out"
        )
    results = [op(*(example(v, d, i) for v, d in zip(values, dims)), **params) for i in range(size)]
    return ops.stack(results, axis=0), 0


def example(value: Any, dim: int | None, i: int) -> Any:
    """Example i of a batched value (the value itself when it is not batched)."""
    if dim is None:
        return value
    return value[(slice(None),) * dim + (i,)]


def _refuse_batched_params(trace: BatchTrace, op: Any, params: dict) -> None:
    """A batched value as a static param (a mask or index of getitem, say) has no batched
    meaning: each example's would give its own result shape, so vmap loops over f instead."""
    for name, value in params.items():
        if any(isinstance(v, BatchTracer) and v._trace is trace for v in _flat(value)):
            raise BatchedConversionError(trace, f"a batched value as param {name!r} of op {op.name!r}")


def _flat(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _flat(item)]
    return [value]


class BatchTracer(ArrayTracer):
    """One example's value, holding the whole batch: `value` with its batch axis at `bdim`."""

    __slots__ = ("bdim",)
    # concrete(x) stops here: the batch of plain values stands for one example's plain value, so
    # comparisons and masks of it stay batched (a conversion of it is what has no batched meaning)
    concrete_itself = True

    def __init__(self, trace: BatchTrace, value: Any, bdim: int) -> None:
        self._trace, self.value, self.bdim = trace, value, bdim

    @property
    def shape(self) -> tuple[int, ...]:
        shape = self.value.shape
        return shape[: self.bdim] + shape[self.bdim + 1 :]

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    def _concrete_value(self) -> Any:
        raise BatchedConversionError(self._trace, "its plain value")

    # --- what has no batched meaning: vmap loops over f instead (or raises, fallback="error")
    def __bool__(self) -> bool:
        raise BatchedConversionError(self._trace, "bool(x) (an if or while on it, `and`/`or`/`not`)")

    def __float__(self) -> float:
        raise BatchedConversionError(self._trace, "float(x)")

    def __int__(self) -> int:
        raise BatchedConversionError(self._trace, "int(x)")

    def __index__(self) -> int:
        raise BatchedConversionError(self._trace, "x as an index (range(x), a slice bound, operator.index)")

    def __complex__(self) -> complex:
        raise BatchedConversionError(self._trace, "complex(x)")

    def __floor__(self) -> int:
        raise BatchedConversionError(self._trace, "math.floor(x)")

    def __ceil__(self) -> int:
        raise BatchedConversionError(self._trace, "math.ceil(x)")

    def __trunc__(self) -> int:
        raise BatchedConversionError(self._trace, "math.trunc(x)")

    def item(self, *index: Any) -> Any:
        raise BatchedConversionError(self._trace, "x.item()")

    def tolist(self) -> Any:
        raise BatchedConversionError(self._trace, "x.tolist()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise BatchedConversionError(
            self._trace, "np.asarray(x) (a NumPy or SciPy call that converts its input)"
        )

    def __contains__(self, item: Any) -> bool:
        raise BatchedConversionError(self._trace, "`item in x`")

    def __format__(self, spec: str) -> str:
        if spec:
            raise BatchedConversionError(self._trace, f"format(x, {spec!r})")
        return str(self)

    def __repr__(self) -> str:
        return f"BatchTracer(batch axis {self.bdim} of {self.value!r})"

    # --- comparisons and predicates: batched booleans, with no derivative ---------------------
    def __lt__(self, other: Any) -> Any:
        return batched_predicate(np.less, (self, other))

    def __le__(self, other: Any) -> Any:
        return batched_predicate(np.less_equal, (self, other))

    def __gt__(self, other: Any) -> Any:
        return batched_predicate(np.greater, (self, other))

    def __ge__(self, other: Any) -> Any:
        return batched_predicate(np.greater_equal, (self, other))

    def __eq__(self, other: Any) -> Any:
        return batched_predicate(np.equal, (self, other))

    def __ne__(self, other: Any) -> Any:
        return batched_predicate(np.not_equal, (self, other))

    __hash__ = object.__hash__

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs and is_predicate(ufunc) and numpy_op(ufunc) is None:
            return batched_predicate(ufunc, inputs)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if func in INDEX_FUNCTIONS or (func is np.where and len(args) + len(kwargs) == 1):
            raise BatchedConversionError(self._trace, f"np.{func.__name__}(x) (an index read off its values)")
        return function_call(func, args, kwargs)


def batched_predicate(ufunc: Any, inputs: Sequence[Any]) -> Any:
    """A comparison or predicate (no derivative) of batched values, for every example at once."""
    inputs = [concrete(x) for x in inputs]
    batched = [x for x in inputs if isinstance(x, BatchTracer)]
    trace = max((x._trace for x in batched), key=operator.attrgetter("level"))
    mine = [isinstance(x, BatchTracer) and x._trace is trace for x in inputs]
    rank = max(np.ndim(x) for x in inputs)  # (a BatchTracer's ndim is one example's)
    values = [with_rank(moved_to_front(x.value, x.bdim), rank) if own else x for x, own in zip(inputs, mine)]
    return BatchTracer(trace, ufunc(*values), 0)


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

    `in_axes`: the batched axis of each argument (an int, None for an argument every example
    shares, or a pytree of them matching the arguments' structure; one int or None for all).
    `out_axes`: where the batch axis goes in each output (None: the output is not batched).
    `axis_size`: the batch size, needed only when no argument is batched. `fallback`: what to
    do when f converts a batched value (Python control flow on it): "loop" runs f once per
    example and warns once per function, "error" raises the BatchedConversionError.
    """
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
        axes = _leaf_axes(in_axes, args, "in_axes")
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


def _leaf_axes(in_axes: Any, args: tuple, what: str) -> list:
    """One axis (or None) per leaf of args, from in_axes: one for all, or a prefix tree of them."""
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * len(tree.leaves(list(args)))
    if not isinstance(in_axes, (tuple, list)) or len(in_axes) != len(args):
        raise InvalidInputError(
            f"vmap's {what} must be an int, None, or a tuple with one entry per positional argument "
            f"({len(args)} here), each an int, None or a pytree of them; got {in_axes!r}"
        )
    out = []
    for i, (arg, axes) in enumerate(zip(args, in_axes)):
        out += _prefix_axes(axes, arg, f"{what}[{i}]")
    return out


def _prefix_axes(axes: Any, arg: Any, where: str) -> list:
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree.leaves(arg))
    try:
        return [
            a for sub_axes, sub_arg in _children(axes, arg) for a in _prefix_axes(sub_axes, sub_arg, where)
        ]
    except (KeyError, TypeError, ValueError):
        raise InvalidInputError(
            f"vmap's {where} is {axes!r}, whose structure does not match its argument's "
            f"({type(arg).__name__}): give one int or None for the whole argument, or a pytree of them "
            "with the argument's structure"
        ) from None


def _children(axes: Any, arg: Any) -> list[tuple[Any, Any]]:
    """The (axes, argument) pairs one level down, where axes mirrors the argument's container."""
    if isinstance(axes, dict):
        if not isinstance(arg, dict) or set(axes) != set(arg):
            raise KeyError
        return [(axes[k], arg[k]) for k in sorted(arg)]
    if isinstance(axes, (tuple, list)) and isinstance(arg, (tuple, list)) and len(axes) == len(arg):
        return list(zip(axes, arg))
    raise TypeError


def _normalized(axis: int, ndim: int, what: str, value: Any = None) -> int:
    if not -ndim <= axis < ndim:
        raise InvalidInputError(
            f"vmap's {what} asks for axis {axis} of a value with {ndim} axes "
            f"(shape {np.shape(value) if value is not None else '?'}): out of range"
        )
    return axis % ndim


def _batch_size(leaves: list, axes: list, axis_size: int | None, treedef: Any) -> int:
    sizes = {}
    for path, x, a in zip(tree.paths(treedef, "args"), leaves, axes):
        if a is not None:
            _normalized(a, np.ndim(x), f"in_axes ({path})", x)
            sizes[path] = np.shape(x)[a]
    if not sizes:
        if axis_size is None:
            raise InvalidInputError(
                "vmap needs a batch: every in_axes is None, so pass axis_size= (or batch an argument)"
            )
        return axis_size
    if len(set(sizes.values())) > 1 or (axis_size is not None and axis_size not in sizes.values()):
        listed = ", ".join(f"{p} has {n}" for p, n in sizes.items())
        given = f"; axis_size={axis_size}" if axis_size is not None else ""
        raise InvalidInputError(
            f"vmap got batched axes of different sizes: {listed}{given}; every batched axis must have "
            "the same length"
        )
    return next(iter(sizes.values()))


def _outputs(out: Any, out_axes: Any, trace: BatchTrace, size: int) -> Any:
    leaves, treedef = tree.flatten(out)
    axes = _leaf_axes(out_axes, (out,), "out_axes") if not isinstance(out_axes, (int, type(None))) else None
    axes = axes or [out_axes] * len(leaves)
    return tree.unflatten(treedef, [_output(x, a, trace, size) for x, a in zip(leaves, axes)])


def _output(x: Any, axis: int | None, trace: BatchTrace, size: int) -> Any:
    """One output with its batch axis at `axis`: an unbatched one broadcast over the batch."""
    mine = isinstance(x, BatchTracer) and x._trace is trace
    if axis is None:
        if mine:
            raise InvalidInputError(
                "vmap's out_axes is None for an output that depends on the batched arguments: give it "
                "an axis (0) to return one result per example, or reduce over the batch inside f"
            )
        return x
    if mine:
        value, dim = x.value, x.bdim
    else:
        value, dim = ops.broadcast_to(x, shape=(size,) + tuple(np.shape(x))), 0
    axis = _normalized(axis, len(value.shape), "out_axes", value)
    return value if dim == axis else ops.moveaxis(value, source=dim, destination=axis)


def _looped_call(f: Callable, leaves: list, axes: list, treedef: Any, size: int, out_axes: Any) -> Any:
    """f once per example, the results stacked: what vmap falls back to."""
    results = []
    for i in range(size):
        results.append(f(*tree.unflatten(treedef, [example(x, a, i) for x, a in zip(leaves, axes)])))
    if size == 0:
        raise InvalidInputError("vmap fell back to a loop over an empty batch: no example gives f's output")
    first, treedef_out = tree.flatten(results[0])
    per_leaf = [tree.flatten(r)[0] for r in results]
    axes_out = (
        [out_axes] * len(first)
        if isinstance(out_axes, (int, type(None)))
        else _leaf_axes(out_axes, (results[0],), "out_axes")
    )
    stacked = []
    for j, axis in enumerate(axes_out):
        column = [leaves_i[j] for leaves_i in per_leaf]
        if axis is None:
            stacked.append(column[0])  # the same for every example (f's output does not depend on the batch)
        else:
            value = ops.stack(column, axis=0)
            axis = _normalized(axis, len(value.shape), "out_axes", value)
            stacked.append(value if axis == 0 else ops.moveaxis(value, source=0, destination=axis))
    return tree.unflatten(treedef_out, stacked)


_warned: set = set()


def _warn_once(f: Callable, error: BatchedConversionError) -> None:
    key = getattr(f, "__code__", None) or id(f)
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
