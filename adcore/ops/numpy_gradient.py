"""np.gradient on a traced f (its spacings constant): NumPy's central differences in the interior and
one-sided ones of edge_order at the ends, in NumPy's order of operations, so the value is NumPy's bit
for bit and the derivative is the composition's. `NUMPY_FUNCTIONS` maps np.gradient to it."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidValueError
from adcore.ops.numpy_functions import along, as_array, cast, refuse_traced, typed_errors
from adcore.ops.shapes import concatenate, getitem


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """np.gradient of a traced f (the spacing constant): NumPy's central differences inside and
    one-sided ones at the edges, in NumPy's arithmetic, the pieces joined along each axis."""
    refuse_traced("gradient", varargs=varargs)
    f = as_array(f)
    ndim = np.ndim(f)
    axes = tuple(range(ndim)) if axis is None else tuple(np.lib.array_utils.normalize_axis_tuple(axis, ndim))
    spacings = _spacings(varargs, axes, np.shape(f))
    if edge_order > 2:
        raise InvalidValueError("numpy.gradient: 'edge_order' greater than 2 not supported")
    otype = np.result_type(f)
    if otype.kind not in "fc":
        f, otype = cast(f, np.dtype(np.float64)), np.dtype(np.float64)
    out = []
    for ax, dx in zip(axes, spacings):
        if np.shape(f)[ax] < edge_order + 1:
            raise InvalidValueError(
                "numpy.gradient: shape of array too small to calculate a numerical gradient, at least "
                "(edge_order + 1) elements are required"
            )
        pieces = [
            _gradient_first(f, ax, dx, edge_order),
            _gradient_interior(f, ax, dx),
            _gradient_last(f, ax, dx, edge_order),
        ]
        out.append(concatenate([cast(p, otype) for p in pieces], axis=ax))
    return out[0] if len(axes) == 1 else tuple(out)


def _spacings(varargs: tuple, axes: tuple, shape: tuple) -> list:
    """np.gradient's spacing per axis: a scalar, or the differences of 1-d coordinates (a scalar
    again when they are all equal)."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise InvalidValueError("numpy.gradient: invalid number of arguments (one spacing per axis, or one)")
    out = []
    for ax, given in zip(axes, varargs):
        distances = np.asanyarray(given)
        if distances.ndim == 0:
            out.append(given)  # as NumPy keeps it: a Python float stays weak (f32 arithmetic in f32)
            continue
        if distances.ndim != 1:
            raise InvalidValueError("numpy.gradient: distances must be either scalars or 1d")
        if len(distances) != shape[ax]:
            raise InvalidValueError(
                "numpy.gradient: when 1d, distances must match the length of the corresponding dimension"
            )
        if np.issubdtype(distances.dtype, np.integer):
            distances = distances.astype(np.float64)
        diffx = np.diff(distances)
        out.append(diffx[0] if (diffx == diffx[0]).all() else diffx)
    return out


def _at(f: Any, ax: int, start: int, stop: int | None) -> Any:
    return (
        getitem(f, index=along(ax, np.ndim(f), slice(start, stop)))
        if isinstance(f, Tracer)
        else f[along(ax, np.ndim(f), slice(start, stop))]
    )


def _shaped_along(coefficients: np.ndarray, ax: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[ax] = -1
    return coefficients.reshape(shape)


def _gradient_interior(f: Any, ax: int, dx: Any) -> Any:
    if np.ndim(dx) == 0:
        return (_at(f, ax, 2, None) - _at(f, ax, None, -2)) / (2.0 * dx)
    dx1, dx2 = dx[0:-1], dx[1:]
    a = _shaped_along(-(dx2) / (dx1 * (dx1 + dx2)), ax, np.ndim(f))
    b = _shaped_along((dx2 - dx1) / (dx1 * dx2), ax, np.ndim(f))
    c = _shaped_along(dx1 / (dx2 * (dx1 + dx2)), ax, np.ndim(f))
    return a * _at(f, ax, None, -2) + b * _at(f, ax, 1, -1) + c * _at(f, ax, 2, None)


def _gradient_first(f: Any, ax: int, dx: Any, edge_order: int) -> Any:
    uniform = np.ndim(dx) == 0
    if edge_order == 1:
        return (_at(f, ax, 1, 2) - _at(f, ax, 0, 1)) / (dx if uniform else dx[0])
    if uniform:
        a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
    else:
        dx1, dx2 = dx[0], dx[1]
        a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
        b = (dx1 + dx2) / (dx1 * dx2)
        c = -dx1 / (dx2 * (dx1 + dx2))
    return a * _at(f, ax, 0, 1) + b * _at(f, ax, 1, 2) + c * _at(f, ax, 2, 3)


def _gradient_last(f: Any, ax: int, dx: Any, edge_order: int) -> Any:
    uniform = np.ndim(dx) == 0
    n = np.shape(f)[ax]
    if edge_order == 1:
        return (_at(f, ax, n - 1, n) - _at(f, ax, n - 2, n - 1)) / (dx if uniform else dx[-1])
    if uniform:
        a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
    else:
        dx1, dx2 = dx[-2], dx[-1]
        a = (dx2) / (dx1 * (dx1 + dx2))
        b = -(dx2 + dx1) / (dx1 * dx2)
        c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
    return a * _at(f, ax, n - 3, n - 2) + b * _at(f, ax, n - 2, n - 1) + c * _at(f, ax, n - 1, n)


gradient = typed_errors(gradient)
NUMPY_FUNCTIONS = {np.gradient: gradient}
