"""JVPs of adcore/ops/linalg.py: matmul and the solve family."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import refuse_singular, times_step
from adcore.ops.linalg import cofactor, is_transposed, triangle_mask
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import lift_to as _lift_to


def _array(x: Any) -> Any:
    """A constant input given as a list (np.linalg.solve(a, [1.0, 2.0])) as an array; traced values as they are."""
    return x if hasattr(x, "ndim") else np.asarray(x)


def _matmul_jvp(argnum: int):
    def rule(t, ans, a, b):
        a, b = _array(a), _array(b)
        if argnum == 1 and b.ndim == 1 and a.ndim == 2:  # matrix @ vector: one product t @ a^T
            return anp.matmul(t, anp.transpose(a))
        # t_a @ b with b a single matrix: all the tangents' rows through one 2-d product, one BLAS call
        # instead of NumPy's loop over the stack ((28, 31843, 3) @ (3, 3) on one thread: 9.8 -> 4.9 ms)
        if argnum == 0 and b.ndim == 2 and a.ndim >= 1 and t.ndim == a.ndim + 1:
            return anp.reshape(anp.matmul(anp.reshape(t, (-1, b.shape[0])), b), _batch(t, ans))
        if argnum == 0:  # t_a @ b, a 1-d a as a row, batch axes lined up
            ta = t if a.ndim > 1 else anp.reshape(t, (t.shape[0], 1, a.shape[0]))
            share = anp.matmul(_lift_to(ta, max(ta.ndim - 1, b.ndim)), b)
        else:  # a @ t_b, a 1-d b as a column
            tb = t if b.ndim > 1 else anp.reshape(t, (t.shape[0], b.shape[0], 1))
            share = anp.matmul(a, _lift_to(tb, max(a.ndim, tb.ndim - 1)))
        return anp.reshape(share, _batch(t, ans))

    return rule


# --- the solve family (Giles 2008; Murray 2016 for cholesky) ----------------------------------
# t carries a leading batch axis B; a right-hand side b is a vector when 1-d, else a stack of
# matrices: x and the tangents are made matrices (B, ..., n, k) for the algebra.


def _matrix(x: Any, b: Any) -> Any:
    """x (shaped like the solution of a system with right-hand side b) as a stack of matrices."""
    return anp.expand_dims(x, -1) if b.ndim == 1 else x


def _rhs_tangent(t: Any, ans: Any, b: Any) -> Any:
    """b's batched tangent as a stack of matrices whose axes line up under the solution's."""
    if b.ndim == 1:  # (B, n) under x (..., n): (B, 1, ..., 1, n, 1)
        return anp.reshape(t, t.shape[:1] + (1,) * (ans.ndim - 1) + (b.shape[0], 1))
    return _lift_to(t, ans.ndim)


def _like_solution(share: Any, t: Any, ans: Any, b: Any) -> Any:
    return anp.reshape(share[..., 0] if b.ndim == 1 else share, _batch(t, ans))


def _solve_jvp(argnum: int):
    # dx = A^-1 (db - dA x)
    def rule(t, ans, a, b):
        a, b = _array(a), _array(b)
        if argnum == 1:
            return _like_solution(anp.solve(a, _rhs_tangent(t, ans, b)), t, ans, b)
        x = _matrix(ans, b)
        return _like_solution(-anp.solve(a, anp.matmul(_lift_to(t, x.ndim), x)), t, ans, b)

    return rule


def _solve_triangular_jvp(argnum: int):
    # as solve's, with M the triangle T of a (the entries the impl reads) or its transpose
    def rule(t, ans, a, b, trans=0, lower=False, unit_diagonal=False):
        a, b = _array(a), _array(b)

        def solve(rhs):
            return anp.solve_triangular(a, rhs, trans=trans, lower=lower, unit_diagonal=unit_diagonal)

        if argnum == 1:
            return _like_solution(solve(_rhs_tangent(t, ans, b)), t, ans, b)
        x = _matrix(ans, b)
        dt = times_step(t, triangle_mask(a.shape[-1], lower, unit_diagonal, t.dtype))  # unread: no nan
        dm = anp.swapaxes(dt, -1, -2) if is_transposed(trans) else dt
        return _like_solution(-solve(anp.matmul(_lift_to(dm, x.ndim), x)), t, ans, b)

    return rule


def _cho_solve_jvp(argnum: int):
    # dx = A^-1 (db - dA x), A = L L^T (U^T U) from c's triangle, dA = dL L^T + L dL^T
    def rule(t, ans, c, b, lower=True):
        c, b = _array(c), _array(b)
        if argnum == 1:
            return _like_solution(anp.cho_solve(c, _rhs_tangent(t, ans, b), lower=lower), t, ans, b)
        mask = triangle_mask(c.shape[-1], lower, dtype=t.dtype)
        factor, d_factor = times_step(c, mask), times_step(t, mask)  # the unread triangle may hold anything
        half = (
            anp.matmul(d_factor, anp.swapaxes(factor, -1, -2))
            if lower
            else anp.matmul(anp.swapaxes(d_factor, -1, -2), factor)
        )
        x = _matrix(ans, b)
        da_x = anp.matmul(_lift_to(half + anp.swapaxes(half, -1, -2), x.ndim), x)
        return _like_solution(-anp.cho_solve(c, da_x, lower=lower), t, ans, b)

    return rule


def _cholesky_jvp(t, ans, a, upper=False):
    # dL = L Phi(L^-1 dA L^-T), dA the symmetric matrix np.linalg.cholesky reads from a's lower
    # triangle (the upper one with upper=True)
    low = anp.swapaxes(ans, -1, -2) if upper else ans
    t_low = anp.swapaxes(t, -1, -2) if upper else t
    n, dtype = ans.shape[-1], t.dtype
    da = t_low * np.tri(n, dtype=dtype) + anp.swapaxes(t_low * np.tri(n, k=-1, dtype=dtype), -1, -2)
    half = anp.solve_triangular(low, da, lower=True)  # L^-1 dA
    inner = anp.swapaxes(
        anp.solve_triangular(low, anp.swapaxes(half, -1, -2), lower=True), -1, -2
    )  # L^-1 dA L^-T
    dl = anp.matmul(low, inner * (np.tri(n, dtype=dtype) - np.eye(n, dtype=dtype) / 2))
    return anp.swapaxes(dl, -1, -2) if upper else dl


def _det_jvp(t, ans, a):
    return anp.sum(t * cofactor(a, ans), axis=(-2, -1))


def _logabsdet_jvp(t, ans, a):
    refuse_singular(ans)
    return anp.sum(t * anp.swapaxes(anp.inv(a), -1, -2), axis=(-2, -1))


def _slogdet_packed_jvp(t, ans, a):
    refuse_singular(concrete(ans)[..., 1], op="slogdet_packed")
    log = anp.sum(t * anp.swapaxes(anp.inv(a), -1, -2), axis=(-2, -1))
    return anp.stack([np.zeros(log.shape, dtype=log.dtype), log], axis=-1)  # the sign's tangent is 0


# fmt: off
defjvp("matmul",           _matmul_jvp(0), _matmul_jvp(1))
defjvp("inv",              lambda t, ans, a: -anp.matmul(anp.matmul(ans, t), ans))
defjvp("solve",            _solve_jvp(0), _solve_jvp(1))
defjvp("solve_triangular", _solve_triangular_jvp(0), _solve_triangular_jvp(1))
defjvp("cho_solve",        _cho_solve_jvp(0), _cho_solve_jvp(1))
defjvp("cholesky",         _cholesky_jvp)
defjvp("det",              _det_jvp)
defjvp("logabsdet",        _logabsdet_jvp)
defjvp("slogdet_packed",   _slogdet_packed_jvp)
# fmt: on
