"""NumPy's shape functions that are Python over the shape ops rather than ops of their own: the
split family (a list of getitem results, one op per piece), the stack family (atleast_* and
concatenate), atleast_* of several arrays, np.pad's keywords and np.select (where, in turn).
Each takes NumPy's arguments; `NUMPY_FUNCTIONS` maps the NumPy function to it, so
np.split(x, 3) on a traced x runs it, and `adcore.numpy` offers the same names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import core
from adcore.errors import InvalidValueError, UnsupportedFunctionError
from adcore.ops.elementwise import where
from adcore.ops.rearrangements import atleast_1d as _atleast_1d
from adcore.ops.rearrangements import atleast_2d as _atleast_2d
from adcore.ops.rearrangements import atleast_3d as _atleast_3d
from adcore.ops.rearrangements import pad as _pad
from adcore.ops.shapes import concatenate, getitem, reshape, stack

# --- the split family ------------------------------------------------------------------------


def _split(name: str, ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list:
    ndim = np.ndim(ary)
    if ndim == 0:
        raise InvalidValueError(f"numpy.{name}: a 0-d array cannot be split")
    if not -ndim <= axis < ndim:
        raise InvalidValueError(f"numpy.{name}: axis={axis} is out of bounds for a {ndim}-d array")
    axis %= ndim
    n = np.shape(ary)[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise InvalidValueError(f"numpy.{name}: the number of sections must be positive, got {sections}")
        if equal and n % sections:
            raise InvalidValueError(
                f"numpy.{name}: an axis of length {n} does not split into {sections} equal parts "
                "(numpy.array_split allows unequal parts)"
            )
        each, extra = divmod(n, sections)
        bounds = np.cumsum([0] + [each + 1] * extra + [each] * (sections - extra)).tolist()
    else:
        bounds = [0, *(int(i) for i in indices_or_sections), n]
    before = (slice(None),) * axis
    return [
        getitem(ary, index=before + (slice(start, stop),)) for start, stop in zip(bounds[:-1], bounds[1:])
    ]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """np.split: equal sections, or pieces between the given indices."""
    return _split("split", ary, indices_or_sections, axis, equal=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """np.array_split: as split, the first len % sections pieces one longer."""
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """np.hsplit: split along axis 1 (axis 0 of a 1-d array)."""
    if np.ndim(ary) == 0:
        raise InvalidValueError("numpy.hsplit only works on arrays of 1 or more dimensions")
    return _split("hsplit", ary, indices_or_sections, 1 if np.ndim(ary) > 1 else 0, equal=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """np.vsplit: split along axis 0 of an array of 2 or more dimensions."""
    if np.ndim(ary) < 2:
        raise InvalidValueError("numpy.vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", ary, indices_or_sections, 0, equal=True)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """np.dsplit: split along axis 2 of an array of 3 or more dimensions."""
    if np.ndim(ary) < 3:
        raise InvalidValueError("numpy.dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", ary, indices_or_sections, 2, equal=True)


# --- atleast_* and the stack family ------------------------------------------------------------


def _at_least(op: Any) -> Callable[..., Any]:
    def at_least(*arys: Any) -> Any:
        out = tuple(op(a) for a in arys)
        return out[0] if len(out) == 1 else out  # NumPy 2: a tuple for several arrays

    at_least.__name__ = at_least.__qualname__ = op.name
    at_least.__doc__ = f"np.{op.name}: the op for one array, a tuple of them for several."
    return at_least


atleast_1d = _at_least(_atleast_1d)
atleast_2d = _at_least(_atleast_2d)
atleast_3d = _at_least(_atleast_3d)


def _arrays(name: str, tup: Sequence[Any], dtype: Any, casting: str = "same_kind") -> list:
    if dtype is not None or casting != "same_kind":
        raise UnsupportedFunctionError(
            f"numpy.{name}(..., dtype=, casting=) on traced values: leave them out and cast the "
            "result with .astype (a float dtype)"
        )
    if isinstance(tup, core.Tracer):  # NumPy iterates over an array: its rows, one getitem each
        if tup.ndim == 0:
            raise InvalidValueError(f"numpy.{name}: a 0-d array is not a sequence of arrays")
        return [getitem(tup, index=i) for i in range(tup.shape[0])]
    if not isinstance(tup, Sequence):
        raise UnsupportedFunctionError(f"numpy.{name} takes a sequence of arrays (a list or tuple)")
    return list(tup)


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """np.hstack: concatenate along axis 1 (axis 0 for 1-d arrays)."""
    arrays = [_atleast_1d(a) for a in _arrays("hstack", tup, dtype, casting)]
    return concatenate(arrays, axis=0 if arrays and np.ndim(arrays[0]) == 1 else 1)


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """np.vstack: concatenate along axis 0, 1-d arrays as rows."""
    return concatenate([_atleast_2d(a) for a in _arrays("vstack", tup, dtype, casting)], axis=0)


def dstack(tup: Sequence[Any]) -> Any:
    """np.dstack: concatenate along axis 2, after atleast_3d."""
    return concatenate([_atleast_3d(a) for a in _arrays("dstack", tup, None)], axis=2)


def column_stack(tup: Sequence[Any]) -> Any:
    """np.column_stack: 1-d arrays as columns, then concatenate along axis 1."""
    columns = [reshape(a, shape=(-1, 1)) if np.ndim(a) < 2 else a for a in _arrays("column_stack", tup, None)]
    return concatenate(columns, axis=1)


# --- np.pad's keywords, np.select ------------------------------------------------------------


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """np.pad: modes constant, edge, reflect, symmetric and wrap (the op `pad`)."""
    unknown = sorted(set(kwargs) - {"constant_values", "reflect_type"})
    if unknown:
        raise UnsupportedFunctionError(
            f"op 'pad' (mode={mode!r}) does not take {unknown}: its params are constant_values "
            "(mode 'constant') and reflect_type (modes 'reflect', 'symmetric')"
        )
    if _has_tracer(kwargs.get("constant_values")):
        raise UnsupportedFunctionError(
            "op 'pad': constant_values is a traced value, but pad's constants have no derivative; "
            "pad with 0 and add anp.pad(anp.zeros_like(x), pad_width, constant_values=1) * c"
        )
    return _pad(array, pad_width=pad_width, mode=mode, **kwargs)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """np.select: where the first true condition picks its choice, else default. The conditions
    are constants (boolean arrays); the choices and default carry the derivative, through where."""
    if len(condlist) != len(choicelist):
        raise InvalidValueError(
            f"numpy.select: condlist has {len(condlist)} entries and choicelist {len(choicelist)}; "
            "they must have the same length"
        )
    if not len(condlist):
        raise InvalidValueError("numpy.select: an empty condition list selects nothing")
    for i, cond in enumerate(condlist):
        dtype = cond.dtype if isinstance(cond, core.Tracer) else np.asarray(cond).dtype
        if dtype.kind != "b":  # a symbolic comparison is a traced boolean
            raise InvalidValueError(
                f"numpy.select: condlist[{i}] must be a boolean array (a comparison such as x > 0), got {dtype}"
            )
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return out


# --- append, delete and the *_indices_from helpers --------------------------------------------


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """np.append: concatenate, both raveled when axis is None."""
    if axis is None:
        return concatenate([_raveled(arr), _raveled(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def delete(arr: Any, obj: Any, axis: int | None = None) -> Any:
    """np.delete: the elements (or slices along axis) not named by obj, a getitem with a mask."""
    if axis is None:
        arr, axis = _raveled(arr), 0
    if isinstance(obj, core.Tracer):
        raise UnsupportedFunctionError("numpy.delete: obj (the indices) must be constant, not a traced value")
    keep = np.ones(np.shape(arr)[axis], dtype=bool)
    keep[obj] = False
    return getitem(arr, index=(slice(None),) * (axis % np.ndim(arr)) + (keep,))


def _raveled(value: Any) -> Any:
    if _has_tracer(value):
        return reshape(_stacked(value), shape=(-1,))
    return np.ravel(value)


def _shaped(arr: Any) -> np.ndarray:
    """A stand-in with arr's shape for functions that only read it (tril_indices_from, ...)."""
    return np.broadcast_to(np.empty((), dtype=np.result_type(arr.dtype)), np.shape(arr))


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    return np.tril_indices_from(_shaped(arr), k)


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    return np.triu_indices_from(_shaped(arr), k)


