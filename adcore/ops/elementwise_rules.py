"""The derivative pieces the elementwise ops' rule packages share (reverse, forward, symbolic,
sparsity): sinc's slope, logaddexp's and hypot's shares, fmax's and copysign's weights, the
quotient of mod/fmod/floor_divide, written with adcore ops so the rules built from them nest."""

from __future__ import annotations

import numpy as np

from adcore.core import Tracer, concrete, differentiated, plain_numbers
from adcore.errors import InvalidValueError
from adcore.ops.elementwise import cos, exp, sinc, where

_SINC_SERIES_BELOW = 0.1
# sinc(x) = sum_k (-1)**k (pi x)**(2k) / (2k+1)!, so sinc'(x) = x sum_k>=1 c_k x**(2k-2) with
# c_k = (-1)**k pi**(2k) 2k / (2k+1)!: seven terms are exact to rounding below 0.1, where the closed
# form cancels (and is 0/0 at 0)
_SINC_SLOPE_SERIES = tuple(  # Python floats: float32 inputs stay float32
    float((-1) ** k * np.pi ** (2 * k) * 2 * k / np.prod(np.arange(1.0, 2 * k + 2))) for k in range(1, 8)
)


LN2, LN10 = float(np.log(2.0)), float(np.log(10.0))  # Python floats keep float32 values float32


def in_float64(v):
    """v in float64 (float_power computes in float64 whatever its inputs' dtype)."""
    return v * np.float64(1.0)


def sinc_slope(x):
    """d sinc / dx = (cos(pi x) - sinc(x)) / x, by its series near 0: 0 at 0, with slope -pi**2/3 there."""
    small = np.abs(concrete(x)) < _SINC_SERIES_BELOW
    if not plain_numbers(small).any():  # (under vmap: in any example)
        return (cos(np.pi * x) - sinc(x)) / x
    safe = where(small, 1.0, x)  # the closed form where it is taken, no 0/0 where it is not
    closed = (cos(np.pi * safe) - sinc(safe)) / safe
    x2 = x * x
    series = _SINC_SLOPE_SERIES[-1]
    for c in reversed(_SINC_SLOPE_SERIES[:-1]):
        series = series * x2 + c
    return where(small, x * series, closed)


def exp_share(x, y, ans, exp_fn=None):
    """d logaddexp(x, y) / dx = exp(x - ans) (exp_fn=exp2 for logaddexp2), with its limit where ans is
    infinite: 1 if x alone is, 0 if y alone is, 0.5 for two equal infinities (a tie, as maximum)."""
    exp_fn = exp_fn or exp
    infinite = np.isinf(concrete(ans))
    if not plain_numbers(infinite).any():
        return exp_fn(x - ans)
    xc, yc = concrete(x), concrete(y)
    limit = _as((xc > yc) + 0.5 * (xc == yc), np.result_type(xc, yc))
    # zeros at the infinite positions first: no inf - inf there, not even in the branch not taken
    return where(infinite, limit, exp_fn(where(infinite, 0.0, x) - where(infinite, 0.0, ans)))


def hypot_share(x, y, ans):
    """d hypot(x, y) / dx = x / ans; 0 at (0, 0) (hypot(x, 0) = |x|, abs'(0) = 0), and the limit at an
    infinite x (sign(x)) or y (0); nan when both are infinite (no limit)."""
    ansc = concrete(ans)
    ansc = ansc if isinstance(ansc, Tracer) else np.asarray(ansc)  # (under vmap: the batch's)
    special = (ansc == 0) | np.isinf(ansc)
    if not plain_numbers(special).any():
        return x / ans
    xc, yc = np.broadcast_arrays(concrete(x), concrete(y))
    if differentiated(x) and differentiated(y) and plain_numbers(ansc == 0).any():
        raise InvalidValueError(
            "op 'hypot': no second derivative at (0, 0) in both arguments: the gradient there is the "
            "subgradient 0 and (x, y) / hypot nearby, unbounded (as norm's at 0); take second "
            "derivatives away from (0, 0), or with one argument held constant (hypot(x, 0) is |x|)"
        )
    limit = np.where(np.isinf(xc), np.sign(xc) * np.where(np.isinf(yc), np.nan, 1.0), 0.0)
    return where(special, _as(limit, ansc.dtype), x / where(special, 1.0, ans))


def fmax_weight(x, y, wins, like=None):
    """d fmax(x, y) / dx (wins=np.greater; np.less for fmin): 1 where x wins or y alone is NaN, 0.5 on
    a tie (two NaNs too), 0 elsewhere, in `like`'s dtype (else x's and y's): a concrete step."""
    x, y = concrete(x), concrete(y)
    x_nan, y_nan = np.isnan(x), np.isnan(y)
    weight = wins(x, y) + (y_nan & ~x_nan) + 0.5 * ((x == y) | (x_nan & y_nan))
    return _as(weight, np.result_type(x, y) if like is None else like.dtype)


def finite_weight(x, like=None):
    """d nan_to_num(x) / dx: 1 where x is finite, 0 where NumPy replaces it, a concrete step."""
    x = concrete(x)
    return _as(np.isfinite(x), np.result_type(x) if like is None else like.dtype)


def copysign_weight(x, y, like):
    """d copysign(x, y) / dx: sign(x) times y's sign by its sign bit (-0.0 is negative): a concrete step."""
    x, y = concrete(x), concrete(y)
    return _as(np.sign(x) * np.where(np.signbit(y), -1.0, 1.0), like.dtype)


def _as(values, dtype):
    """Concrete values in `dtype`; under vmap (concrete() stops at its batch) the batch's, by astype
    instead of np.asarray, which would make vmap run once per example."""
    return values.astype(dtype) if isinstance(values, Tracer) else np.asarray(values, dtype=dtype)


def quotient(x, y, ans):
    """The integer q with x = q y + ans (mod, fmod), concrete: d ans / dy is -q."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.round((concrete(x) - concrete(ans)) / concrete(y))
