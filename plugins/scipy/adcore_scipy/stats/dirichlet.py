"""`scipy.stats.dirichlet`: logpdf and pdf, differentiable in x and alpha.

As SciPy's: x holds the components along its first axis, (K, ...) or (K - 1, ...) (the last
component is then 1 - the sum of the others); x off the simplex is a ValueError.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.errors import InvalidValueError, UnsupportedByBackendError
from adcore_scipy.special import ops as special


def _components(x: Any, k: int) -> Any:
    """x with all K components along the first axis, checked to lie on the simplex."""
    n = np.shape(x)[0] if np.ndim(x) else 0
    if n == k - 1:
        x = anp.concatenate([x, 1 - anp.sum(x, axis=0, keepdims=True)], axis=0)
    elif n != k:
        raise InvalidValueError(
            f"dirichlet: x must hold K = {k} components (or K - 1) along its first axis; got shape {np.shape(x)}"
        )
    try:
        values = np.asarray(concrete(x))
    except UnsupportedByBackendError:  # symbolic traces with symbols: no numbers to check
        return x
    if np.any(values < 0) or np.any(values > 1):
        raise InvalidValueError("dirichlet: each entry of x must be in [0, 1] (the simplex)")
    if np.any(np.abs(np.sum(values, axis=0) - 1) > 1e-9):
        raise InvalidValueError("dirichlet: the components of x must sum to 1 (the simplex)")
    return x


def logpdf(x: Any, alpha: Any) -> Any:
    k = np.shape(alpha)[-1] if np.ndim(alpha) == 1 else -1
    if k < 2:
        raise InvalidValueError(
            f"dirichlet: alpha must be a vector of K >= 2 concentrations; got {np.shape(alpha)}"
        )
    x = _components(x, k)
    column = anp.reshape(alpha, (k,) + (1,) * (np.ndim(x) - 1))  # under x's components
    log_normalizer = anp.sum(special.gammaln(alpha)) - special.gammaln(anp.sum(alpha))
    return anp.sum(special.xlogy(column - 1, x), axis=0) - log_normalizer


def pdf(x: Any, alpha: Any) -> Any:
    return anp.exp(logpdf(x, alpha))
