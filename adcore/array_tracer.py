"""The NumPy surface of a traced value: `ArrayTracer`, the base of every backend's tracer.

Operators, ndarray's methods and properties, `__array_ufunc__`/`__array_function__` (a NumPy
function on a traced value is the op registered for it, else a Python function over ops from
`adcore.ops.NUMPY_FUNCTIONS`), and the typed refusals of what would cut a derivative (float(x),
np.asarray(x), in-place writes). It sits above the ops it binds, as autograd's numpy_boxes.py
above tracer.py; the tracing machinery itself is `adcore.core`.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, bind, concrete, holds_tracer, stand_in, traced_by
from adcore.errors import (
    ComplexValueError,
    InvalidValueError,
    TracerConversionError,
    UnsupportedFunctionError,
)

# --- the traced value ----------------------------------------------------------------------

# NumPy functions that only read shape or dtype: they answer from the concrete value.
_SHAPE_FUNCTIONS = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj}
# NumPy functions that build a new constant array from a prototype's shape and dtype.
_LIKE_FUNCTIONS = {np.zeros_like, np.ones_like, np.empty_like, np.full_like}


class ArrayTracer(Tracer):
    """A traced value that behaves like an ndarray: the base of every backend's tracer.

    Arithmetic, indexing, methods and NumPy's own functions all become `bind` calls,
    so NumPy code runs unchanged on tracers.
    """

    __slots__ = ()
    __array_priority__ = 100.0

    def stacked(self, values: list | tuple) -> Tracer:
        items = [
            v if isinstance(v, Tracer) else self.stacked(v) if holds_tracer(v) else np.asarray(v)
            for v in values
        ]
        return ops.stack(items, axis=0)

    # --- what NumPy asks of an array ---------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self) -> str:
        """'cpu', as a NumPy 2 ndarray's: the value lives in NumPy's memory."""
        return "cpu"

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        raise UnsupportedFunctionError(
            f"x.__array_namespace__() on a traced value ({traced_by(self)}): adcore.numpy (import adcore.numpy "
            "as anp) holds adcore's differentiable NumPy functions, but it is not a complete array-API "
            "namespace, so none is claimed; call NumPy's functions (np.sin(x)) or anp's on x directly"
        )

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def real(self):
        # a real traced value is its own real part, as a real ndarray's .real is a view of itself
        return ops.real(self) if self.dtype.kind == "c" else self

    @property
    def imag(self):
        # of a real traced value, a constant 0: nothing flows through it
        return ops.imag(self) if self.dtype.kind == "c" else np.zeros(self.shape, self.dtype)

    def conj(self):
        return ops.conj(self) if self.dtype.kind == "c" else self

    conjugate = conj

    @property
    def flat(self):
        raise UnsupportedFunctionError(
            f"x.flat on a traced value ({traced_by(self)}): use x.ravel() or x.reshape(-1), which are traced."
        )

    def __len__(self) -> int:
        if not self.shape:
            raise UnsupportedFunctionError(
                f"len() of a 0-d traced value ({traced_by(self)}), as of a 0-d array"
            )
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __contains__(self, item: Any) -> bool:
        # as ndarray's: a comparison, which carries no derivative
        return bool((concrete(self) == concrete(item)).any())

    def __bool__(self) -> bool:
        return bool(concrete(self))

    def __format__(self, spec: str) -> str:
        # f"{x:.3f}" in a log line reads the number; it never flows back into f
        return format(concrete(self), spec) if spec else str(self)

    # --- conversions to plain numbers: refused, they would cut the derivative ---------
    def __float__(self) -> float:
        raise conversion_error(
            self,
            "float(x)",
            "math.exp(x) and other math functions, np.float64(x) and storing x into a plain array "
            "(z[i] = x) call float(x) too; build arrays of traced values with anp.stack or "
            "anp.concatenate, or add adcore.ops.scatter_add(x, index=i, shape=z.shape) to z. ",
        )

    def __int__(self) -> int:
        raise conversion_error(self, "int(x)")

    def __index__(self) -> int:
        raise conversion_error(self, "operator.index(x) (x as an index, range(x), a slice bound)")

    def __complex__(self) -> complex:
        raise conversion_error(self, "complex(x)")

    def __floor__(self) -> int:
        raise conversion_error(self, "math.floor(x)", "anp.floor(x) is the traced floor (derivative 0). ")

    def __ceil__(self) -> int:
        raise conversion_error(self, "math.ceil(x)", "-anp.floor(-x) is the traced ceil (derivative 0). ")

    def __trunc__(self) -> int:
        raise conversion_error(self, "math.trunc(x)", "anp.sign(x) * anp.floor(anp.abs(x)) is traced. ")

    def item(self, *index: Any) -> Any:
        raise conversion_error(self, "x.item()", "x[i] is the traced element. ")

    def tolist(self) -> Any:
        raise conversion_error(self, "x.tolist()", "list(x) and x[i] keep the elements traced. ")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise conversion_error(
            self,
            "np.asarray(x) (or np.array(x), np.float64(x), np.r_[...], a NumPy call that converts its input)",
            _scipy_caller()
            + "Build arrays of traced values with anp.array([...]) (adcore.numpy), np.stack or "
            "np.concatenate; for np.r_ and np.c_, anp.r_ and anp.c_; for np.full(shape, x), anp.full. ",
        )

    # --- ndarray methods with a traced meaning -----------------------------------------
    def __round__(self, ndigits: int | None = None):
        # round's derivative is 0 (docs/conventions.md); the result stays a traced float
        # array, like round() of a 0-d ndarray, so it cannot be used as a Python int.
        return ops.round(self, decimals=ndigits or 0)

    def round(self, decimals: int = 0):
        return ops.round(self, decimals=decimals)

    def copy(self, order: str = "K"):
        # a traced value is immutable (x[i] = v is refused), so it is its own copy
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo: dict):
        return self

    def astype(
        self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
    ):
        target = np.dtype(dtype)
        if target == self.dtype:
            return self
        if self.dtype.kind == "c" and target.kind == "f":
            raise ComplexValueError(
                f"x.astype({target}) of a complex traced value ({traced_by(self)}) would drop its "
                "imaginary part (NumPy's ComplexWarning): write x.real (or anp.real(x)), or anp.abs(x) "
                "for the modulus."
            )
        if target.kind in "fc":
            return ops.astype(self, dtype=target)  # its derivative casts back to x's dtype
        raise conversion_error(
            self,
            f"x.astype({target})",
            f"The fix, for its plain value (indices, counts): adcore.concrete(x).astype({target}). ",
        )

    def flatten(self, order: str = "C"):
        return self.ravel(order)

    def ravel(self, order: str = "C"):
        if order != "C":
            # 'F' and the layout-following 'A'/'K' order elements unlike reshape(-1)
            raise UnsupportedFunctionError(
                f"x.ravel(order={order!r}) on a traced value ({traced_by(self)}): only order 'C' is "
                "supported; for Fortran order write x.T.reshape(-1)."
            )
        return ops.reshape(self, shape=(-1,))

    # --- writes in place and ndarray methods with no op: refused by name ------------------
    def __setitem__(self, index: Any, value: Any) -> None:
        raise UnsupportedFunctionError(
            f"x[...] = v on a traced value ({traced_by(self)}): a traced value cannot change in place. "
            "Build the new value instead: anp.where(mask, v, x), or, for x with x[i] replaced by v, "
            "x + adcore.ops.scatter_add(v - x[i], index=i, shape=x.shape)."
        )

    def __delitem__(self, index: Any) -> None:
        raise UnsupportedFunctionError(
            f"del x[...] on a traced value ({traced_by(self)}): select what to keep instead (x[mask], "
            "anp.concatenate of slices)."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    # --- arithmetic -----------------------------------------------------------
    # bind(op, ...) rather than op(...): the same call without building a bound method,
    # which is measurable on the per-op hot path (benchmarks/bench_reverse.py).
    def __neg__(self):
        return bind(ops.negative, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return bind(ops.abs, self)

    def __add__(self, other):
        return bind(ops.add, self, other)

    def __radd__(self, other):
        return bind(ops.add, other, self)

    def __sub__(self, other):
        return bind(ops.subtract, self, other)

    def __rsub__(self, other):
        return bind(ops.subtract, other, self)

    def __mul__(self, other):
        return bind(ops.multiply, self, other)

    def __rmul__(self, other):
        return bind(ops.multiply, other, self)

    def __truediv__(self, other):
        return bind(ops.divide, self, other)

    def __rtruediv__(self, other):
        return bind(ops.divide, other, self)

    def __pow__(self, other):
        return bind(ops.power, self, other)

    def __rpow__(self, other):
        return bind(ops.power, other, self)

    # Floor division and remainder are NumPy's own (1 // 0.1 is 9.0, not floor(1 / 0.1)): x // y
    # is a step, derivative 0 as floor's; x % y has d/dx = 1 and d/dy = -(x // y) (docs/conventions.md)
    def __floordiv__(self, other):
        return bind(ops.floor_divide, self, other)

    def __rfloordiv__(self, other):
        return bind(ops.floor_divide, other, self)

    def __mod__(self, other):
        return bind(ops.mod, self, other)

    def __rmod__(self, other):
        return bind(ops.mod, other, self)

    def __divmod__(self, other):
        return bind(ops.floor_divide, self, other), bind(ops.mod, self, other)

    def __rdivmod__(self, other):
        return bind(ops.floor_divide, other, self), bind(ops.mod, other, self)

    def __matmul__(self, other):
        return bind(ops.matmul, self, other)

    def __rmatmul__(self, other):
        return bind(ops.matmul, other, self)

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
        if isinstance(index, Tracer) or (type(index) is tuple and any(isinstance(i, Tracer) for i in index)):
            # a traced mask (symbolic's x > 0) or index carries no derivative: its number picks
            index = tuple(map(concrete, index)) if type(index) is tuple else concrete(index)
        return ops.getitem(self, index=index)

    @property
    def T(self):
        return ops.transpose(self)

    @property
    def mT(self):
        if self.ndim < 2:
            raise UnsupportedFunctionError(
                f"x.mT of a {self.ndim}-d traced value: it needs 2 dimensions or more"
            )
        axes = tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2)
        return ops.transpose(self, axes=axes)

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return ops.transpose(self, axes=tuple(axes) if axes else None)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return ops.reshape(self, shape=tuple(shape))

    def squeeze(self, axis=None):
        return ops.squeeze(self, axis=axis)

    # ndarray's reductions: NumPy's positional order (x.sum(0, float32)), `out` refused by name
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, where=True, **more):
        _no_out(self, "sum", out, more)
        return ops.sum(self, axis=axis, keepdims=keepdims, **_given(dtype=dtype, where=where))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, where=True, **more):
        _no_out(self, "mean", out, more)
        return ops.mean(self, axis=axis, keepdims=keepdims, **_given(dtype=dtype, where=where))

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **more):
        _no_out(self, "prod", out, more)
        _same_dtype(self, "prod", dtype)
        return ops.prod(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False, **more):
        _no_out(self, "max", out, more)
        return ops.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False, **more):
        _no_out(self, "min", out, more)
        return ops.min(self, axis=axis, keepdims=keepdims)

    def ptp(self, axis=None, out=None, keepdims=False, **more):
        _no_out(self, "ptp", out, more)
        return ops.ptp(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **more):
        _no_out(self, "var", out, more)
        _same_dtype(self, "var", dtype)
        return ops.var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **more):
        _no_out(self, "std", out, more)
        _same_dtype(self, "std", dtype)
        return ops.std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None, **more):
        _no_out(self, "cumsum", out, more)
        return ops.cumsum(self, axis=axis, **_given(dtype=dtype))

    def cumprod(self, axis=None, dtype=None, out=None, **more):
        _no_out(self, "cumprod", out, more)
        return ops.cumprod(self, axis=axis, **_given(dtype=dtype))

    def clip(self, min=None, max=None, out=None, **kwargs):
        _no_out(self, "clip", out)
        # NumPy 2 names the bounds min and max; a_min and a_max are its older names
        return ops.clip(self, a_min=kwargs.pop("a_min", min), a_max=kwargs.pop("a_max", max), **kwargs)

    def swapaxes(self, axis1, axis2):
        return ops.swapaxes(self, axis1=axis1, axis2=axis2)

    def repeat(self, repeats, axis=None):
        return ops.repeat(self, repeats=repeats, axis=axis)

    def take(self, indices, axis=None, out=None, mode="raise"):
        _no_out(self, "take", out)
        return ops.take(self, indices=indices, axis=axis, mode=mode)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return ops.diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        _no_out(self, "trace", out)
        _same_dtype(self, "trace", dtype)
        return ops.trace(self, offset=offset, axis1=axis1, axis2=axis2)

    def sort(self, axis=-1, kind=None, order=None):
        raise UnsupportedFunctionError(
            f"x.sort() sorts x in place, and a traced value ({traced_by(self)}) cannot change in place: "
            "write x = np.sort(x, axis) (or anp.sort), which returns the sorted value and is traced."
        )

    # indices have no derivative: these answer with plain integer arrays, as comparisons do
    def argsort(self, axis=-1, kind=None, order=None, **kwargs):
        return np.argsort(concrete(self), axis=axis, kind=kind, order=order, **kwargs)

    def argmax(self, axis=None, out=None, **kwargs):
        _no_out(self, "argmax", out)
        return _plain_index(np.argmax, self, axis=axis, **kwargs)

    def argmin(self, axis=None, out=None, **kwargs):
        _no_out(self, "argmin", out)
        return _plain_index(np.argmin, self, axis=axis, **kwargs)

    def nonzero(self):
        return np.nonzero(concrete(self))

    def dot(self, other):
        return bind(ops.dot, self, other)

    # --- NumPy's protocols ----------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            raise conversion_error(
                self,
                f"{ufunc_name(ufunc)}(..., out=z) (also what z += x and z *= x on a plain array z do)",
                "Write z = z + x: a new value, not a write into z. ",
            )
        if method == "__call__" and not kwargs:
            op = ops.registry().numpy_op(ufunc)
            if op is not None:
                return op(*inputs)
            if _is_predicate(ufunc):
                # predicates (greater, isfinite, logical_and, ...) have no derivative
                return ufunc(*(concrete(x) for x in inputs))
        if method in ("reduce", "accumulate", "outer"):
            result = _ufunc_method(ufunc, method, inputs, kwargs)
            if result is not NotImplemented:
                return result
        details = f" with {sorted(kwargs)}" if kwargs else ""
        raise _unsupported(f"{ufunc_name(ufunc)}{'' if method == '__call__' else '.' + method}{details}")

    def __array_function__(self, func, types, args, kwargs):
        if func in _INDEX_FUNCTIONS or (func is np.where and len(args) + len(kwargs) == 1):
            # an index (argsort, argmax, np.where(cond), ...) has no derivative: the plain answer
            return _plain_index(func, *args, **kwargs)
        op = ops.registry().numpy_op(func)
        if op is not None:
            inputs, params = _split_numpy_call(op, func, args, kwargs)
            # a variadic op's inputs as one list: else a first input that is a list (np.concatenate(
            # [[1.0], x])) would be taken for the list of inputs, and x for a param
            return op(list(inputs), **params) if op.variadic else op(*inputs, **params)
        function = ops.NUMPY_FUNCTIONS.get(func)
        if function is not None:
            return function(*args, **kwargs)
        if func in _SHAPE_FUNCTIONS:
            return func(*(stand_in(a) for a in args), **kwargs)
        if func in _LIKE_FUNCTIONS:
            return func(stand_in(args[0]), *args[1:], **kwargs)
        method = _METHOD_FUNCTIONS.get(func)
        if method is not None and isinstance(args[0], Tracer):
            return getattr(args[0], method)(*args[1:], **kwargs)
        raise _unsupported(f"{func.__module__}.{func.__name__}")


def _plain_index(func: Any, *args: Any, **kwargs: Any) -> Any:
    """func (an index function: argmax, ...) of the plain values; NumPy's ValueError (argmax of an
    empty array) as an InvalidValueError, still a ValueError, naming the function."""
    try:
        return func(*(concrete(a) for a in args), **{k: concrete(v) for k, v in kwargs.items()})
    except ValueError as e:
        shapes = [np.shape(concrete(a)) for a in args if isinstance(a, Tracer)]
        raise InvalidValueError(
            f"np.{func.__name__} of a traced value of shape {shapes[0] if shapes else '?'}: {e}; an empty "
            "array (or axis) has no such index: check its size first"
        ) from e


# NumPy functions whose answer is an index, with no derivative: on a traced value, the plain one.
_INDEX_FUNCTIONS = {
    np.argsort,
    np.argmax,
    np.argmin,
    np.nonzero,
    np.argwhere,
    np.flatnonzero,
    np.searchsorted,
}

# ufunc.reduce and ufunc.accumulate of these ufuncs are these reductions and cumulative ops
_UFUNC_REDUCTIONS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}
_UFUNC_ACCUMULATIONS = {np.add: "cumsum", np.multiply: "cumprod"}


def _is_predicate(ufunc: Any) -> bool:
    return all(t.endswith("?") for t in ufunc.types if "O" not in t)


def _ufunc_method(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """np.add.reduce(x) is sum(x, axis=0), np.add.accumulate cumsum, np.multiply.outer(a, b) is
    multiply(a[..., None, ...], b): the ops that stand for a ufunc's methods, or NotImplemented."""
    if method == "outer":
        op = ops.registry().numpy_op(ufunc)
        if kwargs or len(inputs) != 2 or not (_is_predicate(ufunc) or (op is not None and op.elementwise)):
            return NotImplemented
        a, b = inputs
        a_shape = np.shape(a) if not isinstance(a, Tracer) else a.shape
        b_ndim = np.ndim(b) if not isinstance(b, Tracer) else b.ndim
        spread = a_shape + (1,) * b_ndim
        if op is None:  # a comparison's outer: plain booleans
            return ufunc.outer(concrete(a), concrete(b))
        a = ops.reshape(a, shape=spread) if isinstance(a, Tracer) else np.reshape(a, spread)
        return op(a, b)
    table = _UFUNC_REDUCTIONS if method == "reduce" else _UFUNC_ACCUMULATIONS
    name = table.get(ufunc)
    if name is None or len(inputs) != 1:
        return NotImplemented
    allowed = {"axis", "keepdims", "dtype"} if method == "reduce" else {"axis", "dtype"}
    if not set(kwargs) <= allowed:
        return NotImplemented
    params = {"axis": kwargs.get("axis", 0)}  # a ufunc method's default axis is 0, not None
    if kwargs.get("keepdims"):
        params["keepdims"] = True
    if kwargs.get("dtype") is not None:
        if name in ("sum", "cumsum", "cumprod"):
            params["dtype"] = kwargs["dtype"]
        else:
            _same_dtype(inputs[0], f"{ufunc.__name__}.{method}", kwargs["dtype"])
    return getattr(ops, name)(inputs[0], **params)


