"""Sympy rules of adcore/ops/shapes.py and rearrangements.py: transpose, reshape, broadcasting,
indexing, concatenate, stack, the ops that move elements (a gather through the op's source-index
map), astype."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.ops.rearrangements import source_index
from adcore_symbolic.sympy_rules.table import defsympy


def _scatter_add(values: Any, index: Any, shape: Any) -> np.ndarray:
    out = np.zeros(shape, dtype=object)
    np.add.at(out, index, values)
    return out


# fmt: off
# --- shapes and indexing ------------------------------------------------------------
defsympy("transpose",    lambda x, axes=None: np.transpose(x, axes))
defsympy("reshape",      lambda x, shape: np.reshape(x, shape))
defsympy("broadcast_to", lambda x, shape: np.broadcast_to(x, shape))
defsympy("expand_dims",  lambda x, axis: np.expand_dims(x, axis))
defsympy("squeeze",      lambda x, axis=None: np.squeeze(x, axis))
defsympy("getitem",      lambda x, index: np.asarray(x, dtype=object)[index])
defsympy("scatter_add",  _scatter_add)
defsympy("concatenate",  lambda *xs, axis=0: np.concatenate([np.asarray(x, dtype=object) for x in xs], axis=axis))
defsympy("stack",        lambda *xs, axis=0: np.stack([np.asarray(x, dtype=object) for x in xs], axis=axis))

# fmt: on


# --- ops that move elements (adcore.ops.rearrangements.source_index) -------------------------------------
def _gather(name: str) -> Any:
    """The rule of an op that only moves elements: each output element is its source element's
    expression, or the op's constant there (tril's zeros, pad's constant_values)."""
    impl = getattr(ops, name).impl

    def rule(x: Any, **params: Any) -> Any:
        x = np.asarray(x, dtype=object)
        source = source_index(impl, x.shape, params)
        out = np.append(x.reshape(-1), 0)[source]  # position -1 reads the appended 0
        if name == "pad":
            fill = impl(np.zeros(x.shape), **params)
            out = out + fill if fill.any() else out
        return out

    return rule


for _name in (
    "swapaxes", "moveaxis", "rollaxis", "ravel", "atleast_1d", "atleast_2d", "atleast_3d",
    "diag", "diagonal", "diagflat", "tril", "triu", "flip", "flipud", "fliplr", "rot90", "roll",
    "repeat", "tile", "pad", "take", "take_along_axis",
):  # fmt: skip
    defsympy(_name, _gather(_name))
defsympy("astype", lambda x, dtype: np.asarray(x, dtype=object))  # sympy's numbers have no dtype
