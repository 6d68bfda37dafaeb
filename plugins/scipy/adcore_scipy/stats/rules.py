"""The scipy.stats ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.
Rules are written with adcore ops, so they can be differentiated again.

- log_ndtr: d/dx log Phi(x) = phi(x) / Phi(x) = exp(log phi(x) - ans), finite in both tails
  (about -x far left, where phi and Phi both underflow).
- stdtr(df, t): d/dt is Student's t density; d/d df has no closed form: MissingRuleError
  (as adcore_scipy.special's betainc refuses a and b).
- multivariate_normal_logpdf(x, mean, cov): with S = (cov + cov^T) / 2, P = S^-1 and
  a = P (x - mean) per sample, d/dx = -a, d/dmean = a, d/dcov = (a a^T - P) / 2: a by S's
  Cholesky factor, P by op spd_inverse (a third of inv's work), whatever the number of samples,
  and symmetric (the function reads cov's symmetric part).
- spd_inverse(a) = inv(S): d = -P dS P.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.errors import MissingRuleError
from adcore.extend import LazyModule, each, lift, unbroadcast
from adcore_scipy.stats.ops import LOG_SQRT_2PI, cholesky_of_covariance, spd_inverse, symmetric_part

special = LazyModule("scipy.special")
fn = LazyModule("adcore_scipy.stats.sympy_functions")


# --- log_ndtr ------------------------------------------------------------------------------------


def _ndtr_ratio(ans: Any, x: Any) -> Any:
    """phi(x) / Phi(x) from log Phi(x) = ans."""
    return anp.exp(-0.5 * (x * x) - LOG_SQRT_2PI - ans)


# --- stdtr -------------------------------------------------------------------------------------


def t_density(df: Any, t: Any) -> Any:
    """Student's t density at t, with the normalizing constant of df computed as a number (no
    derivative in df flows from here: stdtr's rule for df refuses)."""
    nu = np.asarray(concrete(df), dtype=np.float64)
    log_c = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * math.pi)
    dtype = np.result_type(concrete(t), 1.0)
    return np.asarray(np.exp(log_c), dtype=dtype) * (1 + t * t / nu.astype(dtype)) ** (-(nu + 1) / 2).astype(
        dtype
    )


def no_closed_form(op: str, arg: str, advice: str = "") -> MissingRuleError:
    return MissingRuleError(
        f"op {op!r}: the derivative in argument {arg!r} has no closed form, so no rule gives it. "
        f"Hold {arg} constant, or estimate that derivative with backend='numeric'.{advice}"
    )


def _stdtr_df(*args: Any) -> Any:
    raise no_closed_form("stdtr", "df")


# --- multivariate_normal_logpdf ---------------------------------------------------------------


def _residual_times(precision: Any, x: Any, mean: Any) -> Any:
    """a = P (x - mean) for each sample (a row), shape of x - mean."""
    return anp.matmul(x - mean, precision)


def _mvn_a(x: Any, mean: Any, cov: Any) -> Any:
    """a = S^-1 (x - mean) per sample by S's Cholesky factor: d^3 / 3, then O(d^2) a sample."""
    r = x - mean
    d = r.shape[-1]
    rows = anp.transpose(anp.reshape(r, (-1, d)))
    return anp.reshape(anp.transpose(anp.cho_solve(cholesky_of_covariance(cov), rows)), r.shape)


def _mvn_vjp_cov(g: Any, ans: Any, x: Any, mean: Any, cov: Any) -> Any:
    p = spd_inverse(cov)
    d = p.shape[-1]
    a = anp.reshape(_residual_times(p, x, mean), (-1, d))
    weights = anp.reshape(g, (-1, 1))
    return 0.5 * anp.matmul(anp.transpose(a), weights * a) - 0.5 * anp.sum(g) * p


def _mvn_jvp_cov(t: Any, ans: Any, x: Any, mean: Any, cov: Any) -> Any:
    p = spd_inverse(cov)
    d = p.shape[-1]
    a = anp.reshape(_residual_times(p, x, mean), (-1, d))  # (m, d)
    batch = t.shape[0]
    quadratic = anp.sum(anp.matmul(a, t) * a, axis=-1)  # a^T t a per sample: (B, m)
    trace = anp.sum(p * t, axis=(-2, -1))  # tr(P t), P symmetric: (B,)
    shape = (batch,) + np.shape(ans)
    return 0.5 * anp.reshape(quadratic, shape) - 0.5 * anp.reshape(trace, (batch,) + (1,) * len(shape[1:]))


def _mvn_jvp_x(t: Any, ans: Any, x: Any, mean: Any, cov: Any) -> Any:
    a = _mvn_a(x, mean, cov)
    return -anp.sum(lift(t, a) * a, axis=-1)


def _mvn_jvp_mean(t: Any, ans: Any, x: Any, mean: Any, cov: Any) -> Any:
    a = _mvn_a(x, mean, cov)
    return anp.sum(lift(t, a) * a, axis=-1)


# --- spd_inverse: d inv(S) = -P dS P, with S the symmetric part ---------------------------------


def _spd_vjp(g: Any, ans: Any, a: Any) -> Any:
    return -symmetric_part(anp.matmul(anp.matmul(ans, g), ans))


def _spd_jvp(t: Any, ans: Any, a: Any) -> Any:
    return -anp.matmul(anp.matmul(ans, symmetric_part(t)), ans)


# fmt: off
JVPS: dict[str, Any] = {
    "log_ndtr": (lambda t, ans, x: t * _ndtr_ratio(ans, x),),
    "stdtr":    (_stdtr_df, lambda t, ans, df, x: lift(t, ans) * t_density(df, x)),
    "multivariate_normal_logpdf": (_mvn_jvp_x, _mvn_jvp_mean, _mvn_jvp_cov),
    "spd_inverse": (_spd_jvp,),
}
VJPS: dict[str, Any] = {
    "log_ndtr": (lambda g, ans, x: g * _ndtr_ratio(ans, x),),
    "stdtr":    (_stdtr_df, lambda g, ans, df, x: unbroadcast(g * t_density(df, x), x)),
    "multivariate_normal_logpdf": (
        lambda g, ans, x, mean, cov: unbroadcast(-anp.expand_dims(g, -1) * _mvn_a(x, mean, cov), x),
        lambda g, ans, x, mean, cov: unbroadcast(anp.expand_dims(g, -1) * _mvn_a(x, mean, cov), mean),
        _mvn_vjp_cov,
    ),
    "spd_inverse": (_spd_vjp,),
}
SYMPY_RULES: dict[str, Any] = {
    "log_ndtr": lambda x: each(fn.log_ndtr, x),
    "stdtr":    lambda df, t: each(fn.stdtr, df, t),
}
# fmt: on