def ufunc_name(ufunc: Any) -> str:
    """A ufunc by the module that exposes it: numpy.exp, scipy.special.erfc (a ufunc has no
    __module__, so its module is found by identity among NumPy's and the imported SciPy's)."""
    name = ufunc.__name__
    if getattr(np, name, None) is ufunc:
        return f"numpy.{name}"
    candidates = sorted(
        module
        for module in list(sys.modules)
        if module.split(".")[0] in ("scipy", "numpy")
        and not any(p.startswith("_") for p in module.split("."))
    )
    for module in sorted(candidates, key=lambda m: (m.count("."), m)):
        if getattr(sys.modules.get(module), name, None) is ufunc:
            return f"{module}.{name}"
    return f"the ufunc {name}"


def _given(**params: Any) -> dict:
    """The keyword params a method was given other than their NumPy defaults (None, where=True)."""
    return {k: v for k, v in params.items() if v is not None and not (k == "where" and v is True)}


def _no_out(tracer: Tracer, method: str, out: Any, more: dict | None = None) -> None:
    """A method's out= refused (a write into a plain array), and the NumPy keywords its op lacks
    (initial=, a reduction's where= on max, var's mean=, ...) refused by name."""
    if more:
        raise UnsupportedFunctionError(
            f"x.{method}(..., {', '.join(f'{k}=...' for k in sorted(more))}) on a traced value "
            f"({traced_by(tracer)}): adcore's {method} op does not take {sorted(more)}; leave them out "
            "(for initial=, combine the result with the initial value yourself)."
        )
    if out is not None:
        raise conversion_error(tracer, f"x.{method}(..., out=z)", f"Write z = x.{method}(...): a new value. ")


