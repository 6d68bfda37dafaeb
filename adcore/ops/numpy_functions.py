"""NumPy functions that autograd users write, as Python over ops: np.trapezoid, np.interp,
np.linspace, np.partition, np.unwrap, np.full/full_like (anp only: np.full converts
its fill value before any dispatch), and the predicates isclose/allclose/iscomplex/isreal and
real_if_close. Each repeats NumPy's own arithmetic in NumPy's order, so a traced call's value is
NumPy's bit for bit, and its derivative is the composition's, on every backend with no rule of its
own. Where NumPy picks among elements by value (interp's interval, partition's arrangement,
unwrap's multiples of the period), the choice is read from the concrete value, as a comparison is;
a backend with no number (symbolic) refuses it by name. `NUMPY_FUNCTIONS` maps the NumPy
function to each, so np.interp(x, xp, fp) on a traced x runs it; `adcore.numpy` offers the same
names."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.core import Tracer, concrete, plain_numbers, stand_in
from adcore.errors import AdcoreError, ComplexValueError, InvalidValueError, UnsupportedFunctionError
from adcore.ops.complex_parts import real
from adcore.ops.composite_shapes import array as _array
from adcore.ops.elementwise import where
from adcore.ops.rearrangements import moveaxis, take, take_along_axis
from adcore.ops.shapes import broadcast_to, concatenate, getitem, reshape


def as_array(value: Any) -> Any:
    """A tracer as it is, a list holding tracers stacked (anp.array), anything else np.asarray."""
    if isinstance(value, Tracer):
        return value
    if isinstance(value, (list, tuple)):
        return _array(value)
    return np.asarray(value)


def cast(value: Any, dtype: np.dtype) -> Any:
    if np.result_type(value) == dtype:
        return value
    return value.astype(dtype) if isinstance(value, Tracer) else np.asarray(value, dtype=dtype)


def refuse_traced(function: str, **arguments: Any) -> None:
    for name, value in arguments.items():
        if isinstance(value, Tracer) or (
            isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) for v in value)
        ):
            raise UnsupportedFunctionError(
                f"numpy.{function}: {name} is a traced value, but adcore differentiates {function} only "
                f"with {name} constant; pass adcore.concrete({name}) (its derivative is then not taken), "
                f"or write the formula with adcore.numpy ops"
            )


def along(axis: int, ndim: int, index: Any) -> tuple:
    """An index picking `index` (a slice) along `axis` and everything along the other axes."""
    return (slice(None),) * (axis % ndim) + (index,)


# --- np.trapezoid ------------------------------------------------------------------------------


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """np.trapezoid: NumPy's sum of d * (y[1:] + y[:-1]) / 2.0, differentiable in y, x and dx."""
    y = as_array(y)
    if x is None:
        d = dx
    else:
        x = as_array(x)
        if np.ndim(x) == 1:
            d = np.diff(x)
            shape = [1] * np.ndim(y)
            shape[axis] = np.shape(d)[0]
            d = d.reshape(shape)
        else:
            d = np.diff(x, axis=axis)
    nd = np.ndim(y)
    upper, lower = along(axis, nd, slice(1, None)), along(axis, nd, slice(None, -1))
    return (d * (y[upper] + y[lower]) / 2.0).sum(axis)


# --- np.interp ---------------------------------------------------------------------------------


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """np.interp, differentiable in x, xp, fp, left and right: NumPy's slope*(x - xp[j]) + fp[j] on
    the interval j that holds x (found from the concrete values, as NumPy's binary search does)."""
    refuse_traced("interp", period=period)
    fp = as_array(fp)
    if np.result_type(fp).kind == "c":
        raise ComplexValueError(
            "numpy.interp with a complex fp on traced values is not supported: interpolate the real "
            "and imaginary parts separately (np.interp(x, xp, fp.real) and np.interp(x, xp, fp.imag))"
        )
    x, xp, fp = (cast(as_array(v), np.dtype(np.float64)) for v in (x, xp, fp))  # NumPy computes in float64
    if np.ndim(xp) != 1 or np.ndim(fp) != 1:
        raise InvalidValueError("numpy.interp: xp and fp (the data points) must be 1-D sequences")
    if np.shape(xp)[0] != np.shape(fp)[0]:
        raise InvalidValueError("numpy.interp: fp and xp are not of the same length")
    if np.shape(xp)[0] == 0:
        raise InvalidValueError("numpy.interp: array of sample points is empty")
    if period is not None:
        x, xp, fp = _periodic(x, xp, fp, period)
        left = right = None
    left = fp[0] if left is None else left
    right = fp[-1] if right is None else right
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # NumPy's C loop warns of none
        return _interpolated(x, xp, fp, left, right)


