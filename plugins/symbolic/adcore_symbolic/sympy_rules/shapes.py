"""Sympy rules of adcore/ops/shapes.py: transpose, reshape, broadcasting, indexing, concatenate, stack."""

from __future__ import annotations

from typing import Any

import numpy as np

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