def _same_dtype(value: Any, what: str, dtype: Any) -> None:
    """A dtype= that adcore's op does not take: fine when it changes nothing, else refused."""
    if dtype is not None and np.dtype(dtype) != np.result_type(value):
        raise UnsupportedFunctionError(
            f"{what}(..., dtype={np.dtype(dtype)}) of a {np.result_type(value)} traced value: adcore's op has "
            "no dtype param. Leave dtype out; pass f's arguments in the dtype it should compute in, or "
            "cast with x.astype(float dtype) first."
        )


# NumPy functions that are a method of the traced value: np.ravel(x) is x.ravel().
_METHOD_FUNCTIONS = {np.ravel: "ravel", np.copy: "copy"}
if hasattr(np, "astype"):  # NumPy 2.1+
    _METHOD_FUNCTIONS[np.astype] = "astype"

# ndarray's methods a Tracer does not define, refused by name when called. Those
# that hand out plain data cut the derivative; those that write in place cannot apply to
# an immutable traced value; the rest (cumsum, var, argsort, ...) have no op.
_NDARRAY_METHODS = frozenset(
    name for name in dir(np.ndarray) if not name.startswith("_") and callable(getattr(np.ndarray, name))
)
_HANDS_OUT_DATA = {"tobytes", "tofile", "dump", "dumps", "view", "getfield"}
_WRITES_IN_PLACE = {"fill", "partition", "put", "resize", "setfield", "setflags", "byteswap"}


