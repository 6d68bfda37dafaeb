"""Sparsity rules of adcore/ops/shapes.py and rearrangements.py, and of sort
(adcore/ops/cumulative.py), a permutation.

Every op here but scatter_add and sort only copies input elements into the output (or puts a
constant there: tril's zeros, pad's constant_values), so its pattern is read from its impl run on
the element numbers (`movement`): exact, linear, the same globally and locally, since an index
given as a param is structure, not a traced value. An index holding a comparison of a traced
value (x[x > 0] in a global pattern) is refused with ValueDependentError. scatter_add adds
(repeated indices accumulate), so it has its own rule; astype is the identity, elementwise; sort
is a permutation of each fibre, which one only a point can tell.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.errors import ValueDependentError
from adcore_sparsity.extend import (
    DENSE,
    SparsityRule,
    along_axes,
    elementwise,
    gather,
    is_condition,
    known,
    movement,
    normalize_axes,
)
from adcore_sparsity.rules.table import defsparsity


def _moves(name: str) -> SparsityRule:
    """The rule of an op that only moves elements: read from its impl."""
    return movement(getattr(ops, name).impl)


def _indexed(name: str, index_param: str) -> SparsityRule:
    """A gather by a constant index (param `index_param`): structure, so exact; an index that is
    a comparison of a traced value (a global pattern's Condition) is refused."""
    moves = _moves(name)

    def dependencies(ans: Any, x: Any, **params: Any) -> tuple:
        if is_condition(params.get(index_param)):
            raise ValueDependentError(
                f"op {name!r}: the {index_param} is a comparison of a traced value (such as x[x > 0]), so "
                "which elements are taken depends on the input's numbers, which a global sparsity pattern "
                "(valid for every input) cannot follow: detect the pattern at this point with local=True, "
                "or keep every element and choose with anp.where(x > 0, x, 0)"
            )
        return moves(ans, x, **params)

    return SparsityRule(dependencies, "linear", True)


def _pad_impl(array: Any, **params: Any) -> Any:
    """pad with its constant_values 0, so that movement reads them as constants (its -1)."""
    if "constant_values" in params:
        params = {**params, "constant_values": 0}
    return ops.pad.impl(array, **params)


def _scatter_add(ans: Any, values: Any, index: Any, shape: Any) -> tuple:
    """zeros(shape) with values added at index: value j flows into each output position it is
    added to (values broadcast against the indexed positions; repeated positions add up)."""
    from scipy import sparse

    if is_condition(index):
        raise ValueDependentError(
            "op 'scatter_add': the index is a comparison of a traced value, so where the values go "
            "depends on the input's numbers, which a global sparsity pattern cannot follow: detect the "
            "pattern at this point with local=True"
        )
    out_size = int(np.prod(shape, dtype=np.int64))
    in_size = int(np.prod(np.shape(values), dtype=np.int64))
    targets = np.arange(out_size, dtype=np.int64).reshape(shape)[index]
    sources = np.broadcast_to(np.arange(in_size, dtype=np.int64).reshape(np.shape(values)), np.shape(targets))
    entries = (np.ones(targets.size), (targets.ravel(), sources.ravel()))
    return (sparse.coo_array(entries, shape=(out_size, in_size)).tocsr(),)


def _sort_axes(x: Any, axis: Any = -1, **params: Any) -> tuple[int, ...]:
    return normalize_axes(axis, len(np.shape(x)))


_sort_fibres = along_axes(_sort_axes)


def _sort(ans: Any, x: Any, axis: Any = -1, kind: Any = None, stable: Any = None) -> tuple:
    """Globally each sorted element may be any element of its fibre (DENSE when the fibre is the
    whole array); at a point, the stable sort's permutation (ties keep their order, a slot each,
    as sort's derivative does)."""
    shape = np.shape(x)
    if not known(x):
        if axis is None or len(_sort_axes(x, axis)) == len(shape):
            return (DENSE,)
        return _sort_fibres(ans, x, axis=axis)
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    values = np.asarray(x)
    if axis is None:
        positions, values, axis = positions.ravel(), values.ravel(), 0
    order = np.argsort(values, axis=axis, kind="stable")
    return (gather(np.take_along_axis(positions, order, axis=axis), positions.size),)


_INDEXED: dict[str, str] = {"getitem": "index", "take": "indices", "take_along_axis": "indices"}

# fmt: off
# --- shapes and indexing: copies of elements ------------------------------------------------------
for _name in ("transpose", "reshape", "broadcast_to", "expand_dims", "squeeze", "concatenate", "stack",
              "swapaxes", "moveaxis", "rollaxis", "ravel", "atleast_1d", "atleast_2d", "atleast_3d",
              "diag", "diagonal", "diagflat", "tril", "triu", "flip", "flipud", "fliplr", "rot90", "roll",
              "repeat", "tile"):
    defsparsity(_name, _moves(_name))
for _name, _param in _INDEXED.items():
    defsparsity(_name, _indexed(_name, _param))
defsparsity("pad",         movement(_pad_impl))  # the modes it takes copy elements; the others it refuses
defsparsity("scatter_add", SparsityRule(_scatter_add, "linear", True))
defsparsity("astype",      elementwise("linear"))
# --- sort: a permutation of each fibre (piecewise linear: no second derivative) -------------------
defsparsity("sort",        SparsityRule(_sort, "linear", True))
# fmt: on
