"""Sympy rules of adcore/ops/linalg.py: matmul and the solve family."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.extend import reduce_with
from adcore.ops.linalg import check_right_hand_side, check_square, is_transposed, triangle_mask
from adcore_symbolic.sympy_rules.table import defsympy, fn, sp


def _matmul(a: Any, b: Any) -> np.ndarray:
    """a @ b with each entry one sympy Add of its products (NumPy's object matmul adds them
    one at a time, and each sympy Add then copies the terms so far: quadratic)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    row, column = a.ndim == 1, b.ndim == 1
    a = a[None, :] if row else a
    b = b[:, None] if column else b
    out = reduce_with(sp.Add, a[..., :, :, None] * b[..., None, :, :], axis=-2)
    out = out[..., 0, :] if row else out
    return out[..., 0] if column else out


# --- the solve family: sympy Matrix algebra, one matrix of the stack at a time ----------------


def _per_matrix(fn: Any, a: Any, *rest: Any, core: tuple[int, ...] = ()) -> np.ndarray:
    """fn(a's matrix as a sympy Matrix, *rest's matching parts) for each matrix of the stack a,
    rest broadcast over a's batch axes; fn returns a sympy Matrix (an expression when core is ())."""
    a = np.asarray(a, dtype=object)
    rest = [np.asarray(r, dtype=object) for r in rest]
    batch = np.broadcast_shapes(a.shape[:-2], *(r.shape[:-2] for r in rest))
    a = np.broadcast_to(a, batch + a.shape[-2:])
    rest = [np.broadcast_to(r, batch + r.shape[-2:]) for r in rest]
    out = np.empty(batch + core, dtype=object)
    for index in np.ndindex(batch):
        value = fn(sp.Matrix(a[index].tolist()), *(sp.Matrix(r[index].tolist()) for r in rest))
        out[index] = np.array(value.tolist(), dtype=object).reshape(core) if core else value
    return out


def _with_rhs(fn: Any, a: Any, b: Any) -> np.ndarray:
    """fn(A, B) -> X solving with a right-hand side b: a vector when 1-d, else a stack of matrices."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if b.ndim == 1:
        return _with_rhs(fn, a, b[:, None])[..., 0]
    return _per_matrix(fn, a, b, core=b.shape[-2:])


def _inverse(m: Any, op: str = "inv") -> Any:
    """adjugate / determinant, the determinant checked (compiled code raises for a singular m)."""
    return m.adjugate() / fn.nonsingular_in(op)(m.det(method="berkowitz"))


def _checked_pivots(m: Any, op: str) -> Any:
    """The triangle m with its diagonal, which the triangular solves divide by, checked."""
    m = m.copy()
    for i in range(m.rows):
        m[i, i] = fn.nonsingular_in(op)(m[i, i])
    return m


def _cholesky_lower(m: Any) -> Any:
    """The Cholesky factor from m's lower triangle only, as np.linalg.cholesky reads it."""
    n = m.rows
    low = sp.zeros(n, n)
    for i in range(n):
        for j in range(i + 1):
            rest = m[i, j] - sum((low[i, k] * low[j, k] for k in range(j)), sp.S.Zero)
            low[i, j] = fn.cholesky_pivot(rest) if i == j else rest / low[j, j]
    return low


def _cholesky(a: Any, upper: bool = False) -> np.ndarray:
    a = np.asarray(a, dtype=object)
    n = a.shape[-1]
    if upper:
        return np.swapaxes(_per_matrix(_cholesky_lower, np.swapaxes(a, -1, -2), core=(n, n)), -1, -2)
    return _per_matrix(_cholesky_lower, a, core=(n, n))


def _solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False):
    a = np.asarray(a, dtype=object)
    n = a.shape[-1]
    mask = triangle_mask(n, lower, unit_diagonal)
    triangle = np.where(mask == 1, a, 0) + (np.eye(n, dtype=int) if unit_diagonal else 0)
    transposed = is_transposed(trans)
    if transposed:
        triangle = np.swapaxes(triangle, -1, -2)
    solve_lower = lower != transposed  # the transpose of a lower triangle is upper

    def solve(m, rhs):
        m = _checked_pivots(m, "solve_triangular")
        return m.lower_triangular_solve(rhs) if solve_lower else m.upper_triangular_solve(rhs)

    return _with_rhs(solve, triangle, b)


def _cho_solve(c: Any, b: Any, lower: bool = True) -> np.ndarray:
    c = np.asarray(c, dtype=object)
    factor = np.where(triangle_mask(c.shape[-1], lower) == 1, c, 0)
    if not lower:  # U^T U = L L^T with L = U^T
        factor = np.swapaxes(factor, -1, -2)

    def solve(m, rhs):
        m = _checked_pivots(m, "cho_solve")
        return m.T.upper_triangular_solve(m.lower_triangular_solve(rhs))

    return _with_rhs(solve, factor, b)


def _square(op: str, a: Any) -> Any:
    check_square(op, "a", a)
    return a


def _with_checks(op: str, rule: Any, name: str = "a") -> Any:
    """rule, first checking its matrix and right-hand side as the op's impl does."""

    def checked(a, b, **params):
        check_square(op, name, a)
        check_right_hand_side(op, a, b)
        return rule(a, b, **params)

    return checked


def _cholesky_checked(a: Any, upper: bool = False) -> np.ndarray:
    return _cholesky(_square("cholesky", a), upper)


def _sign_and_log_abs_det(m: Any) -> Any:
    """slogdet_packed of one matrix: (sign(det m), log|det m|)."""
    d = m.det(method="berkowitz")
    return sp.Matrix([fn.sign(d), fn.logabs(d)])


# fmt: off
defsympy("matmul",           _matmul)
defsympy("inv",              lambda a: _per_matrix(_inverse, _square("inv", a), core=np.shape(a)[-2:]))
defsympy("solve",            _with_checks("solve", lambda a, b: _with_rhs(lambda m, rhs: _inverse(m, "solve") * rhs, a, b)))
defsympy("solve_triangular", _with_checks("solve_triangular", _solve_triangular))
defsympy("cho_solve",        _with_checks("cho_solve", _cho_solve, "c"))
defsympy("cholesky",         _cholesky_checked)
defsympy("det",              lambda a: _per_matrix(lambda m: m.det(method="berkowitz"), _square("det", a)))
defsympy("logabsdet",        lambda a: _per_matrix(lambda m: fn.logabs(m.det(method="berkowitz")),
                                                   _square("logabsdet", a)))
defsympy("slogdet_packed",   lambda a: _per_matrix(_sign_and_log_abs_det, _square("slogdet_packed", a), core=(2,)))
# fmt: on
