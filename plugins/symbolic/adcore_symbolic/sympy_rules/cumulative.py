"""Sympy rules of adcore/ops/cumulative.py: cumsum, cumprod, diff, sort."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.extend import LazyModule
from adcore_symbolic.sympy_rules.table import defsympy

stats = LazyModule("adcore_symbolic.statistics")


def _along(func: Any, x: Any, axis: Any) -> np.ndarray:
    """func(x) along `axis` of an object array (None: of x flattened)."""
    x = np.asarray(x, dtype=object)
    if axis is None:
        return func(x.reshape(-1), 0)
    return func(x, axis % max(x.ndim, 1))


def _cumulative(ufunc: Any):
    return lambda x, axis=None, dtype=None: _along(
        lambda v, a: ufunc.accumulate(v, axis=a, dtype=object), x, axis
    )


def _diff(x, n=1, axis=-1, prepend=None, append=None):
    ends = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(np.asarray(x, dtype=object), n=n, axis=axis, **ends)


def _sort_rows(x: np.ndarray, axis: int) -> np.ndarray:
    rows = np.moveaxis(x, axis, -1)
    out = np.empty(rows.shape, dtype=object)
    for index in np.ndindex(rows.shape[:-1]):
        row = list(rows[index])
        out[index] = [stats.order_statistic(k, *row) for k in range(len(row))]
    return np.moveaxis(out, -1, axis)


# fmt: off
# --- cumulative and ordering ----------------------------------------------------------
defsympy("cumsum",  _cumulative(np.add))
defsympy("cumprod", _cumulative(np.multiply))
defsympy("diff",    _diff)
defsympy("sort",    lambda x, axis=-1, kind=None, stable=None: _along(_sort_rows, x, axis))

# fmt: on
