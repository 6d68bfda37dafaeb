"""`scipy.stats.gamma`: the gamma distribution (shape a), differentiable in x, a, loc, scale.

Outside the support (x < loc) logpdf is -inf with derivative 0, as SciPy's value; the CDF's
derivative in a has no closed form (refused with a typed error)."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore_scipy.special import ops as special
from adcore_scipy.stats.arguments import refuse_shape_derivative, standardize


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = standardize(x, loc, scale)
    inside = z >= 0
    z = anp.where(inside, z, 1.0)  # no log of a negative number, even in the branch not taken
    value = special.xlogy(a - 1, z) - z - special.gammaln(a) - anp.log(scale)
    return anp.where(inside, value, -np.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    refuse_shape_derivative("gamma.cdf", "a", a)
    z = standardize(x, loc, scale)
    return special.gammainc(a, anp.where(z > 0, z, 0.0))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    refuse_shape_derivative("gamma.logcdf", "a", a)
    return anp.log(cdf(x, a, loc, scale))
