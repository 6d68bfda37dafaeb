"""Checks the compiled code runs where a sympy form has no error of its own: NumPy raises for
these inputs, and the compiled code must too, instead of computing nan."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.core import concrete
from adcore.errors import LinearAlgebraError
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