def _refusing(name: str) -> Any:
    """A Tracer method standing for ndarray's method `name`, which refuses by name when called."""

    def method(self: Tracer, *args: Any, **kwargs: Any) -> Any:
        if name in _HANDS_OUT_DATA:
            raise conversion_error(self, f"x.{name}()")
        if name in _WRITES_IN_PLACE:
            raise UnsupportedFunctionError(
                f"x.{name}() writes in place, and a traced value ({traced_by(self)}) cannot change in "
                "place: compute a new value with adcore.numpy functions instead."
            )
        raise _unsupported(f"the ndarray method x.{name}() on a traced value ({traced_by(self)})")

    method.__name__ = method.__qualname__ = name
    return method


# Real methods, not a __getattr__: a class with __getattr__ makes every attribute read
# slower, and the per-op hot path reads a tracer's attributes many times.
for _name in _NDARRAY_METHODS - set(dir(ArrayTracer)):
    setattr(ArrayTracer, _name, _refusing(_name))


def conversion_error(tracer: Tracer, what: str, instead: str = "") -> TracerConversionError:
    """The error for a conversion of `tracer` that would cut it from the derivative (for tracer
    subclasses' own conversions too, such as a reverse Tensor's .numpy())."""
    return TracerConversionError(
        f"{what} on a traced value ({traced_by(tracer)}) would give a plain number or array and silently "
        f"cut it out of the derivative. {instead}Compute with adcore.numpy functions (anp.exp, "
        "anp.sin, ...; anp.where to choose between values); if a cut is intended, "
        "adcore.ops.stop_gradient(x) keeps x traced with derivative 0, and adcore.concrete(x) is its "
        "plain value (for printing or logging)."
    )


