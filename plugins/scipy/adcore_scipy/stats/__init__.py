"""`scipy.stats`'s distributions, differentiable: the same names and signatures as SciPy's.

`adcore_scipy.stats.norm.logpdf(x, loc, scale)` is differentiable in x, loc and scale on every
backend: the densities are compositions of adcore ops (arithmetic, logs, scipy.special's gammaln,
xlogy, betaln) and of this module's three ops (log_ndtr, stdtr, multivariate_normal_logpdf).
Discrete arguments (poisson's k and loc) are not differentiable, nor are the CDFs' shape
parameters (no closed form): asking for either is a typed error naming it.
"""

from adcore_scipy.stats import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]