def _periodic(x: Any, xp: Any, fp: Any, period: Any) -> tuple:
    """np.interp's normalisation for period=: x and xp modulo the period, xp sorted and extended
    by one point on each side."""
    if period == 0:
        raise InvalidValueError("numpy.interp: period must be a non-zero value")
    period = abs(period)
    x, xp = x % period, xp % period
    order = np.argsort(concrete(xp))
    xp, fp = xp[order], fp[order]
    xp = concatenate([xp[-1:] - period, xp, xp[0:1] + period], axis=0)
    fp = concatenate([fp[-1:], fp, fp[0:1]], axis=0)
    return x, xp, fp


def _interpolated(x: Any, xp: Any, fp: Any, left: Any, right: Any) -> Any:
    """NumPy's compiled interp (numpy/_core/src/multiarray/compiled_base.c), case by case: nan x is
    itself, left of xp[0] `left`, right of xp[-1] `right`, on a data point that point's fp, else the
    line through the interval's ends (from its other end if that gives nan, fp[j] if flat)."""
    xc, xpc = concrete(x), concrete(xp)
    n = xpc.shape[0]
    if n == 1:
        return where(xc < xpc[0], left, where(xc > xpc[0], right, fp[0]))  # NumPy's one-point case
    j = np.searchsorted(xpc, xc, side="right") - 1  # xp[j] <= x < xp[j + 1]
    lo = np.clip(j, 0, n - 2)
    x0, x1, y0, y1 = (
        take(xp, indices=lo),
        take(xp, indices=lo + 1),
        take(fp, indices=lo),
        take(fp, indices=lo + 1),
    )
    on_point = (j >= 0) & (xpc[np.clip(j, 0, n - 1)] == xc)
    inside = (j >= 0) & (j < n - 1) & ~on_point & ~np.isnan(xc)
    # the interval's width where the line is used, 1 elsewhere: a zero width (repeated xp) in an
    # unused place would send 0/0 into the derivative
    width = where(inside, x1 - x0, 1.0)
    slope = (y1 - y0) / width
    line = slope * (x - x0) + y0
    line_c = concrete(line)
    if np.any(np.isnan(line_c) & inside):  # NumPy's retry from the interval's other end
        line = where(np.isnan(line_c), slope * (x - x1) + y1, line)
        flat = np.isnan(concrete(line)) & (concrete(y0) == concrete(y1))
        line = where(flat, y0, line)
    out = where(on_point, take(fp, indices=np.clip(j, 0, n - 1)), line)
    out = where(xc > xpc[-1], right, out)
    out = where(xc < xpc[0], left, out)
    return where(np.isnan(xc), x, out)


# --- np.linspace -------------------------------------------------------------------------------


def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Any:
    """np.linspace with traced endpoints: NumPy's arange(num) * step + start, the last row stop."""
    num = operator.index(num)
    if num < 0:
        raise InvalidValueError(f"numpy.linspace: number of samples, {num}, must be non-negative")
    start, stop = as_array(start), as_array(stop)
    dt = np.result_type(stand_in(start), stand_in(stop), 1.0)  # NumPy's ensure_inexact
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise UnsupportedFunctionError(
            f"numpy.linspace(..., dtype={np.dtype(dtype)}) with traced endpoints: an integer result has no "
            "derivative; leave dtype out (or a float dtype), or pass adcore.concrete(start/stop)"
        )
    start, stop = cast(start, dt), cast(stop, dt)
    delta = stop - start
    div = (num - 1) if endpoint else num
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        if _any_zero(step):  # NumPy's care for denormal steps (gh-5437)
            y = y / div * delta
        else:
            y = y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        last = reshape(broadcast_to(stop, shape=np.shape(y)[1:]), shape=(1,) + np.shape(y)[1:])
        y = concatenate([y[:-1], last], axis=0)
    if axis != 0:
        y = moveaxis(y, source=0, destination=axis)
    if dtype is not None:
        y = cast(y, np.dtype(dtype))
    return (y, step) if retstep else y


def _any_zero(step: Any) -> bool:
    """Whether a step is zero; a tracer with no number yet (symbolic) has a nonzero one, whose
    derivative is the same formula's."""
    try:
        # every example's at once under vmap (bool() of a batch raises BatchedConversionError, an
        # AdcoreError, which this would take for "no number": y * step where the loop's is y * 0)
        return bool(np.any(plain_numbers(step) == 0))
    except AdcoreError:  # symbolic and sparsity tracers refuse to give a number
        return False


# --- np.partition and np.unwrap ----------------------------------------------------------------


def partition(a: Any, kth: Any, axis: int | None = -1, kind: str = "introselect", order: Any = None) -> Any:
    """np.partition: a's elements in NumPy's own arrangement (a take_along_axis, so each element's
    derivative goes to where it came from)."""
    if order is not None:
        raise UnsupportedFunctionError(
            "numpy.partition(..., order=) sorts structured arrays; a traced value has no fields"
        )
    a = as_array(a)
    if axis is None:
        a, axis = reshape(a, shape=(-1,)), -1
    c = concrete(a)
    expected = np.partition(c, kth, axis=axis, kind=kind)
    indices = np.argpartition(c, kth, axis=axis, kind=kind)
    if np.take_along_axis(c, indices, axis=axis).tobytes() != expected.tobytes():
        indices = _matching(c, expected, axis)  # argpartition arranged ties another way
    return take_along_axis(a, indices=indices, axis=axis)


