"""Tracer: the base of every traced value; it behaves like an ndarray and routes NumPy calls to ops."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np

# The op catalogue imports adcore.spec, which needs adcore.dispatch, which needs this
# module's Tracer class at call time only; importing the catalogue here is safe.
import adcore.dispatch as _dispatch  # at call time only: dispatch imports this module
from adcore import plugins as _plugins
from adcore.errors import UnsupportedFunctionError
from adcore.ops import elementwise as _ew
from adcore.ops import linalg as _linalg
from adcore.ops import reductions as _red
from adcore.ops import shapes as _shp

# NumPy functions that only read shape or dtype: they answer from the concrete value.
_SHAPE_FUNCTIONS = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj}
# NumPy functions that build a new constant array from a prototype's shape and dtype.
_LIKE_FUNCTIONS = {np.zeros_like, np.ones_like, np.empty_like, np.full_like}


def concrete(value: Any) -> Any:
    """The plain value under any number of tracer levels (for comparisons, shapes and `bool`)."""
    while isinstance(value, Tracer):
        value = value._concrete_value()
    return value


class Tracer:
    """A value one transformation is tracing.

    Subclasses keep `value` (the primal, one level down; it may itself be a tracer),
    set `_trace`, and may override `_concrete_value` when the primal is not concrete.
    Arithmetic, indexing, methods and NumPy's own functions all become `bind` calls,
    so NumPy code runs unchanged on tracers.
    """

    __slots__ = ("_trace", "value")
    __array_priority__ = 100.0

    def _concrete_value(self) -> Any:
        return self.value

    # --- what NumPy asks of an array ---------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.value)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self.value)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        return bool(concrete(self))

    def __float__(self) -> float:
        return float(concrete(self))

    def __int__(self) -> int:
        return int(concrete(self))

    def item(self) -> Any:
        return np.asarray(concrete(self)).item()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise UnsupportedFunctionError(
            f"cannot turn a traced value ({type(self).__name__}) into a plain NumPy array: "
            "that would silently cut it out of the derivative. Use adcore.numpy functions "
            "(or NumPy functions that adcore maps to ops), or adcore.ops.stop_gradient "
            "if a constant is really meant."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    # --- arithmetic -----------------------------------------------------------
    # bind(op, ...) rather than op(...): the same call without building a bound method,
    # which is measurable on the per-op hot path (benchmarks/bench_reverse.py).
    def __neg__(self):
        return _dispatch.bind(_ew.negative, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _dispatch.bind(_ew.abs, self)

    def __add__(self, other):
        return _dispatch.bind(_ew.add, self, other)

    def __radd__(self, other):
        return _dispatch.bind(_ew.add, other, self)

    def __sub__(self, other):
        return _dispatch.bind(_ew.subtract, self, other)

    def __rsub__(self, other):
        return _dispatch.bind(_ew.subtract, other, self)

    def __mul__(self, other):
        return _dispatch.bind(_ew.multiply, self, other)

    def __rmul__(self, other):
        return _dispatch.bind(_ew.multiply, other, self)

    def __truediv__(self, other):
        return _dispatch.bind(_ew.divide, self, other)

    def __rtruediv__(self, other):
        return _dispatch.bind(_ew.divide, other, self)

    def __pow__(self, other):
        return _dispatch.bind(_ew.power, self, other)

    def __rpow__(self, other):
        return _dispatch.bind(_ew.power, other, self)

    def __matmul__(self, other):
        return _dispatch.bind(_linalg.matmul, self, other)

    def __rmatmul__(self, other):
        return _dispatch.bind(_linalg.matmul, other, self)

    # Comparisons have no derivative: they answer with plain boolean arrays.
    def __lt__(self, other):
        return concrete(self) < concrete(other)

    def __le__(self, other):
        return concrete(self) <= concrete(other)

    def __gt__(self, other):
        return concrete(self) > concrete(other)

    def __ge__(self, other):
        return concrete(self) >= concrete(other)

    def __eq__(self, other):
        return concrete(self) == concrete(other)

    def __ne__(self, other):
        return concrete(self) != concrete(other)

    __hash__ = object.__hash__

    # --- indexing and methods -----------------------------------------------
    def __getitem__(self, index):
        return _shp.getitem(self, index=index)

    @property
    def T(self):
        return _shp.transpose(self)

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return _shp.transpose(self, axes=tuple(axes) if axes else None)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return _shp.reshape(self, shape=tuple(shape))

    def squeeze(self, axis=None):
        return _shp.squeeze(self, axis=axis)

    def sum(self, axis=None, keepdims=False):
        return _red.sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return _red.mean(self, axis=axis, keepdims=keepdims)

    def prod(self, axis=None, keepdims=False):
        return _red.prod(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return _red.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return _red.min(self, axis=axis, keepdims=keepdims)

    def clip(self, a_min=None, a_max=None):
        return _ew.clip(self, a_min=a_min, a_max=a_max)

    def dot(self, other):
        return _dispatch.bind(_linalg.matmul, self, other)

    # --- NumPy's protocols ----------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            op = _plugins.get_registry().numpy_ops.get(ufunc)
            if op is not None:
                return op(*inputs)
            if all(t.endswith("?") for t in ufunc.types if "O" not in t):
                # predicates (greater, isfinite, logical_and, ...) have no derivative
                return ufunc(*(concrete(x) for x in inputs))
        details = f" with {sorted(kwargs)}" if kwargs else ""
        raise _unsupported(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}{details}")

    def __array_function__(self, func, types, args, kwargs):
        op = _plugins.get_registry().numpy_ops.get(func)
        if op is not None:
            inputs, params = _split_numpy_call(op, func, args, kwargs)
            return op(*inputs, **params)
        if func in _SHAPE_FUNCTIONS:
            return func(*(_stand_in(a) for a in args), **kwargs)
        if func in _LIKE_FUNCTIONS:
            return func(_stand_in(args[0]), *args[1:], **kwargs)
        raise _unsupported(f"{func.__module__}.{func.__name__}")


def _stand_in(value: Any) -> Any:
    """An array with a tracer's shape and dtype and no data, for NumPy's shape and *_like
    functions: they need no value, and some tracers (symbolic) have no number to give."""
    if isinstance(value, Tracer):
        return np.broadcast_to(np.empty((), dtype=value.dtype), value.shape)
    return value


def _unsupported(name: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        f"{name} has no adcore op, so it cannot be differentiated. Use an adcore.numpy "
        "function instead, or register an op for it: an OpSpec with numpy=(the function,) "
        "from a plugin's adcore_register_ops hook, and its rules from adcore_register_rules."
    )


@functools.cache
def _signature(func: Any) -> inspect.Signature:
    return inspect.signature(func)


def _split_numpy_call(op: Any, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Sort a NumPy-style call into the op's inputs and its static params, by NumPy's signature."""
    bound = _signature(func).bind(*args, **kwargs)
    names = list(bound.arguments)
    if op.variadic:
        inputs = tuple(bound.arguments[names[0]])
        rest = names[1:]
    else:
        inputs = tuple(bound.arguments[n] for n in names[: op.nin])
        rest = names[op.nin :]
    params = {}
    for name in rest:
        if name not in op.params:
            raise UnsupportedFunctionError(
                f"numpy.{func.__name__}(..., {name}=...) is not supported by adcore op "
                f"{op.name!r}, whose params are {list(op.params)}; leave {name!r} out."
            )
        params[name] = bound.arguments[name]
    return inputs, params
