"""JVPs of adcore/ops/reductions.py: sum, mean, prod, max, min, var, std, ptp, average, nansum,
nanmean, median, quantile, percentile."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import batched_axis, centred, kept_shape, prod_partials, tie_weights, times_step
from adcore.ops import complex_parts as cp
from adcore.ops.ordering import quantile_weights, to_rows
from adcore.ops.reductions import reduced_count, refuse_std_second_order
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import reduce as _reduce


def _sum_jvp(t, ans, x, axis=None, keepdims=False, dtype=None, where=True):
    if where is True:
        return _reduce(t, x, axis, keepdims)
    kept = np.broadcast_to(np.asarray(where, dtype=t.dtype), x.shape)
    return _reduce(times_step(t, kept), x, axis, keepdims)


def _mean_jvp(t, ans, x, axis=None, keepdims=False, dtype=None, where=True):
    if where is True:
        return anp.mean(t, axis=batched_axis(axis, x.ndim), keepdims=keepdims)
    mask = np.broadcast_to(np.asarray(where, dtype=t.dtype), x.shape)
    count = np.maximum(np.sum(mask, axis=axis, keepdims=True), 1)  # an all-masked slice: 0, not nan
    return _reduce(times_step(t, mask / count), x, axis, keepdims)


# on complex x, var = mean |x - mean|**2: d var = 2 Re(conj(x - mean) dx) / (n - ddof); std's is / (2 std)
def _var_jvp(t, ans, x, axis=None, ddof=0, keepdims=False):
    weights = cp.conj_if_complex(centred(x, axis)) * (2.0 / (reduced_count(x, axis) - ddof))
    return cp.real_if_complex(_reduce(t, x, axis, keepdims, weights))


def _std_jvp(t, ans, x, axis=None, ddof=0, keepdims=False):
    refuse_std_second_order(ans, x, axis)
    std = anp.reshape(ans, kept_shape(x, axis))
    safe = anp.where(concrete(std) == 0, 1.0, std)  # all equal: x - mean is 0 too, derivative 0
    weights = cp.conj_if_complex(centred(x, axis)) / (safe * (reduced_count(x, axis) - ddof))
    return cp.real_if_complex(_reduce(t, x, axis, keepdims, weights))


def _ptp_jvp(t, ans, x, axis=None, keepdims=False):
    values = concrete(x)
    high = tie_weights(values, np.max(values, axis=axis, keepdims=True), axis, t.dtype)
    low = tie_weights(values, np.min(values, axis=axis, keepdims=True), axis, t.dtype)
    return _reduce(times_step(t, high - low), x, axis, keepdims)


def _laid_out(a, weights, axis):
    """weights over a's shape (1-d weights lie along the int axis), broadcast."""
    if weights.shape != a.shape:
        shape = [1] * a.ndim
        shape[np.atleast_1d(axis)[0] % a.ndim] = weights.shape[0]
        weights = anp.reshape(weights, tuple(shape))
    return anp.broadcast_to(weights, a.shape)


def _average_jvp_a(t, ans, a, weights, axis=None, keepdims=False, returned=False):
    if weights is None:
        return anp.mean(t, axis=batched_axis(axis, a.ndim), keepdims=keepdims)
    w = _laid_out(a, weights, axis)
    return _reduce(t, a, axis, keepdims, w / anp.sum(w, axis=axis, keepdims=True))


def _average_jvp_w(t, ans, a, weights, axis=None, keepdims=False, returned=False):
    w = _laid_out(a, weights, axis)
    if weights.shape != a.shape:  # the tangent of 1-d weights, laid out the same way
        shape = [1] * (a.ndim + 1)
        shape[0] = t.shape[0]
        shape[1 + np.atleast_1d(axis)[0] % a.ndim] = weights.shape[0]
        t = anp.reshape(t, tuple(shape))
    t = anp.broadcast_to(t, t.shape[:1] + a.shape)
    total = anp.sum(w, axis=axis, keepdims=True)
    return _reduce(t, a, axis, keepdims, (a - anp.reshape(ans, kept_shape(a, axis))) / total)


def _nansum_jvp(t, ans, x, axis=None, keepdims=False):
    return _reduce(anp.where(~np.isnan(concrete(x)), t, 0.0), x, axis, keepdims)


def _nanmean_jvp(t, ans, x, axis=None, keepdims=False):
    kept = ~np.isnan(concrete(x))
    count = np.maximum(np.sum(kept, axis=axis, keepdims=True), 1)  # an all-NaN slice: 0, not nan
    return _reduce(anp.where(kept, t, 0.0), x, axis, keepdims, (1 / count).astype(t.dtype))


def quantile_jvp(t, ans, x, q, axis, method):
    """Each output's tangent: the interpolation weights times the slice's tangents."""
    weights = quantile_weights(x, q, axis, method, t.dtype)  # (nq, m, n)
    rows = anp.expand_dims(to_rows(t, axis, lead=1), 1)  # (B, 1, m, n)
    return anp.reshape(anp.sum(times_step(rows, weights), axis=-1), _batch(t, ans))


# fmt: off
# --- reductions ----------------------------------------------------------------------
defjvp("sum",        _sum_jvp)
defjvp("mean",       _mean_jvp)
defjvp("prod",       lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, prod_partials(x, ans, axis)))
defjvp("max",        lambda t, ans, x, axis=None, keepdims=False: _reduce(times_step(t, tie_weights(x, ans, axis, t.dtype)), x, axis, keepdims))
defjvp("min",        lambda t, ans, x, axis=None, keepdims=False: _reduce(times_step(t, tie_weights(x, ans, axis, t.dtype)), x, axis, keepdims))
defjvp("var",        _var_jvp)
defjvp("std",        _std_jvp)
defjvp("ptp",        _ptp_jvp)
defjvp("average",    _average_jvp_a, _average_jvp_w)
defjvp("nansum",     _nansum_jvp)
defjvp("nanmean",    _nanmean_jvp)
defjvp("median",     lambda t, ans, x, axis=None, keepdims=False: quantile_jvp(t, ans, x, 0.5, axis, "linear"))
defjvp("quantile",   lambda t, ans, x, q, axis=None, method="linear", keepdims=False: quantile_jvp(t, ans, x, q, axis, method))
defjvp("percentile", lambda t, ans, x, q, axis=None, method="linear", keepdims=False: quantile_jvp(t, ans, x, np.asarray(q) / 100, axis, method))

# fmt: on
