"""VJPs of adcore/ops/reductions.py: sum, mean, prod, max, min, var, std, ptp, average, nansum,
nanmean, median, quantile, percentile."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import Tracer, concrete, plain_numbers
from adcore.extend import centred, kept_shape, mask, prod_partials, tie_weights, times_step
from adcore.ops import complex_parts as cp
from adcore.ops.ordering import from_rows, quantile_weights
from adcore.ops.reductions import reduced_count, refuse_std_second_order
from adcore_reverse.vjps.table import defvjp, defvjp_steps
from adcore_reverse.vjps.table import expand as _expand
from adcore_reverse.zeros import Masked, step_cotangent


def _mask(x: Any, where: Any, dtype: Any) -> np.ndarray:
    """The where= mask over x's shape, as 0/1 in dtype."""
    return np.broadcast_to(np.asarray(where, dtype=dtype), x.shape)


def _sum_vjp(g, ans, x, axis=None, keepdims=False, dtype=None, where=True):
    out = _expand(g, x, axis)
    return out if where is True else step_cotangent(out, _mask(x, where, g.dtype), x)


def _mean_vjp(g, ans, x, axis=None, keepdims=False, dtype=None, where=True):
    if where is True:
        return _expand(g, x, axis) * (max(ans.size, 1) / max(x.size, 1))
    mask = _mask(x, where, g.dtype)
    count = np.maximum(np.sum(mask, axis=axis, keepdims=True), 1)  # an all-masked slice: 0, not nan
    return step_cotangent(_expand(g, x, axis), mask / count, x)


def _std_scale(ans, x, axis, ddof):
    """(n - ddof) std over x's kept shape, 1 where std is 0 (all equal: x - mean is 0 there too,
    so the derivative is 0, abs'(0) = 0's convention)."""
    refuse_std_second_order(ans, x, axis)
    std = anp.reshape(ans, kept_shape(x, axis))
    safe = anp.where(concrete(std) == 0, 1.0, std)
    return safe * (reduced_count(x, axis) - ddof)


# on complex x, var = mean |x - mean|**2: d var = 2 Re(conj(x - mean) dx) / (n - ddof), so the
# cotangent is g 2 conj(x - mean) / (n - ddof) (JAX's convention); std's is var's / (2 std)
def _var_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    return (
        _expand(g, x, axis) * cp.conj_if_complex(centred(x, axis)) * (2.0 / (reduced_count(x, axis) - ddof))
    )


def _std_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    return _expand(g, x, axis) * cp.conj_if_complex(centred(x, axis)) / _std_scale(ans, x, axis, ddof)


def ptp_weights(x, axis, dtype):
    """d ptp / d x: the max's tie weights minus the min's."""
    values = concrete(x)
    high = tie_weights(values, np.max(values, axis=axis, keepdims=True), axis, dtype)
    low = tie_weights(values, np.min(values, axis=axis, keepdims=True), axis, dtype)
    return high - low


def average_weights(a, weights, axis):
    """weights laid over a's shape: as they are, or 1-d weights along the int axis."""
    if weights is None or weights.shape == a.shape:
        return weights
    shape = [1] * a.ndim
    shape[np.atleast_1d(axis)[0] % a.ndim] = weights.shape[0]
    return anp.reshape(weights, tuple(shape))


def _average_vjp_a(g, ans, a, weights, axis=None, keepdims=False, returned=False):
    w = average_weights(a, weights, axis)
    if w is None:
        return _mean_vjp(g, ans, a, axis)
    w = anp.broadcast_to(w, a.shape)
    return _expand(g, a, axis) * w / anp.sum(w, axis=axis, keepdims=True)


def _average_vjp_w(g, ans, a, weights, axis=None, keepdims=False, returned=False):
    w = average_weights(a, weights, axis)
    total = anp.sum(anp.broadcast_to(w, a.shape), axis=axis, keepdims=True)
    share = _expand(g, a, axis) * (a - anp.reshape(ans, kept_shape(a, axis))) / total
    if w.shape == weights.shape:
        return share
    along = np.atleast_1d(axis)[0] % a.ndim
    return anp.sum(share, axis=tuple(i for i in range(a.ndim) if i != along))


def nan_free(x) -> np.ndarray:
    return ~np.isnan(concrete(x))


def _nansum_vjp(g, ans, x, axis=None, keepdims=False):
    return step_cotangent(_expand(g, x, axis), mask(nan_free(x), g), x)


def _nanmean_vjp(g, ans, x, axis=None, keepdims=False):
    kept = nan_free(x)
    count = np.maximum(np.sum(kept, axis=axis, keepdims=True), 1)  # an all-NaN slice: 0, not nan
    return step_cotangent(_expand(g, x, axis), mask(kept / count, g), x)


def quantile_vjp(g, ans, x, q, axis, method):
    """The cotangent of x: g spread over each slice by the interpolation weights."""
    weights = quantile_weights(x, q, axis, method, g.dtype)  # (nq, m, n)
    per_q = anp.reshape(g, weights.shape[:2] + (1,))
    cotangent = from_rows(anp.sum(times_step(per_q, weights), axis=0), x.shape, axis)
    unread = np.all(weights == 0, axis=0)  # elements no quantile reads: structural zeros
    if not plain_numbers(unread).any():  # (under vmap: in no example; a batch keeps its masks)
        return cotangent
    zeros = from_rows(unread, x.shape, axis)
    return Masked(cotangent, zeros if isinstance(zeros, Tracer) else np.asarray(zeros))


# fmt: off
# --- reductions ----------------------------------------------------------------------
# the steps among these (max, min, ptp, where=, the nan-skipping ones) select: zeros.step_cotangent
defvjp_steps("sum",  _sum_vjp)
defvjp_steps("mean", _mean_vjp)
defvjp("prod",       lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * prod_partials(x, ans, axis))
defvjp_steps("max",  lambda g, ans, x, axis=None, keepdims=False: step_cotangent(_expand(g, x, axis), tie_weights(x, ans, axis, g.dtype), x))
defvjp_steps("min",  lambda g, ans, x, axis=None, keepdims=False: step_cotangent(_expand(g, x, axis), tie_weights(x, ans, axis, g.dtype), x))
defvjp("var",        _var_vjp)
defvjp("std",        _std_vjp)
defvjp_steps("ptp",  lambda g, ans, x, axis=None, keepdims=False: step_cotangent(_expand(g, x, axis), ptp_weights(x, axis, g.dtype), x))
defvjp("average",    _average_vjp_a, _average_vjp_w)
defvjp_steps("nansum",  _nansum_vjp)
defvjp_steps("nanmean", _nanmean_vjp)
defvjp_steps("median",     lambda g, ans, x, axis=None, keepdims=False: quantile_vjp(g, ans, x, 0.5, axis, "linear"))
defvjp_steps("quantile",   lambda g, ans, x, q, axis=None, method="linear", keepdims=False: quantile_vjp(g, ans, x, q, axis, method))
defvjp_steps("percentile", lambda g, ans, x, q, axis=None, method="linear", keepdims=False: quantile_vjp(g, ans, x, np.asarray(q) / 100, axis, method))

# fmt: on