def _scipy_caller() -> str:
    """What to say when a SciPy function (not a ufunc) converted a traced value: SciPy's functions
    call np.asarray on their inputs, which no tracer can intercept."""
    frame, name = sys._getframe(1), ""
    while frame is not None:  # the outermost SciPy frame: the function the user called
        module = frame.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            name = f"{module}.{frame.f_code.co_name}"
        frame = frame.f_back
    if not name:
        return ""
    return (
        f"SciPy's {name} converted it: SciPy's functions other than its ufuncs take plain arrays. Call "
        "them through the adcore-scipy plugin's modules, named as SciPy's (adcore_scipy.special, "
        "adcore_scipy.stats, adcore_scipy.linalg, adcore_scipy.signal, adcore_scipy.integrate). "
    )


def _unsupported(name: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        f"{name} has no adcore op, so it cannot be differentiated. Use an adcore.numpy "
        "function instead, or register an op for it: an OpSpec with numpy=(the function,) "
        "from a plugin's adcore_register_ops hook, and its rules from adcore_register_rules."
    )


@functools.cache
def _signature(func: Any) -> inspect.Signature:
    return inspect.signature(func)


@functools.cache
def _layout(func: Any) -> tuple[tuple[str, ...], int, frozenset, frozenset] | None:
    """NumPy's signature as (parameter names in order, how many may be positional, the
    positional-only ones, the required ones); None if it has *args or **kwargs."""
    parameters = list(_signature(func).parameters.values())
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds or inspect.Parameter.VAR_KEYWORD in kinds:
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return (
        tuple(p.name for p in parameters),
        sum(kind in positional for kind in kinds),
        frozenset(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY),
        frozenset(p.name for p in parameters if p.default is inspect.Parameter.empty),
    )


