"""The scipy.stats ops: what each computes and where the conformance checks draw its inputs.

Most of `adcore_scipy.stats` is compositions of other ops (`norm.logpdf` is arithmetic and a
log); these are the pieces that are not: the normal log-CDF in its tails, Student's t CDF
(its derivative is the density, which no composition of betainc gives at t = 0) and the
multivariate normal log-density, an op of its own so that its gradient is one Cholesky
factor and one inverse (O(d^3) once, not per sample) instead of the Cholesky's own rule.
SciPy is imported when an op first runs, not when the plugin is loaded.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidValueError, LinearAlgebraError
from adcore.extend import LazyModule
from adcore.spec import REAL, UNARY_SHAPES, WIDE, Domain, OpSpec, Sample, elementwise_samples

special = LazyModule("scipy.special")
lapack = LazyModule("scipy.linalg.lapack")

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _float_dtype(*values: Any) -> np.dtype:
    """The floating dtype of the result: float32 stays float32, integers become float64."""
    return np.result_type(*values, 1.0)


def _log_ndtr(x: Any) -> np.ndarray:
    return np.asarray(special.log_ndtr(x), dtype=_float_dtype(x))


def _stdtr(df: Any, t: Any) -> np.ndarray:
    return np.asarray(special.stdtr(df, t), dtype=_float_dtype(df, t))


def symmetric_part(cov: Any) -> Any:
    """(cov + cov^T) / 2: the matrix every multivariate normal function reads."""
    return 0.5 * (cov + anp.swapaxes(cov, -1, -2))


def cholesky_of_covariance(cov: Any) -> Any:
    """The lower Cholesky factor of the symmetric part of cov, or a LinearAlgebraError saying that
    the covariance is not positive definite (a multivariate normal needs it; NaN is never returned)."""
    try:
        return anp.cholesky(symmetric_part(cov))
    except LinearAlgebraError as e:
        raise LinearAlgebraError(
            "multivariate_normal: the covariance matrix is not positive definite (its Cholesky "
            f"factorization failed: {e}). A singular covariance (allow_singular=True in SciPy) has "
            "no density to differentiate; add a small multiple of the identity if it is only "
            "positive semidefinite by rounding."
        ) from e


def _spd_inverse(a: Any) -> np.ndarray:
    """inv((a + a^T) / 2) from its Cholesky factor (LAPACK potrf and potri: d^3 / 3 + 2 d^3 / 3)."""
    a = np.asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InvalidValueError(f"op 'spd_inverse': a must be a square matrix (d, d); got shape {a.shape}")
    if a.shape[0] == 0:
        return a.copy()
    sym = 0.5 * (a + a.T)
    potrf, potri = lapack.get_lapack_funcs(("potrf", "potri"), (sym,))
    factor, info = potrf(sym, lower=True)
    if info != 0:
        raise LinearAlgebraError(
            f"op 'spd_inverse': the matrix is not positive definite (its leading minor of order {info} is "
            "not positive); add a small multiple of the identity if it is only positive semidefinite."
        )
    inverse, info = potri(factor, lower=True)
    lower = np.tril(inverse)
    return np.asarray(lower + np.tril(inverse, -1).T, dtype=sym.dtype)


def _mvn_logpdf(x: Any, mean: Any, cov: Any) -> Any:
    """log N(x; mean, cov) over the last axis of x: one Cholesky factor, one triangular solve with
    every sample as a right-hand side. Written with adcore ops, so it runs on tracers too."""
    d = check_dimensions(x, mean, cov)
    low = cholesky_of_covariance(cov)
    r = anp.reshape(x - mean, (-1, d))  # every sample a row
    y = anp.solve_triangular(low, anp.transpose(r), lower=True)  # L^-1 r^T, (d, m)
    half_log_det = anp.sum(anp.log(anp.diagonal(low)))
    out = -0.5 * anp.sum(y * y, axis=0) - half_log_det - d * LOG_SQRT_2PI
    return anp.reshape(out, np.broadcast_shapes(np.shape(x), np.shape(mean))[:-1])


def check_dimensions(x: Any, mean: Any, cov: Any) -> int:
    """d, the covariance's size, or an InvalidValueError unless cov is (d, d) and x and mean end in d."""
    cov_shape, x_shape, mean_shape = np.shape(cov), np.shape(x), np.shape(mean)
    d = cov_shape[-1] if cov_shape else 0
    if len(cov_shape) != 2 or cov_shape[0] != d or x_shape[-1:] != (d,) or mean_shape[-1:] != (d,):
        raise InvalidValueError(
            f"multivariate_normal: cov must be (d, d) and x and mean end in d; got x {x_shape}, "
            f"mean {mean_shape}, cov {cov_shape}"
        )
    return d


