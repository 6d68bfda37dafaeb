"""`scipy.stats.norm`: the normal distribution's logpdf, pdf, cdf and logcdf, differentiable in x, loc, scale."""

from __future__ import annotations

from typing import Any

import adcore.numpy as anp
from adcore_scipy.stats.arguments import standardize
from adcore_scipy.stats.ops import LOG_SQRT_2PI, log_ndtr


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = standardize(x, loc, scale)
    return -0.5 * (z * z) - anp.log(scale) - LOG_SQRT_2PI


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log Phi((x - loc) / scale), finite (and its derivative) far into the left tail."""
    return log_ndtr(standardize(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return anp.exp(logcdf(x, loc, scale))
