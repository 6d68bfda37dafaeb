"""The NumPy surface of a traced value: `ArrayTracer`, the base of every backend's tracer.

Operators, ndarray's methods and properties, `__array_ufunc__`/`__array_function__` (answered by
`adcore.numpy_dispatch`), and the typed refusals of what would cut a derivative (float(x),
np.asarray(x), in-place writes). It sits above the ops it binds, as autograd's numpy_boxes.py
above tracer.py; the tracing machinery itself is `adcore.core`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, bind, concrete, holds_tracer, traced_by
from adcore.errors import (
    ComplexValueError,
    UnsupportedFunctionError,
)
from adcore.numpy_dispatch import (
    NDARRAY_METHODS,
    conversion_error,
    function_call,
    plain_index,
    refusing,
    same_dtype,
    scipy_caller,
    ufunc_call,
    ufunc_name,
)

# --- the traced value ----------------------------------------------------------------------


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
            scipy_caller()
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
        same_dtype(self, "prod", dtype)
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
        same_dtype(self, "var", dtype)
        return ops.var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **more):
        _no_out(self, "std", out, more)
        same_dtype(self, "std", dtype)
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
        same_dtype(self, "trace", dtype)
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
        return plain_index(np.argmax, self, axis=axis, **kwargs)

    def argmin(self, axis=None, out=None, **kwargs):
        _no_out(self, "argmin", out)
        return plain_index(np.argmin, self, axis=axis, **kwargs)

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
        return ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return function_call(func, args, kwargs)


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


# Real methods, not a __getattr__: a class with __getattr__ makes every attribute read
# slower, and the per-op hot path reads a tracer's attributes many times.
for _name in NDARRAY_METHODS - set(dir(ArrayTracer)):
    setattr(ArrayTracer, _name, refusing(_name))
