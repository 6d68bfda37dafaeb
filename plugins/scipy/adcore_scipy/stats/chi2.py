"""`scipy.stats.chi2`: the chi-squared distribution, the gamma distribution of shape df / 2 and
scale 2 scale; differentiable in x, df, loc, scale (the CDF not in df: no closed form)."""

from __future__ import annotations

from typing import Any

from adcore_scipy.stats import gamma
from adcore_scipy.stats.arguments import refuse_shape_derivative


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma.logpdf(x, 0.5 * df, loc, 2 * scale)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gamma.pdf(x, 0.5 * df, loc, 2 * scale)


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    refuse_shape_derivative("chi2.cdf", "df", df)
    return gamma.cdf(x, 0.5 * df, loc, 2 * scale)


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    refuse_shape_derivative("chi2.logcdf", "df", df)
    return gamma.logcdf(x, 0.5 * df, loc, 2 * scale)