def _matching(c: np.ndarray, arranged: np.ndarray, axis: int) -> np.ndarray:
    """Indices into c giving `arranged` (a permutation of c along axis): the k-th smallest of c
    goes where the k-th smallest of arranged is."""
    source = np.argsort(c, axis=axis, kind="stable")
    target = np.argsort(arranged, axis=axis, kind="stable")
    indices = np.empty_like(source)
    np.put_along_axis(indices, target, source, axis=axis)
    return indices


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Any:
    """np.unwrap: p plus NumPy's multiples of the period (read from p's concrete value, constant
    where they do not jump), so its derivative is the identity."""
    refuse_traced("unwrap", discont=discont, period=period)
    p = as_array(p)
    nd = np.ndim(p)
    c = concrete(p)
    dd = np.diff(c, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dd, period)
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        np.copyto(ddmod, interval_high, where=(ddmod == interval_low) & (dd > 0))
    ph_correct = ddmod - dd
    np.copyto(ph_correct, 0, where=abs(dd) < discont)
    rest = getitem(p, index=along(axis, nd, slice(1, None))) + ph_correct.cumsum(axis)
    first = getitem(p, index=along(axis, nd, slice(0, 1)))
    return concatenate([cast(first, dtype), cast(rest, dtype)], axis=axis)


# --- predicates and real_if_close: plain answers from concrete values, as comparisons ----------


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    """np.isclose on traced values: plain booleans from their concrete values (no derivative)."""
    return np.isclose(concrete(a), concrete(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """np.allclose on traced values: a plain bool from their concrete values."""
    return np.allclose(concrete(a), concrete(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def iscomplex(x: Any) -> Any:
    """np.iscomplex on a traced value: plain booleans, whether each imaginary part is nonzero."""
    return np.iscomplex(concrete(x))


def isreal(x: Any) -> Any:
    """np.isreal on a traced value: plain booleans, whether each imaginary part is zero."""
    return np.isreal(concrete(x))


def real_if_close(a: Any, tol: float = 100) -> Any:
    """np.real_if_close on a traced value: its real part (op `real`) when NumPy's would drop the
    imaginary part, else the value itself."""
    if np.result_type(a).kind != "c":
        return a
    return real(a) if np.real_if_close(concrete(a), tol=tol).dtype.kind != "c" else a


# --- anp.full, anp.full_like; np.copyto refused ------------------------------------------------


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kwargs: Any) -> Any:
    """np.full with a traced fill value: the value broadcast to shape (np.full itself converts its
    fill value before any dispatch, so call anp.full)."""
    if not isinstance(fill_value, Tracer) and not _holds_tracer(fill_value):
        return np.full(shape, fill_value, dtype=dtype, order=order, **kwargs)
    value = as_array(fill_value)
    if dtype is not None:
        value = value.astype(dtype)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return broadcast_to(value, shape=shape)


def full_like(
    a: Any,
    fill_value: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    **kwargs: Any,
) -> Any:
    """np.full_like with a traced fill value: anp.full of a's shape and dtype."""
    if not isinstance(fill_value, Tracer) and not _holds_tracer(fill_value):
        return np.full_like(
            stand_in(a), fill_value, dtype=dtype, order=order, subok=subok, shape=shape, **kwargs
        )
    dtype = np.result_type(stand_in(a)) if dtype is None else dtype
    return full(np.shape(stand_in(a)) if shape is None else shape, fill_value, dtype=dtype)


def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """np.copyto of a traced value (np.full, np.full_like call it): refused, naming anp.full."""
    raise UnsupportedFunctionError(
        "numpy.copyto(dst, x) of a traced x writes it into a plain array (np.full, np.full_like and "
        "np.copyto do), which cuts it from the derivative: write anp.full(shape, x) or "
        "anp.full_like(a, x) (a new traced value), or anp.where(mask, x, dst) for copyto's where="
    )


def _holds_tracer(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) or _holds_tracer(v) for v in value)


def typed_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """function, with NumPy's own ValueError on bad arguments (kth or axis out of range, shapes
    that do not broadcast) raised as an InvalidValueError naming the NumPy function."""

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ValueError as e:
            if isinstance(e, AdcoreError):
                raise
            raise InvalidValueError(f"numpy.{function.__name__} on traced values: {e}") from e

    return checked


for _name in ("trapezoid", "interp", "linspace", "partition", "unwrap", "full", "full_like"):
    globals()[_name] = typed_errors(globals()[_name])

NUMPY_FUNCTIONS = {
    np.trapezoid: trapezoid,
    np.interp: interp,
    np.linspace: linspace,
    np.partition: partition,
    np.unwrap: unwrap,
    np.isclose: isclose,
    np.allclose: allclose,
    np.iscomplex: iscomplex,
    np.isreal: isreal,
    np.real_if_close: real_if_close,
    np.full_like: full_like,
    np.copyto: copyto,
}
