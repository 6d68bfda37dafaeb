"""Checks the compiled code runs where a sympy form has no error of its own: NumPy raises for
these inputs, and the compiled code must too, instead of computing nan."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, concrete
from adcore.errors import InvalidValueError, LinearAlgebraError
from adcore_symbolic.errors import SymbolicControlFlowError


def cholesky_pivot(x: Any) -> Any:
    """sqrt of a Cholesky pivot, which is positive exactly when the matrix is positive definite.
    Traced by an outer symbolic derivative (a symbolic-over-symbolic Hessian), x has no number
    and the check is not carried into the outer code: there a non-positive pivot still gives nan."""
    try:
        value = np.asarray(concrete(x))
    except SymbolicControlFlowError:
        return ops.sqrt(x)
    if not np.all(value > 0):
        raise LinearAlgebraError(
            "op 'cholesky': Matrix is not positive definite (a pivot of the symbolic Cholesky factor is "
            "not positive). np.linalg.cholesky reads only the lower triangle of a symmetric positive "
            "definite matrix; add a small multiple of the identity (jitter) if a is only positive semidefinite."
        )
    return ops.sqrt(x)


_ADVICE = {
    "inv": "Singular matrix. The matrix has no inverse; check it is well conditioned (np.linalg.cond).",
    "solve": "Singular matrix. The matrix has no inverse; check it is well conditioned (np.linalg.cond).",
    "solve_triangular": "Singular matrix. A zero on the triangle's diagonal makes it singular.",
    "cho_solve": "Singular matrix. A zero on the Cholesky factor's diagonal makes it singular.",
    "logabsdet": "a is singular, log|det a| = -inf (np.linalg.slogdet), which has no derivative; det(a) "
    "has one (the cofactor matrix) if that is what you need.",
}


def nonsingular(d: Any, op: str) -> Any:
    """d, a determinant or triangular pivot the symbolic forms of op divide by, if it is not 0.
    d == 0 exactly is where NumPy's LU refuses the matrix; a nearly singular one gives huge
    values, as NumPy's does. A determinant that underflows to 0 (entries near 1e-100 and less) is
    refused too, and one that overflows to inf, which would give 0 for the inverse: the
    adjugate/determinant form cannot compute those in floating point. Traced by an outer symbolic
    derivative (a symbolic-over-symbolic Hessian), d has no number and is not checked."""
    try:
        value = np.asarray(concrete(d))
    except SymbolicControlFlowError:
        return d
    if np.any(value == 0):
        raise LinearAlgebraError(
            f"op {op!r}: {_ADVICE[op]} (backend 'symbolic': a determinant or pivot it divides by is 0 in "
            "floating point; if a is only badly scaled, its entries near 1e-100, scale it or use backend 'reverse')"
        )
    if op in ("inv", "solve", "logabsdet") and np.any(np.isinf(value)):
        raise LinearAlgebraError(
            f"op {op!r}: backend 'symbolic' computes a's inverse as adjugate / determinant, and the "
            "determinant overflows to inf (entries near 1e100 and more); scale a or use backend 'reverse'"
        )
    return d


def norm_nonzero(x: Any, why: str) -> Any:
    """x, where a derivative of the norm divides by it: an InvalidValueError where it is 0, as
    reverse and forward raise (`why` says which derivative has none there)."""
    try:
        value = np.asarray(concrete(x))
    except SymbolicControlFlowError:
        return x
    if np.any(value == 0):
        raise InvalidValueError(
            f"op 'norm': {why} (backend 'symbolic'); take the derivative where the norm and its entries "
            "are nonzero"
        )
    return x


def _refuse_norm(why: str) -> InvalidValueError:
    return InvalidValueError(
        f"op 'norm': {why} (backend 'symbolic'); take the derivative where the norm and its entries "
        "are nonzero"
    )


def norm_root_slope(s: Any, p: float) -> Any:
    """d s**(1/p) / ds for the sum s of |x|**p, 0 at s = 0 (the gradient's subgradient 0 at x = 0);
    an outer derivative there (a traced s) is an InvalidValueError, the gradient being unbounded nearby."""
    try:
        value = np.asarray(concrete(s))
    except SymbolicControlFlowError:  # an outer symbolic derivative: s**(1/p-2) is inf at 0, not 0
        return s ** (1 / p - 1) / p
    zero = value == 0
    if np.any(zero) and isinstance(s, Tracer):
        raise _refuse_norm("no second derivative at x = 0 (its gradient there is the subgradient 0)")
    safe = ops.where(zero, np.ones_like(value), s)
    return ops.where(zero, np.zeros_like(value), safe ** (1 / p - 1) / p)


def norm_signed_power(x: Any, q: float) -> Any:
    """sign(x) |x|**q in the p-norm's gradient (q = p - 1): an InvalidValueError at a zero entry
    where it is infinite (q < 0), or where an outer derivative (a traced x) asks its slope, infinite
    at 0 for q < 1."""
    try:
        value = np.asarray(concrete(x))
    except SymbolicControlFlowError:  # an outer symbolic derivative: |x|**(q-1) is inf at 0, not 0
        return ops.sign(x) * ops.abs(x) ** q
    if 0 < q < 1 and isinstance(x, Tracer) or q < 0:
        if np.any(value == 0):
            raise _refuse_norm(f"no derivative of |x|**{q} at a zero entry (an infinite slope at 0)")
    return ops.sign(x) * ops.abs(x) ** q
