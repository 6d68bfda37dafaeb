"""`scipy.linalg`'s functions, differentiable: the same names and signatures as SciPy's.

SciPy's linalg functions convert their arguments to arrays (no dispatch a traced value could
take), so differentiable code calls these instead: `from adcore_scipy import linalg` then
`linalg.expm(a)`. On plain arrays they compute what SciPy computes (up to cho_factor's unused
triangle, zeros here); `overwrite_*` and `check_finite` are accepted and have no effect.
scipy is imported when an op first runs, not by this module.

solve_triangular, cho_factor and cho_solve are the core ops solve_triangular, cholesky and
cho_solve. cho_solve differentiates through c's triangle only (the `lower` one), as the factor
cho_factor returns: the entries of the other triangle are not read and get 0, so a gradient
with respect to c is the gradient with respect to the Cholesky factor itself.
"""

from __future__ import annotations

from typing import Any

from adcore import ops as core_ops
from adcore.errors import InvalidValueError
from adcore_scipy.linalg.ops import check_bands
from adcore_scipy.linalg.ops import expm as _expm
from adcore_scipy.linalg.ops import solve_banded as _solve_banded
from adcore_scipy.linalg.ops import solve_sylvester as _solve_sylvester
from adcore_scipy.linalg.ops import sqrtm as _sqrtm

__all__ = ["cho_factor", "cho_solve", "expm", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm"]


def solve_triangular(
    a: Any,
    b: Any,
    trans: Any = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """x with T x = b (T^T x = b for trans 1, 'T', 'C'), T a's lower or upper triangle."""
    return core_ops.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """(c, lower): c the Cholesky factor of a (U with a = U^T U from a's upper triangle, or L with
    a = L L^T from its lower one), zeros in its other triangle."""
    return core_ops.cholesky(a, upper=not lower), bool(lower)


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """x with a x = b, a given by cho_factor's (c, lower)."""
    c, lower = c_and_lower
    return core_ops.cho_solve(c, b, lower=bool(lower))


def expm(A: Any) -> Any:
    """The matrix exponential, batched over leading axes."""
    return _expm(A)


def sqrtm(A: Any, disp: Any = None, blocksize: Any = None) -> Any:
    """The principal matrix square root (blocksize, deprecated in SciPy, is ignored)."""
    if disp is not None and not disp:
        raise InvalidValueError(
            "adcore_scipy.linalg.sqrtm: disp=False (SciPy's deprecated (X, error estimate) result) is "
            "not supported; leave disp out and estimate the error as norm(X @ X - A) / norm(A)"
        )
    return _sqrtm(A)


def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """X with a X + X b = q."""
    return _solve_sylvester(a, b, q)


def solve_banded(
    l_and_u: tuple,
    ab: Any,
    b: Any,
    overwrite_ab: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """x with A x = b, A banded with l sub- and u superdiagonals stored as ab[u + i - j, j] = A[i, j]."""
    return _solve_banded(ab, b, l_and_u=check_bands(l_and_u, ab))
