"""The compositions of scipy.stats checked by conformance like ops: Gaussian log-likelihoods and the
multivariate normal log-density over a batch, as functions of their parameters."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.spec import POSITIVE, REAL, WIDE, Case, Sample
from adcore_scipy.stats import multivariate_normal, norm
from adcore_scipy.stats.ops import mvn_samples


def norm_logpdf_sum(x: Any, loc: Any, scale: Any) -> Any:
    """sum(norm.logpdf(x, loc, scale)): a Gaussian log-likelihood."""
    return anp.sum(norm.logpdf(x, loc, scale))


def norm_logcdf_sum(x: Any, loc: Any, scale: Any) -> Any:
    """sum(norm.logcdf(x, loc, scale)) + sum(norm.cdf(x, loc, scale))."""
    return anp.sum(norm.logcdf(x, loc, scale)) + anp.sum(norm.cdf(x, loc, scale))


def mvn_logpdf_sum(x: Any, mean: Any, cov: Any) -> Any:
    """sum(multivariate_normal.logpdf(x, mean, cov)) over a batch of samples."""
    return anp.sum(multivariate_normal.logpdf(x, mean, cov))


def _norm_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    shapes = (((), (), ()), ((4,), (), ()), ((2, 3), (3,), (2, 1)))
    return [
        Sample((WIDE.draw(rng, x, dtype), REAL.draw(rng, m, dtype), POSITIVE.draw(rng, s, dtype)))
        for x, m, s in shapes
    ]


def _mvn_case_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return mvn_samples(rng, dtype)[1:4]


CASES: tuple[Case, ...] = (
    Case("norm_logpdf", norm_logpdf_sum, _norm_samples, argnums=(0, 1, 2), doc=norm_logpdf_sum.__doc__ or ""),
    Case("norm_logcdf", norm_logcdf_sum, _norm_samples, argnums=(0, 1, 2), doc=norm_logcdf_sum.__doc__ or ""),
    Case(
        "mvn_logpdf", mvn_logpdf_sum, _mvn_case_samples, argnums=(0, 1, 2), doc=mvn_logpdf_sum.__doc__ or ""
    ),
)