# --- samples ---------------------------------------------------------------------------------


def positive_definite(rng: np.random.Generator, d: int, dtype: Any) -> np.ndarray:
    """B B^T / d + I, B uniform in [-2, 2]: well conditioned, symmetric."""
    b = REAL.draw(rng, (d, d), np.float64)
    return np.asarray(b @ b.T / d + np.eye(d), dtype=dtype)


_MVN_SHAPES = (((1,), (1,), 1), ((3,), (3,), 3), ((4, 2), (2,), 2), ((2, 3, 3), (3,), 3), ((2, 3), (2, 3), 3))


def mvn_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample((REAL.draw(rng, x, dtype), REAL.draw(rng, m, dtype), positive_definite(rng, d, dtype)))
        for x, m, d in _MVN_SHAPES
    ]


def _spd_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [Sample((positive_definite(rng, d, dtype),)) for d in (1, 2, 3, 5)]


def _stdtr_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """df as Python numbers (held constant: no derivative in df), t drawn; and df as an array."""
    drawn = [Sample((df, WIDE.draw(rng, s, dtype))) for df in (0.7, 3.0, 30.0) for s in UNARY_SHAPES]
    return drawn + [Sample((30.0, np.array([0.0, -1e3, 1e3], dtype=dtype)))]


# --- the ops ---------------------------------------------------------------------------------

log_ndtr = OpSpec(
    "log_ndtr",
    _log_ndtr,
    numpy=("scipy.special.log_ndtr",),
    samples=elementwise_samples(Domain(-40.0, 8.0)),
    elementwise=True,
    doc="log of the standard normal CDF (scipy.special.log_ndtr), finite far into the left tail "
    "(-1e3 gives -500000.0 - log(1000) - 0.919); its derivative pdf/cdf is exp(log pdf - log_ndtr)",
)
stdtr = OpSpec(
    "stdtr",
    _stdtr,
    nin=2,
    numpy=("scipy.special.stdtr",),
    samples=_stdtr_samples,
    elementwise=True,
    doc="Student's t CDF at t with df degrees of freedom (scipy.special.stdtr(df, t)); the derivative "
    "in t is the density, in df not closed form: MissingRuleError naming df",
)
multivariate_normal_logpdf = OpSpec(
    "multivariate_normal_logpdf",
    _mvn_logpdf,
    nin=3,
    samples=mvn_samples,
    traceable=True,
    doc="log N(x; mean, cov), x (..., d) (each sample a row, as SciPy's), mean (d,) or broadcasting "
    "with x, cov (d, d): its symmetric part is read, so its gradient is symmetric; not positive "
    "definite: LinearAlgebraError",
)

spd_inverse = OpSpec(
    "spd_inverse",
    _spd_inverse,
    samples=_spd_samples,
    doc="inv((a + a^T) / 2) of a positive definite a (d, d), by its Cholesky factor: a third of inv's "
    "work; its derivative is symmetric; not positive definite: LinearAlgebraError",
)

OPS: tuple[OpSpec, ...] = (log_ndtr, stdtr, multivariate_normal_logpdf, spd_inverse)
