"""np.linalg.norm as one op: vector ords and 'fro', 'nuc', ±1, ±2, ±inf over one or two axes, its samples
and how far an input is from its kinks (zeros, ties, repeated singular values)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.ops.decompositions import is_complex, singular_distance, with_singular_values
from adcore.spec import Domain, Kink, OpSpec, Sample

_VECTOR_ORDS = (None, 1, 2, np.inf, -np.inf, 0)
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def norm_axes(x: Any, ord: Any, axis: Any) -> tuple[tuple[int, ...], bool]:
    """The axes `norm` reduces (non-negative) and whether it is a matrix norm over two of them."""
    ndim = len(x.shape)
    if axis is None:
        if ord is None:
            return tuple(range(ndim)), False  # the 2-norm of all entries, any ndim
        if ndim not in (1, 2):
            raise InvalidValueError(f"op 'norm': ord={ord!r} needs axis for an input of {ndim} axes")
        axes = tuple(range(ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if len(axes) not in (1, 2) or any(not -ndim <= a < ndim for a in axes):
            raise InvalidValueError(f"op 'norm': axis {axis!r} does not name 1 or 2 axes of shape {x.shape}")
        axes = tuple(int(a) % ndim for a in axes)
        if len(set(axes)) != len(axes):
            raise InvalidValueError(f"op 'norm': axis {axis!r} names the same axis twice")
    matrix = len(axes) == 2
    if matrix and ord not in _MATRIX_ORDS:
        raise InvalidValueError(f"op 'norm': matrix ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    if not matrix and (isinstance(ord, str) or not np.isscalar(ord) and ord is not None):
        raise InvalidValueError(f"op 'norm': vector ord must be a number or None, got {ord!r}")
    return axes, matrix and ord not in (None, "fro")


def _norm(x: np.ndarray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    x = np.asarray(x)
    norm_axes(x, ord, axis)
    out = np.asarray(np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))
    return out.astype(x.dtype) if np.issubdtype(x.dtype, np.floating) else out


def _extreme_gap(values: np.ndarray, axes: tuple[int, ...], largest: bool) -> np.ndarray:
    """Per slice over `axes`, how far the extreme value is from the next one (ties: 0)."""
    others = [i for i in range(values.ndim) if i not in axes]
    rows = np.transpose(values, others + list(axes)).reshape([values.shape[i] for i in others] + [-1])
    rows = np.sort(rows if largest else -rows, axis=-1)
    return rows[..., -1] - rows[..., -2] if rows.shape[-1] > 1 else np.full(rows.shape[:-1], np.inf)


def _norm_distance(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    x = np.asarray(x)
    axes, matrix = norm_axes(x, ord, axis)
    if ord in (None, 2, "fro") and not matrix:
        return np.asarray(np.linalg.norm(x.reshape(-1) if axis is None and ord is None else x, ord, axis))
    if matrix and ord in ("nuc", 2, -2):
        return singular_distance(np.moveaxis(x, axes, (-2, -1)))
    distance = np.abs(x)  # ord 1, 0, p, ±inf: |x| at 0 is a kink
    if ord in (np.inf, -np.inf) and not matrix:
        return np.minimum(np.min(distance), np.min(_extreme_gap(distance, axes, ord > 0)))
    if matrix:  # ±1, ±inf: ties between the column or row sums
        along = axes[0] if ord in (1, -1) else axes[1]
        sums = np.sum(distance, axis=along, keepdims=True)
        return np.minimum(np.min(distance), np.min(_extreme_gap(sums, axes, ord > 0)))
    return distance


_VECTOR_LAYOUTS = (((4,), None), ((2, 3), 1), ((2, 3), (0,)), ((2, 3, 2), -1))
_MATRIX_LAYOUTS = (((), 3, 3, None), ((), 4, 2, None), ((2,), 3, 2, (1, 2)), ((2,), 2, 3, (2, 0)))


def _norm_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """Each ord in two of the layouts (axis None, int, 1-tuple, negative; matrices transposed and
    batched), each input redrawn until it is 0.2 clear of norm's kinks (zeros, ties, repeated
    singular values), which a float32 finite difference would straddle."""
    away = Domain(-2.0, 2.0, away_from_zero=0.3)
    unitary = is_complex(dtype)
    wide = np.complex128 if unitary else np.float64  # drawn in double, then cast

    def clear(draw: Any, params: dict) -> Sample:
        for _ in range(200):
            x = draw()
            if np.min(_norm_distance(x, **params)) >= 0.2:
                break
        return Sample((np.asarray(x, dtype=dtype),), params)

    def matrix(batch: tuple[int, ...], rows: int, cols: int, axis: Any) -> Any:
        drawn = with_singular_values
        return lambda: np.moveaxis(drawn(rng, batch, rows, cols, unitary), (-2, -1), axis or (0, 1))

    out = []
    for k, ord in enumerate((None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5)):
        for shape, axis in (_VECTOR_LAYOUTS[k % 4], _VECTOR_LAYOUTS[(k + 1) % 4]):
            out.append(clear(lambda shape=shape: away.draw(rng, shape, wide), {"ord": ord, "axis": axis}))
    out.append(clear(lambda: away.draw(rng, (2, 3), wide), {"ord": 2, "axis": 0, "keepdims": True}))
    out.append(clear(lambda: away.draw(rng, (2, 3, 2), wide), {}))  # all entries, any ndim
    for k, ord in enumerate((None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)):
        for layout in (_MATRIX_LAYOUTS[k % 4], _MATRIX_LAYOUTS[(k + 2) % 4]):
            out.append(clear(matrix(*layout), {"ord": ord, "axis": layout[3]}))
    out.append(clear(matrix(*_MATRIX_LAYOUTS[3]), {"ord": "nuc", "axis": (2, 0), "keepdims": True}))
    return out


norm = OpSpec(
    "norm",
    _norm,
    params=("ord", "axis", "keepdims"),
    numpy=(np.linalg.norm,),
    samples=_norm_samples,
    accepts_complex=True,
    kink_distance=_norm_distance,
    kinks=(
        Kink((np.zeros(3),), (np.zeros(3),), why="the 2-norm's gradient at 0 is 0, a subgradient"),
        Kink((np.zeros((2, 2)),), (np.zeros((2, 2)),), {"ord": "fro"}, why="'fro' at 0: gradient 0"),
        Kink(([-1.0, 0.0, 2.0],), (np.array([-1.0, 0.0, 1.0]),), {"ord": 1}, why="ord 1: abs'(0) = 0"),
        Kink(([3.0, -3.0, 1.0],), (np.array([0.5, -0.5, 0.0]),), {"ord": np.inf}, why="ord inf: ties split"),
    ),
    doc="vector ords and 'fro', 'nuc', ±1, ±2, ±inf; the gradient at x = 0 is 0 (a subgradient); "
    "'nuc' at rank-deficient x: U V^T on the nonzero singular values",
)
