"""vmap's batching trace: `BatchTrace` and its `BatchTracer`, one example's value holding the batch.

A `BatchTracer` is one example's value as f sees it (its `shape` is one example's) and holds the
whole batch: `value`, with the batch axis at `bdim`. Each op on one is the op's "batch" rule
(`adcore.extend.batching` says what a rule receives), from the plugin that brings the kind
(adcore-batching for the core ops) or the op's own plugin; an op flagged elementwise needs none;
a traceable op runs its body on the tracers; any other op, or a rule returning NotImplemented,
runs once per batch element (the loop rule, always right).

What has no batched meaning (`bool(x)`, `float(x)`, `np.asarray(x)`, a NumPy function with no op)
raises BatchedConversionError, which `adcore.vmap` turns into a loop over f. Comparisons and
predicates of a batched value are batched booleans, so `anp.where(x > 0, a, b)` stays batched.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, Tracer, concrete
from adcore.errors import BatchedConversionError, InvalidInputError, UnsupportedFunctionError
from adcore.extend.batching import elementwise, moved_to_front, shifted_axis, with_rank
from adcore.numpy_dispatch import INDEX_FUNCTIONS, function_call, is_predicate, numpy_op, ufunc_name
from adcore.plugins import get_registry


class BatchTrace(Trace):
    """One vmap: each op on its tracers runs once for the whole batch of `size` examples."""

    copies_params = False  # rules read params inside process only

    def __init__(self, size: int) -> None:
        self.size = size
        self.registry = get_registry()
        self.rules = self.registry.rules["batch"]
        self._overridden: dict[str, bool] = {}  # per traceable op: a rule of another kind overrides its body

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        if params:
            for value in params.values():  # inline: most params are numbers, names or None
                if value.__class__ not in _PLAIN_PARAMS:
                    _refuse_batched_params(self, op, params)
                    break
        values, dims = [], []
        for a in args:
            if a.__class__ is BatchTracer and a._trace is self:
                values.append(a.value)
                dims.append(a.bdim)
            else:
                # an unbatched list is the array the op's impl makes of it (rules read its axes)
                values.append(np.asarray(a) if a.__class__ in (list, tuple) else a)
                dims.append(None)
        rule = self.rules.get(op.name)
        if rule is None:
            if op.elementwise:
                rule = _elementwise_rule(op)
            elif op.traceable:
                if self._body_is_its_derivative(op, values):
                    return op.impl(*args, **params)
                rule = OVERRIDDEN_BODY_RULES.get(op.impl)
        out = NotImplemented if rule is None else rule(tuple(dims), *values, **params)
        if out is NotImplemented:
            out = looped(op, dims, values, params, self.size)
        value, dim = out
        return value if dim is None else BatchTracer(self, value, dim)

    def _body_is_its_derivative(self, op: Any, values: list) -> bool:
        """Whether running a traceable op's body on the batch is right: always for its value, and
        under an outer transformation only if no rule of another kind (custom_vjp's) overrides
        the body's derivative; else its rule in OVERRIDDEN_BODY_RULES, or the loop, so each
        example's call meets that rule."""
        if not any(isinstance(v, Tracer) for v in values):
            return True
        overridden = self._overridden.get(op.name)
        if overridden is None:
            rules = self.registry.rules.items()
            overridden = self._overridden[op.name] = any(op.name in t for kind, t in rules if kind != "batch")
        return not overridden


# batch rules for traceable ops whose body is not their derivative, by the op's impl, for when
# an outer transformation differentiates them (a custom function's op: adcore.custom_batching);
# here, not in the registry, since user ops outlive a registry built without kind "batch"
OVERRIDDEN_BODY_RULES: dict[Callable[..., Any], Callable[..., Any]] = {}


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
    return stacked_examples(results, f"op {op.name!r}"), 0


def stacked_examples(results: list, what: str) -> Any:
    """The examples' results stacked along a new axis 0; a typed error if their shapes differ."""
    shapes = [np.shape(r) for r in results]
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise InvalidInputError(
                f"vmap ran {what} once per example, and example {i}'s result has shape {shape} where "
                f"example 0's has {shapes[0]}: a batch needs one shape for every example (a result whose "
                "size depends on the values, as np.unique's or a boolean mask's, has no batched form)"
            )
    return ops.stack(results, axis=0)


def example(value: Any, dim: int | None, i: int) -> Any:
    """Example i of a batched value (the value itself when it is not batched)."""
    if dim is None:
        return value
    return value[(slice(None),) * dim + (i,)]


# param classes that cannot hold a batched value: process skips the walk of _refuse_batched_params
_PLAIN_PARAMS = frozenset((int, float, bool, str, type(None), np.float64, np.int64))


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
        raise BatchedConversionError(
            self._trace, "its plain value (for a static param, or numeric differentiation)"
        )

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

    def __and__(self, other: Any) -> Any:  # of batched booleans (x > 0) & (x < 1), as NumPy's
        return np.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return np.bitwise_and(other, self)

    def __or__(self, other: Any) -> Any:
        return np.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return np.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return np.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return np.bitwise_xor(other, self)

    def __invert__(self) -> Any:
        return np.invert(self)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        return np.all(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        return np.any(self, axis=axis, out=out, keepdims=keepdims, **kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs and numpy_op(ufunc) is None:
            # a predicate, or a logical/bitwise ufunc of booleans: no derivative, batched as it is
            if is_predicate(ufunc) or all(_kind(x) == "b" for x in inputs):
                return batched_predicate(ufunc, inputs)
        if "out" in kwargs:
            what = f"{ufunc_name(ufunc)}(..., out=z) (a write into a plain array z, as z += x does)"
            raise BatchedConversionError(self._trace, what)
        try:
            return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)
        except UnsupportedFunctionError as e:  # no op, or a keyword its op lacks: the loop runs it
            name = ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
            raise BatchedConversionError(self._trace, f"{name}(x) (no batched form: {e})") from e

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        batched = BATCHED_FUNCTIONS.get(func)
        if batched is not None:
            try:
                result = batched(*args, **kwargs)
            except NotImplementedError:
                raise BatchedConversionError(
                    self._trace, f"np.{func.__name__}(x, ...) with these arguments"
                ) from None
            if result is not NotImplemented:
                return result
        if func in INDEX_FUNCTIONS or (func is np.where and len(args) + len(kwargs) == 1):
            raise BatchedConversionError(self._trace, f"np.{func.__name__}(x) (an index read off its values)")
        # A NumPy function with no batched form (no op, a keyword its op lacks, or adcore's version
        # computing NumPy's own on the plain values, which hands the batch back here) is a
        # conversion: vmap loops over the examples, where it runs
        in_flight = _in_flight()
        if func in in_flight:
            raise BatchedConversionError(
                self._trace, f"np.{func.__name__}(x) (a NumPy function of its plain values)"
            )
        in_flight.add(func)
        try:
            return function_call(func, args, kwargs)
        except UnsupportedFunctionError as e:
            raise BatchedConversionError(self._trace, f"np.{func.__name__}(x) (no batched form: {e})") from e
        finally:
            in_flight.discard(func)


_local = threading.local()


def _in_flight() -> set:
    """The NumPy functions whose call on a batched value is running now, in this thread."""
    in_flight = getattr(_local, "in_flight", None)
    if in_flight is None:
        in_flight = _local.in_flight = set()
    return in_flight


def _kind(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    return (dtype if dtype is not None else np.result_type(x)).kind


def batched_predicate(ufunc: Any, inputs: Sequence[Any]) -> Any:
    """A comparison or predicate (no derivative) of batched values, for every example at once."""
    inputs = [concrete(x) for x in inputs]
    batched = [x for x in inputs if isinstance(x, BatchTracer)]
    trace = max((x._trace for x in batched), key=operator.attrgetter("level"))
    mine = [isinstance(x, BatchTracer) and x._trace is trace for x in inputs]
    rank = max(np.ndim(x) for x in inputs)  # (a BatchTracer's ndim is one example's)
    values = [with_rank(moved_to_front(x.value, x.bdim), rank) if own else x for x, own in zip(inputs, mine)]
    return BatchTracer(trace, ufunc(*values), 0)


def batched_reduction(
    func: Any, x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any
) -> Any:
    """np.all, np.any, np.count_nonzero (no derivative) over each example's axes of a batched value."""
    if not isinstance(x, BatchTracer) or out is not None or kw:
        raise NotImplementedError  # (a list of values, out=, where=): the conversion, below
    value = moved_to_front(concrete(x.value), x.bdim)
    return BatchTracer(x._trace, func(value, axis=shifted_axis(axis, len(x.shape)), keepdims=keepdims), 0)


def _elementwise_predicate(func: Any) -> Callable[..., Any]:
    """np.isclose, np.iscomplex, np.isreal, np.isneginf (no derivative) of batched values, element by
    element."""
    n = 2 if func is np.isclose else 1

    def batched(*inputs: Any, **params: Any) -> Any:
        rest = inputs[n:]
        return batched_predicate(lambda *values: func(*values, *rest, **params), inputs[:n])

    return batched


def _extremum(func: Any) -> Callable[..., Any]:
    """np.max/np.min with initial= (which their ops lack) of a batch of plain values (a rule's
    concrete values: no derivative to keep), every example's at once; NotImplemented otherwise
    (then the op's way)."""

    def batched(x: Any, *args: Any, **kwargs: Any) -> Any:
        plain = isinstance(x, BatchTracer) and not isinstance(x.value, Tracer)
        if not plain or args or "initial" not in kwargs or set(kwargs) - {"axis", "keepdims", "initial"}:
            return NotImplemented
        axis = shifted_axis(kwargs.get("axis"), len(x.shape))
        value = moved_to_front(x.value, x.bdim)
        out = func(value, axis=axis, keepdims=kwargs.get("keepdims", False), initial=kwargs["initial"])
        return BatchTracer(x._trace, out, 0)

    return batched


def _allclose(a: Any, b: Any, *rest: Any, **params: Any) -> Any:
    return np.all(np.isclose(a, b, *rest, **params))


# NumPy functions with no derivative that adcore computes on plain values (a BatchTracer is one
# example's value, so NumPy's own would see it again): here each example's at once
BATCHED_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    **{f: functools.partial(batched_reduction, f) for f in (np.all, np.any, np.count_nonzero)},
    **{f: _elementwise_predicate(f) for f in (np.isclose, np.iscomplex, np.isreal, np.isneginf, np.isposinf)},
    **{f: _extremum(f) for f in (np.max, np.min, np.amax, np.amin)},
    np.allclose: _allclose,
}
