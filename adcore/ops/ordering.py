"""What sort, median and quantile's rules share: an axis moved to rows, the stable sorting
permutation and the interpolation weights of order statistics (concrete: no derivative).

Ties follow the stable sort: equal values keep their order, so each takes the derivative of
its own sorted slot (sort) and a quantile's weight goes to the element whose stable rank is
the interpolated slot (docs/conventions.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adcore.core import Tracer, concrete
from adcore.ops import elementwise, reductions, shapes


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


# Under vmap a batch of permutations has no batched form as an index (a static param), so there
# each is a one-hot matrix (OneHot), whose gathers are selections: n * n entries per row, so only
# for rows up to this size (longer ones take the index, which makes vmap loop over the examples)
ONE_HOT_ENTRIES = 2**16


class OneHot(NamedTuple):
    """Permutations as (m, n, n) booleans: `chosen[r, i, j]` where row r's slot i takes element j."""

    chosen: Any


def sorting_permutation(x: Any, axis: Any) -> np.ndarray | OneHot:
    """(m, n): for each row of to_rows(x, axis), the stable argsort (NaNs last, as np.sort); under
    vmap, as a OneHot of every example's."""
    rows = concrete(to_rows(concrete(x), axis))
    if isinstance(rows, Tracer) and rows.shape[0] * rows.shape[1] ** 2 <= ONE_HOT_ENTRIES:
        return OneHot(_stable_ranks(rows)[..., None, :] == np.arange(rows.shape[1])[:, None])
    return np.argsort(np.asarray(rows), axis=-1, kind="stable")


def _stable_ranks(rows: Any) -> Any:
    """(m, n): each element's slot in its row's stable sort, NaNs last: the elements below it,
    and the equal ones before it."""
    a, b = rows[..., :, None], rows[..., None, :]  # [k, j]: element k against element j
    below = (a < b) | (~np.isnan(a) & np.isnan(b))
    equal = (a == b) | (np.isnan(a) & np.isnan(b))
    earlier = np.triu(np.ones((rows.shape[1],) * 2, dtype=bool), 1)  # k < j
    return np.sum((below | (equal & earlier)).astype(np.float64), axis=-2)  # (exact counts)


def permute_rows(rows: Any, perm: np.ndarray | OneHot) -> Any:
    """rows[..., i, perm[i, j]]: rows (lead..., m, n) gathered along n by each row's permutation."""
    if isinstance(perm, OneHot):  # each slot's one element, plus -0.0 (x + -0.0 is x, bit for bit)
        return reductions.sum(
            elementwise.where(perm.chosen, shapes.expand_dims(rows, axis=-2), -0.0), axis=-1
        )
    lead = (slice(None),) * (len(rows.shape) - 2)
    return shapes.getitem(rows, index=lead + (np.arange(perm.shape[0])[:, None], perm))


def inverse(perm: np.ndarray | OneHot) -> np.ndarray | OneHot:
    """The inverse of each row's permutation."""
    if isinstance(perm, OneHot):
        return OneHot(np.swapaxes(perm.chosen, -1, -2))
    out = np.empty_like(perm)
    np.put_along_axis(out, perm, np.arange(perm.shape[-1])[None, :], axis=-1)
    return out


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
    if isinstance(perm, OneHot):  # (under vmap) element j of row r weighs as its slot
        by_slot = slot_weights(q, perm.chosen.shape[-1], method)[:, None, :, None]  # (nq, 1, n, 1)
        return reductions.sum(elementwise.where(perm.chosen, by_slot, -0.0), axis=-2).astype(dtype)
    m, n = perm.shape
    by_slot = slot_weights(q, n, method)  # (nq, n)
    weights = np.zeros((by_slot.shape[0], m, n))
    rows = np.arange(m)[:, None]
    weights[:, rows, perm] = by_slot[:, None, :]
    return weights.astype(dtype)
