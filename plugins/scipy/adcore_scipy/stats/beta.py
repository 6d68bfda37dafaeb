"""`scipy.stats.beta`: the beta distribution, differentiable in x, a, b, loc, scale (the CDF not in a
and b: no closed form). Outside the support [loc, loc + scale] logpdf is -inf, as SciPy's."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore_scipy.special import ops as special
from adcore_scipy.stats.arguments import refuse_shape_derivative, standardize


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = standardize(x, loc, scale)
    inside = (z >= 0) & (z <= 1)
    z = anp.where(inside, z, 0.5)  # no log of a negative number, even in the branch not taken
    value = special.xlogy(a - 1, z) + special.xlog1py(b - 1, -z) - special.betaln(a, b) - anp.log(scale)
    return anp.where(inside, value, -np.inf)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.exp(logpdf(x, a, b, loc, scale))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    refuse_shape_derivative("beta.cdf", "a", a)
    refuse_shape_derivative("beta.cdf", "b", b)
    z = standardize(x, loc, scale)
    return special.betainc(a, b, anp.clip(z, 0.0, 1.0))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.log(cdf(x, a, b, loc, scale))