def diag_indices_from(arr: Any) -> tuple:
    return np.diag_indices_from(_shaped(arr))


# --- arrays built from traced values: anp.array, anp.asarray, anp.r_, anp.c_, anp.astype ----------
# np.array([a, b]), np.r_[a, b] and np.c_[a, b] cannot be intercepted (NumPy converts each element
# with __array__, which refuses a traced one by naming these); adcore.numpy offers them instead.


def array(
    object: Any,
    dtype: Any = None,
    *,
    copy: bool = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
) -> Any:
    """np.array; nested lists and tuples holding traced values are stacked (constants may mix in)."""
    if not _has_tracer(object):
        return np.array(object, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
    out = _stacked(object)
    if dtype is not None:
        out = astype(out, dtype)
    missing = ndmin - np.ndim(out)
    return reshape(out, shape=(1,) * missing + np.shape(out)) if missing > 0 else out


def asarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    """np.asarray: a traced value as it is (cast to a float dtype if asked), lists of them stacked."""
    if not _has_tracer(a):
        return np.asarray(a, dtype=dtype, order=order, **kwargs)
    return array(a, dtype=dtype)


def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
    """np.astype: the op `astype` on a traced value (float dtypes; others are refused)."""
    if isinstance(x, core.Tracer):
        return x.astype(dtype)
    return np.asarray(x).astype(dtype, copy=copy)


def _stacked(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return stack([_stacked(v) for v in value], axis=0)
    return value if isinstance(value, core.Tracer) else np.asarray(value)


class _ConcatenateIndex:
    """anp.r_ and anp.c_: NumPy's r_ and c_ for traced values (slices become constant ranges);
    without a traced value, NumPy's own."""

    def __init__(self, name: str, columns: bool) -> None:
        self._name = name
        self._columns = columns
        self._numpy = getattr(np, name)

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not any(_has_tracer(item) for item in items):
            return self._numpy[key]
        if any(isinstance(item, str) for item in items):
            raise UnsupportedFunctionError(
                f"anp.{self._name} with a directive string on traced values: write the "
                "concatenate (np.concatenate, np.stack, np.hstack, ...) it stands for"
            )
        parts = [np.r_[item] if isinstance(item, slice) else _stacked(item) for item in items]
        if self._columns:  # np.c_: 1-d (and 0-d) parts become columns, joined along the last axis
            return concatenate([reshape(p, shape=(-1, 1)) if np.ndim(p) < 2 else p for p in parts], axis=-1)
        return concatenate([_atleast_1d(p) for p in parts], axis=0)

    def __len__(self) -> int:
        return 0


r_ = _ConcatenateIndex("r_", columns=False)
c_ = _ConcatenateIndex("c_", columns=True)


def _has_tracer(value: Any) -> bool:
    if isinstance(value, core.Tracer):
        return True
    return isinstance(value, (list, tuple)) and any(_has_tracer(v) for v in value)


NUMPY_FUNCTIONS = {
    np.split: split,
    np.array_split: array_split,
    np.hsplit: hsplit,
    np.vsplit: vsplit,
    np.dsplit: dsplit,
    np.atleast_1d: atleast_1d,
    np.atleast_2d: atleast_2d,
    np.atleast_3d: atleast_3d,
    np.hstack: hstack,
    np.vstack: vstack,
    np.dstack: dstack,
    np.column_stack: column_stack,
    np.pad: pad,
    np.select: select,
    np.append: append,
    np.delete: delete,
    np.tril_indices_from: tril_indices_from,
    np.triu_indices_from: triu_indices_from,
    np.diag_indices_from: diag_indices_from,
}
