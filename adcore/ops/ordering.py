"""What sort, median and quantile's rules share: an axis moved to rows, the stable sorting
permutation and the interpolation weights of order statistics (concrete: no derivative).

Ties follow the stable sort: equal values keep their order, so each takes the derivative of
its own sorted slot (sort) and a quantile's weight goes to the element whose stable rank is
the interpolated slot (docs/conventions.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.core import concrete
from adcore.errors import InvalidValueError
from adcore.ops import shapes

QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def row_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    """The axes a reduction over `axis` removes, non-negative (None: every axis)."""
    if axis is None or ndim == 0:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in np.atleast_1d(axis)))


def to_rows(x: Any, axis: Any, lead: int = 0) -> Any:
    """x (traced or not) as (lead axes..., m, n): the `lead` leading axes kept as they are, the
    axes of `axis` (counted after the lead) moved last and flattened to n, the others to m."""
    ndim = len(x.shape) - lead
    axes = tuple(lead + a for a in row_axes(ndim, axis))
    kept = tuple(a for a in range(len(x.shape)) if a not in axes)
    moved = shapes.transpose(x, axes=kept + axes) if kept + axes != tuple(range(len(x.shape))) else x
    n = int(np.prod([x.shape[a] for a in axes], dtype=int))
    m = int(np.prod([x.shape[a] for a in kept[lead:]], dtype=int))
    return shapes.reshape(moved, shape=tuple(x.shape[:lead]) + (m, n))


def from_rows(rows: Any, shape: tuple[int, ...], axis: Any, lead: int = 0) -> Any:
    """to_rows undone: rows of to_rows(x, axis, lead) back to x's shape `shape`."""
    ndim = len(shape) - lead
    axes = tuple(lead + a for a in row_axes(ndim, axis))
    kept = tuple(a for a in range(len(shape)) if a not in axes)
    order = kept + axes
    moved = shapes.reshape(rows, shape=tuple(shape[a] for a in order))
    if order == tuple(range(len(shape))):
        return moved
    return shapes.transpose(moved, axes=tuple(int(i) for i in np.argsort(order)))


def sorting_permutation(x: Any, axis: Any) -> np.ndarray:
    """(m, n): for each row of to_rows(x, axis), the stable argsort (NaNs last, as np.sort)."""
    rows = np.asarray(concrete(to_rows(concrete(x), axis)))
    return np.argsort(rows, axis=-1, kind="stable")


def permute_rows(rows: Any, perm: np.ndarray) -> Any:
    """rows[..., i, perm[i, j]]: rows (lead..., m, n) gathered along n by each row's permutation."""
    lead = (slice(None),) * (len(rows.shape) - 2)
    return shapes.getitem(rows, index=lead + (np.arange(perm.shape[0])[:, None], perm))


def inverse(perm: np.ndarray) -> np.ndarray:
    """The inverse of each row's permutation."""
    out = np.empty_like(perm)
    np.put_along_axis(out, perm, np.arange(perm.shape[-1])[None, :], axis=-1)
    return out


def check_method(op: str, method: str) -> None:
    if method not in QUANTILE_METHODS:
        raise InvalidValueError(
            f"op {op!r}: method={method!r} is not supported; adcore's {op} takes method in "
            f"{list(QUANTILE_METHODS)} (a quantile that is a fixed interpolation of two order statistics)."
        )


def slot_weights(q: Any, n: int, method: str) -> np.ndarray:
    """(q.size, n): how much each sorted slot weighs in the q-quantile of n values (NumPy's methods)."""
    q = np.atleast_1d(np.asarray(q, dtype=float)).ravel()
    virtual = q * (n - 1)
    lo = np.clip(np.floor(virtual), 0, n - 1).astype(int)
    hi = np.clip(np.ceil(virtual), 0, n - 1).astype(int)
    frac = virtual - np.floor(virtual)
    if method == "lower":
        frac = np.zeros_like(frac)
    elif method == "higher":
        lo = hi
    elif method == "nearest":
        lo = np.clip(np.around(virtual), 0, n - 1).astype(int)  # half to even, as NumPy
        frac = np.zeros_like(frac)
    elif method == "midpoint":
        frac = np.where(lo == hi, 0.0, 0.5)
    weights = np.zeros((q.size, n))
    np.add.at(weights, (np.arange(q.size), lo), 1 - frac)
    np.add.at(weights, (np.arange(q.size), hi), frac)
    return weights


def quantile_weights(x: Any, q: Any, axis: Any, method: str, dtype: Any) -> np.ndarray:
    """(q.size, m, n) in `dtype`: d quantile / d rows of to_rows(x, axis), a concrete array. Each
    (q, row) has the interpolation weights at the elements whose stable ranks are the two slots."""
    perm = sorting_permutation(x, axis)
    m, n = perm.shape
    by_slot = slot_weights(q, n, method)  # (nq, n)
    weights = np.zeros((by_slot.shape[0], m, n))
    rows = np.arange(m)[:, None]
    weights[:, rows, perm] = by_slot[:, None, :]
    return weights.astype(dtype)
