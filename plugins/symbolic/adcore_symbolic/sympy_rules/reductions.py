"""Sympy rules of adcore/ops/reductions.py: sum, mean, prod, max, min, var, std, ptp, average,
nansum, nanmean, median, quantile, percentile."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.core import concrete
from adcore.extend import LazyModule, each, reduce_with, reduced_axes
from adcore.ops.ordering import slot_weights
from adcore_symbolic.sympy_rules.table import defsympy, fn, sp

stats = LazyModule("adcore_symbolic.statistics")


def _mean(*xs: Any) -> Any:
    return sp.Add(*xs) / len(xs) if xs else sp.nan


def _mask(where: Any) -> Any:
    """where= as plain booleans: a mask computed from a traced value (x > 0) has no number here,
    so it raises SymbolicControlFlowError, as a traced mask in x[mask] does."""
    return concrete(where)


def _masked(x: Any, where: Any) -> Any:
    """x with the elements where= leaves out set to 0."""
    where = _mask(where)
    x = np.asarray(x, dtype=object)
    return x if where is True else np.where(np.broadcast_to(where, x.shape), x, sp.S.Zero)


def _sum(x, axis=None, keepdims=False, dtype=None, where=True):
    return reduce_with(sp.Add, _masked(x, where), axis, keepdims)


def _mean_rule(x, axis=None, keepdims=False, dtype=None, where=True):
    if where is True:
        return reduce_with(_mean, x, axis, keepdims)
    where = _mask(where)
    count = np.sum(np.broadcast_to(where, np.shape(x)), axis=axis, keepdims=keepdims)
    total = np.asarray(_sum(x, axis, keepdims, where=where), dtype=object)
    return np.asarray(
        [t / int(c) if c else sp.nan for t, c in zip(total.ravel(), np.ravel(count))], dtype=object
    ).reshape(total.shape)


def _var(x, axis=None, ddof=0, keepdims=False):
    return reduce_with(lambda *xs: stats.variance(ddof, *xs), x, axis, keepdims)


def _std(x, axis=None, ddof=0, keepdims=False):
    return reduce_with(lambda *xs: stats.std_root(stats.variance(ddof, *xs)), x, axis, keepdims)


def _ptp(x, axis=None, keepdims=False):
    return reduce_with(lambda *xs: fn.amax(*xs) - fn.amin(*xs), x, axis, keepdims)


def _nonempty(name: str, rule):
    """`rule` of a reduction with no identity (max, min, ptp), refusing an empty slice as the op's
    impl does (an InvalidValueError, also NumPy's ValueError): sympy's Max() of nothing is -oo,
    which gave a derivative of a function that has no value."""
    op = getattr(ops, name)

    def checked(x, axis=None, keepdims=False):
        if 0 in np.shape(x):
            op.impl(np.zeros(np.shape(x)), axis=axis, keepdims=keepdims)  # raises where NumPy would
        return rule(x, axis, keepdims)

    return checked


def _average(a, weights, axis=None, keepdims=False, returned=False):
    a = np.asarray(a, dtype=object)
    if weights is None:
        return reduce_with(_mean, a, axis, keepdims)
    w = np.asarray(weights, dtype=object)
    if w.shape != a.shape:  # 1-d weights along the int axis
        shape = [1] * a.ndim
        shape[np.atleast_1d(axis)[0] % a.ndim] = w.shape[0]
        w = w.reshape(shape)
    w = np.broadcast_to(w, a.shape)
    return reduce_with(sp.Add, a * w, axis, keepdims) / reduce_with(sp.Add, w, axis, keepdims)


def _nansum(x, axis=None, keepdims=False):
    return reduce_with(sp.Add, each(stats.skip_nan, x), axis, keepdims)


def _nanmean(x, axis=None, keepdims=False):
    def mean(*xs: Any) -> Any:
        count = sp.Add(*[stats.is_number(v) for v in xs])
        return sp.Add(*[stats.skip_nan(v) for v in xs]) / sp.Max(count, 1)

    return reduce_with(mean, x, axis, keepdims)


def quantiles(x: Any, q: Any, axis: Any, method: str, keepdims: bool) -> np.ndarray:
    """Each quantile of each slice: its slot weights times the order statistics (q's axes first)."""
    x = np.asarray(x, dtype=object)
    n = int(np.prod([x.shape[a] for a in reduced_axes(x.ndim, axis)], dtype=int))
    weights = slot_weights(q, n, method)

    def combine(row):
        return lambda *xs: sp.Add(
            *[
                sp.Float(w) * stats.order_statistic(k, *xs) if w != 1 else stats.order_statistic(k, *xs)
                for k, w in enumerate(row)
                if w != 0
            ]
        )

    out = [np.asarray(reduce_with(combine(row), x, axis, keepdims), dtype=object) for row in weights]
    return np.stack(out).reshape(np.shape(q) + out[0].shape)


# fmt: off
# --- reductions ----------------------------------------------------------------------
defsympy("sum",        _sum)
defsympy("mean",       _mean_rule)
defsympy("prod",       lambda x, axis=None, keepdims=False: reduce_with(sp.Mul, x, axis, keepdims))
defsympy("max",        _nonempty("max", lambda x, axis, keepdims: reduce_with(fn.amax, x, axis, keepdims)))
defsympy("min",        _nonempty("min", lambda x, axis, keepdims: reduce_with(fn.amin, x, axis, keepdims)))
defsympy("var",        _var)
defsympy("std",        _std)
defsympy("ptp",        _nonempty("ptp", _ptp))
defsympy("average",    _average)
defsympy("nansum",     _nansum)
defsympy("nanmean",    _nanmean)
defsympy("median",     lambda x, axis=None, keepdims=False: quantiles(x, 0.5, axis, "linear", keepdims))
defsympy("quantile",   lambda x, q, axis=None, method="linear", keepdims=False: quantiles(x, q, axis, method, keepdims))
defsympy("percentile", lambda x, q, axis=None, method="linear", keepdims=False: quantiles(x, np.asarray(q) / 100, axis, method, keepdims))

# fmt: on
