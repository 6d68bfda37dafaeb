"""`scipy.stats.multivariate_normal`: logpdf and pdf, differentiable in x, mean and cov.

As SciPy's: x (..., d) holds one sample per row (a vector of n numbers is n samples when d = 1),
the result is squeezed, cov may be a scalar (cov * I) or a vector (its diagonal). The density
reads cov's symmetric part, so the gradient in cov is symmetric (torch's); cov not positive
definite is a LinearAlgebraError. One Cholesky factor for all samples (op
multivariate_normal_logpdf), and one inverse for the gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidValueError, UnsupportedFunctionError
from adcore_scipy.stats.ops import multivariate_normal_logpdf


def _covariance(cov: Any, d: int) -> Any:
    """cov as a (d, d) matrix: a scalar is cov * I, a vector the diagonal."""
    if np.ndim(cov) == 0:
        return cov * np.eye(d)
    if np.ndim(cov) == 1:
        return anp.expand_dims(cov, 0) * np.eye(d)
    return cov


def _dimension(mean: Any, cov: Any) -> int:
    """d as SciPy finds it: from the mean if given (a scalar mean is d = 1), else from cov."""
    if mean is not None:
        return np.shape(mean)[-1] if np.ndim(mean) else 1
    return np.shape(cov)[-1] if np.ndim(cov) else 1


def logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    if allow_singular:
        raise InvalidValueError(
            "multivariate_normal.logpdf: allow_singular=True is not supported: a singular covariance "
            "has no density on the whole space to differentiate"
        )
    d = _dimension(mean, cov)
    if mean is None:
        mean = np.zeros(d)
    if np.ndim(mean) == 0:
        mean = anp.reshape(mean, (1,))
    if np.ndim(x) == 0:
        x = anp.reshape(x, (1,))
    elif np.ndim(x) == 1 and d == 1:
        x = anp.expand_dims(x, -1)  # n samples of one dimension
    out = multivariate_normal_logpdf(x, mean, _covariance(cov, d))
    return anp.squeeze(out) if 1 in np.shape(out) else out


def pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    return anp.exp(logpdf(x, mean, cov, allow_singular))


def _no_cdf(*args: Any, **kwargs: Any) -> Any:
    raise UnsupportedFunctionError(
        "multivariate_normal.cdf / logcdf: SciPy integrates it numerically; it has no closed form "
        "to differentiate, and adcore_scipy does not provide it"
    )


cdf = logcdf = _no_cdf