def _bound_arguments(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call by parameter name, in the signature's order, as
    `inspect.Signature.bind` gives them; a well-formed call skips bind's cost (per-op hot path)."""
    layout = _layout(func)
    if layout is not None:
        names, npositional, positional_only, required = layout
        if len(args) <= npositional:
            arguments = dict(zip(names, args))
            if kwargs:
                if not all(k in names and k not in arguments and k not in positional_only for k in kwargs):
                    return dict(_signature(func).bind(*args, **kwargs).arguments)  # it raises
                arguments.update(kwargs)
                arguments = {name: arguments[name] for name in names if name in arguments}
            if required.issubset(arguments):
                return arguments
    return dict(_signature(func).bind(*args, **kwargs).arguments)


def _split_numpy_call(op: Any, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Sort a NumPy-style call into the op's inputs and its static params, by NumPy's signature."""
    arguments = _bound_arguments(func, args, kwargs)
    names = list(arguments)
    if op.variadic:
        inputs = tuple(arguments[names[0]])
        rest = names[1:]
    else:
        inputs = tuple(arguments[n] for n in names[: op.nin])
        rest = names[op.nin :]
    params = {}
    for name in rest:
        # a **kwargs of NumPy's signature (np.einsum's) holds keywords by their own names
        var_keyword = _signature(func).parameters[name].kind is inspect.Parameter.VAR_KEYWORD
        for key, value in arguments[name].items() if var_keyword else [(name, arguments[name])]:
            if key not in op.params:
                raise UnsupportedFunctionError(
                    f"numpy.{func.__name__}(..., {key}=...) is not supported by adcore op "
                    f"{op.name!r}, whose params are {list(op.params)}; leave {key!r} out."
                )
            params[key] = value
    return inputs, params
