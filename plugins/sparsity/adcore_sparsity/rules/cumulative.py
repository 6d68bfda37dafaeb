"""Sparsity rules of adcore/ops/cumulative.py: cumsum, cumprod, diff (sort's is in shapes.py, with
the other rules that permute elements).

Along the axis, cumsum's and cumprod's element k depends on elements 0..k of its fibre (axis None:
of the flattened input), a lower triangle per fibre; diff's on the n + 1 consecutive elements of
x (with prepend and append, which are constants, before and after) its differences span.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore_sparsity.extend import SparsityRule
from adcore_sparsity.rules.table import defsparsity


def fibre_positions(shape: tuple[int, ...], axis: int | None) -> np.ndarray:
    """(fibres, length): the flat positions of each fibre's elements along `axis`, in order (axis
    None: the flattened array as one fibre)."""
    position = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if axis is None:
        return position.reshape(1, -1)
    moved = np.moveaxis(position, axis, -1)
    return moved.reshape(int(np.prod(moved.shape[:-1], dtype=np.int64)), moved.shape[-1])


def _pairs(out_positions: np.ndarray, in_positions: np.ndarray, k: np.ndarray, j: np.ndarray, shape: tuple):
    """The (out, in) pattern linking out_positions[:, k] to in_positions[:, j] in every fibre."""
    from scipy import sparse

    rows, cols = out_positions[:, k].ravel(), in_positions[:, j].ravel()
    return sparse.coo_array((np.ones(rows.size), (rows, cols)), shape=shape).tocsr()


def prefixes(order: str, exact: bool) -> SparsityRule:
    """cumsum, cumprod: output k of a fibre depends on its elements 0..k."""

    def dependencies(ans: Any, x: Any, axis: Any = None, dtype: Any = None) -> tuple:
        shape = np.shape(x)
        ax = None if axis is None else int(axis) % max(len(shape), 1)
        positions = fibre_positions(shape, ax)
        k, j = np.tril_indices(positions.shape[1])
        out = positions if axis is not None else np.arange(positions.size).reshape(positions.shape)
        return (_pairs(out, positions, k, j, (np.size(ans), np.size(x))),)

    return SparsityRule(dependencies, order, exact)


def end_length(end: Any, axis: int) -> int:
    """How many positions a prepend or append adds along axis (a scalar adds one)."""
    return 0 if end is None else (1 if np.ndim(end) == 0 else np.shape(end)[axis])


def _diff(ans: Any, x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> tuple:
    """Output k along the axis is a signed sum (binomial weights, none 0) of elements k..k+n of
    prepend, x, append joined: those that are x's."""
    shape = np.shape(x)
    ax = int(axis) % max(len(shape), 1)
    start, length = end_length(prepend, ax), shape[ax]
    out_length = np.shape(ans)[ax]
    k, step = np.meshgrid(np.arange(out_length), np.arange(n + 1), indexing="ij")
    joined = (k + step).ravel() - start  # the element of x (if any) term `step` of output k reads
    inside = (joined >= 0) & (joined < length)
    out = fibre_positions(np.shape(ans), ax)
    return (
        _pairs(
            out, fibre_positions(shape, ax), k.ravel()[inside], joined[inside], (np.size(ans), np.size(x))
        ),
    )


# fmt: off
defsparsity("cumsum",  prefixes("linear", exact=True))
# not exact: past a zero every product (and its derivatives by the other elements) is 0, yet the
# second derivatives by the zero and another element are not, so the pattern keeps them
defsparsity("cumprod", prefixes("nonlinear", exact=False))
defsparsity("diff",    SparsityRule(_diff, "linear", True))
# fmt: on
