"""`scipy.stats.poisson`: the Poisson distribution's logpmf, pmf, cdf and logcdf, differentiable in mu.

k and loc are discrete: a derivative asked in either is an InvalidInputError naming it. Off the
support (k - loc not a non-negative integer) logpmf is -inf, as SciPy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore_scipy.special import ops as special
from adcore_scipy.stats.arguments import refuse_discrete


def _count(function: str, k: Any, loc: Any) -> np.ndarray:
    """k - loc as a float array, both checked to be constants."""
    refuse_discrete(function, "k", k)
    refuse_discrete(function, "loc", loc)
    return np.asarray(k, dtype=np.float64) - np.asarray(loc, dtype=np.float64)


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    n = _count("poisson.logpmf", k, loc)
    on_support = (n >= 0) & (n == np.floor(n))
    n = np.where(on_support, n, 0.0)
    value = special.xlogy(n, mu) - mu - special.gammaln(n + 1)
    return anp.where(on_support, value, -np.inf)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return anp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Q(floor(k - loc) + 1, mu), the upper incomplete gamma: d/dmu is -pmf(floor(k - loc))."""
    n = np.floor(_count("poisson.cdf", k, loc))
    on_support = n >= 0
    value = special.gammaincc(np.where(on_support, n, 0.0) + 1, mu)
    return anp.where(on_support, value, 0.0)


def logcdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return anp.log(cdf(k, mu, loc))
