"""`scipy.stats.t`: Student's t distribution, differentiable in x, loc, scale (and df, but in the CDF)."""

from __future__ import annotations

import math
from typing import Any

import adcore.numpy as anp
from adcore_scipy.special import ops as special
from adcore_scipy.stats.arguments import standardize
from adcore_scipy.stats.ops import stdtr


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = standardize(x, loc, scale)
    half = 0.5 * df
    normalizer = special.gammaln(half + 0.5) - special.gammaln(half) - 0.5 * anp.log(df * math.pi)
    return normalizer - anp.log(scale) - (half + 0.5) * anp.log1p(z * z / df)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.exp(logpdf(x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Op stdtr: its derivative in x is the density (d/d df has no closed form: a typed error)."""
    return stdtr(df, standardize(x, loc, scale))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.log(cdf(x, df, loc, scale))
