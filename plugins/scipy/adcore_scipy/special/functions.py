"""scipy.special's functions that are not ufuncs, with SciPy's signatures, written over adcore ops.

SciPy's own versions are Python that turns its input into a NumPy array, which a traced value
refuses: call these (`adcore_scipy.special.logsumexp`) in code to be differentiated. Each is
differentiable through the ops it calls, on every backend, and stable where the ops are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import Tracer, concrete
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_scipy.special import ops


def _static_int(value: Any, function: str, name: str, low: int = 0) -> int:
    """An integer argument with no derivative (an order, a dimension), checked."""
    if isinstance(value, Tracer):
        raise InvalidInputError(
            f"scipy.special.{function}: {name} is an integer with no derivative; pass a plain int, "
            "not a traced value"
        )
    if np.ndim(value) == 0 and float(value) == int(value) and int(value) >= low:
        return int(value)
    raise InvalidValueError(
        f"scipy.special.{function}: {name} must be one integer >= {low}, got {value!r}; it has no derivative, "
        f"so pass a plain int (SciPy's {function} takes it in the same place)"
    )


def polygamma(n: int, x: Any) -> Any:
    """The n-th derivative of digamma at x (scipy.special.polygamma(n, x)); n is one integer."""
    return ops.polygamma(x, n=_static_int(n, "polygamma", "n"))


def psi(x: Any, *more: Any) -> Any:
    """digamma(x) (scipy.special.psi); a second argument is refused: psi has no order."""
    if more:
        raise InvalidInputError(
            f"scipy.special.psi takes one argument x (it is digamma), got {1 + len(more)}; for the n-th "
            "derivative of digamma call adcore_scipy.special.polygamma(n, x) with a plain int n >= 0 "
            "(psi(x, n) is not SciPy's polygamma: SciPy reads the second argument as `out`)"
        )
    return ops.digamma(x)


def multigammaln(a: Any, d: int) -> Any:
    """log of the multivariate gamma function of dimension d: d(d-1)/4 log(pi) + sum_j gammaln(a - j/2)."""
    d = _static_int(d, "multigammaln", "d", low=1)
    if np.any(concrete(a) <= 0.5 * (d - 1)):
        raise InvalidValueError(f"scipy.special.multigammaln: a must be > (d - 1) / 2 = {0.5 * (d - 1)}")
    out = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        out = out + ops.gammaln(a - j / 2)
    return out


def softmax(x: Any, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over `axis` (None: all of x), SciPy's default; the core's stable softmax."""
    return anp.softmax(x, axis=axis)


def log_softmax(x: Any, axis: Any = None) -> Any:
    """x - logsumexp(x) over `axis` (None: all of x); the core's log_softmax, no cancellation at +-1e3."""
    return anp.log_softmax(x, axis=axis)


def logsumexp(
    a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False
) -> Any:
    """log(sum(b * exp(a))) over `axis`, as scipy.special.logsumexp: with `b` (weights, which may
    be negative, and are differentiable), `return_sign` gives (log|sum|, sign of the sum); without
    it a negative sum is nan, as SciPy's. Shifted by the largest a (where b != 0), so finite at +-1e3;
    the shift is a constant, which the derivative does not depend on."""
    if b is None and not return_sign:
        return anp.logsumexp(a, axis=axis, keepdims=keepdims)
    ac = np.asarray(concrete(a))
    weighted = np.asarray(concrete(b)) != 0 if b is not None else np.True_
    ac = np.where(weighted, ac, -np.inf)  # a weight of 0 takes no part, even with a = inf
    with np.errstate(invalid="ignore"):
        shift = np.max(ac, axis=axis, keepdims=True) if ac.size else np.zeros((1,) * ac.ndim)
    shift = np.where(np.isfinite(shift), shift, 0.0).astype(np.result_type(ac, np.float32), copy=False)
    terms = anp.exp(a - shift if np.all(weighted) else anp.where(weighted, a - shift, -np.inf))
    total = anp.sum(terms if b is None else b * terms, axis=axis, keepdims=keepdims)
    shift = shift if keepdims else np.squeeze(shift, axis=axis)
    if not return_sign:
        with np.errstate(invalid="ignore"):
            return anp.log(total) + shift
    sign = anp.sign(total)
    with np.errstate(divide="ignore"):
        return anp.log(anp.abs(total)) + shift, sign
