"""`adcore.numpy`: differentiable functions under NumPy's names, NumPy itself for everything else.

`anp.sin`, `anp.sum`, `anp.matmul`, ... are the registered ops; names that are not
ops (array creation, dtypes, constants) fall through to NumPy, whose functions then
work on traced values wherever adcore maps them to an op.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from adcore import core as _core
from adcore.ops import CORE_OPS

globals().update({_spec.name: _spec for _spec in CORE_OPS})
globals().update({_alias: _spec for _spec in CORE_OPS for _alias in _spec.aliases})
absolute = globals()["abs"]
true_divide = globals()["divide"]
amax = globals()["max"]
amin = globals()["min"]
# np.linalg.slogdet's (sign, logabsdet) on traced values, from one op slogdet_packed
from adcore.ops.linalg import slogdet  # noqa: E402, F401

# np.average's signature (weights optional, after axis) around ops mean and average
from adcore.ops.reductions import numpy_average as average  # noqa: E402, F401

# NumPy's shape functions that are Python over ops (not ops), and array building from traced values
from adcore.ops.shape_functions import (  # noqa: E402, F401
    array,
    array_split,
    asarray,
    astype,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    c_,
    column_stack,
    dsplit,
    dstack,
    hsplit,
    hstack,
    pad,
    r_,
    select,
    split,
    vsplit,
    vstack,
)


def __getattr__(name: str) -> Any:
    op = _core.get_registry().ops.get(name)  # set by adcore.plugins, a layer above this one
    if op is not None:
        return op
    return getattr(_np, name)
