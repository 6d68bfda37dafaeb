"""VJPs of adcore/ops/linalg.py: matmul and the solve family."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import refuse_singular, times_step, unbroadcast
from adcore.ops.linalg import cofactor, is_transposed, triangle_mask
from adcore_reverse.vjps.table import defvjp, defvjp_steps
from adcore_reverse.zeros import step_cotangent


def _array(x: Any) -> Any:
    """A constant input given as a list (np.linalg.solve(a, [1.0, 2.0])) as an array; traced values as they are."""
    return x if hasattr(x, "ndim") else np.asarray(x)


def _matmul_vjp(argnum: int):
    def rule(g, ans, a, b):
        a, b = _array(a), _array(b)
        # a vector and a matrix (a layer's x @ W): one op each, not the five of the general case
        # below (under vmap each op is a batch rule's call: per-example gradients of an MLP)
        if a.ndim == 1 and b.ndim == 2:
            return anp.matmul(b, g) if argnum == 0 else anp.outer(a, g)
        if a.ndim == 2 and b.ndim == 1:
            return anp.outer(g, b) if argnum == 0 else anp.matmul(g, a)
        # promote 1-d operands to matrices as matmul does, then A^T G and G B^T
        a2 = a if a.ndim > 1 else anp.reshape(a, (1, a.shape[0]))
        b2 = b if b.ndim > 1 else anp.reshape(b, (b.shape[0], 1))
        # restore the dropped axes: b's last first, so a 0-d g (vector @ vector) becomes 1x1
        g2 = g
        if b.ndim == 1:
            g2 = anp.expand_dims(g2, -1)
        if a.ndim == 1:
            g2 = anp.expand_dims(g2, -2)
        if argnum == 0:
            return anp.reshape(unbroadcast(anp.matmul(g2, anp.swapaxes(b2, -1, -2)), a2), a.shape)
        return anp.reshape(unbroadcast(anp.matmul(anp.swapaxes(a2, -1, -2), g2), b2), b.shape)

    return rule


# --- the solve family (Giles 2008; Murray 2016 for cholesky) ----------------------------------
# A right-hand side b is a vector when 1-d, else a stack of matrices: x and g are made matrices
# (..., n, k) for the algebra, and the cotangents summed back to each input's shape.


def _matrix(x: Any, b: Any) -> Any:
    """x (shaped like the solution of a system with right-hand side b) as a stack of matrices."""
    return anp.expand_dims(x, -1) if b.ndim == 1 else x


def _like_rhs(gb: Any, b: Any) -> Any:
    """A cotangent computed as a stack of matrices, back in b's shape."""
    return unbroadcast(gb[..., 0] if b.ndim == 1 else gb, b)


def _expand(g: Any) -> Any:
    """A cotangent per matrix of a stack, (...,), as (..., 1, 1)."""
    return anp.reshape(g, g.shape + (1, 1))


def _solve_vjp(argnum: int):
    def rule(g, ans, a, b):
        a, b = _array(a), _array(b)
        gb = anp.solve(anp.swapaxes(a, -1, -2), _matrix(g, b))  # A^-T g
        if argnum == 1:
            return _like_rhs(gb, b)
        return unbroadcast(-anp.matmul(gb, anp.swapaxes(_matrix(ans, b), -1, -2)), a)  # -A^-T g x^T

    return rule


def _solve_triangular_vjp(argnum: int):
    # x = M^-1 b with M the triangle T of a or its transpose: as solve's, the gradient of a kept to
    # the entries the impl reads
    def rule(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
        a, b = _array(a), _array(b)
        transposed = is_transposed(trans)
        gb = anp.solve_triangular(
            a, _matrix(g, b), trans=int(not transposed), lower=lower, unit_diagonal=unit_diagonal
        )
        if argnum == 1:
            return _like_rhs(gb, b)
        x = _matrix(ans, b)
        ga = (
            anp.matmul(x, anp.swapaxes(gb, -1, -2)) if transposed else anp.matmul(gb, anp.swapaxes(x, -1, -2))
        )
        return step_cotangent(-ga, triangle_mask(a.shape[-1], lower, unit_diagonal, g.dtype), a)  # unread: 0

    return rule


def _cho_solve_vjp(argnum: int):
    # x = A^-1 b with A = L L^T (U^T U): gb = A^-1 g, gA = -gb x^T, gL = (gA + gA^T) L (gU = U (gA + gA^T))
    def rule(g, ans, c, b, lower=True):
        c, b = _array(c), _array(b)
        gb = anp.cho_solve(c, _matrix(g, b), lower=lower)
        if argnum == 1:
            return _like_rhs(gb, b)
        n = c.shape[-1]
        mask = triangle_mask(n, lower, dtype=g.dtype)
        factor = times_step(c, mask)  # the triangle cho_factor leaves unread may hold anything
        ga = -anp.matmul(gb, anp.swapaxes(_matrix(ans, b), -1, -2))
        both = ga + anp.swapaxes(ga, -1, -2)
        return step_cotangent(anp.matmul(both, factor) if lower else anp.matmul(factor, both), mask, c)

    return rule


def _cholesky_vjp(g, ans, a, upper=False):
    # Murray's S = L^-T Phi(L^T gL) L^-1; np.linalg.cholesky reads only a's lower triangle, so the
    # gradient is Phi(S + S^T) there (the symmetric gradient S_sym = (S + S^T)/2 folded onto it)
    low, g_low = (anp.swapaxes(ans, -1, -2), anp.swapaxes(g, -1, -2)) if upper else (ans, g)
    phi = _phi(ans.shape[-1], g.dtype)
    inner = anp.solve_triangular(low, phi * anp.matmul(anp.swapaxes(low, -1, -2), g_low), trans=1, lower=True)
    s = anp.swapaxes(anp.solve_triangular(low, anp.swapaxes(inner, -1, -2), trans=1, lower=True), -1, -2)
    grad = phi * (s + anp.swapaxes(s, -1, -2))
    return anp.swapaxes(grad, -1, -2) if upper else grad


def _phi(n: int, dtype: Any) -> np.ndarray:
    """The lower triangle with the diagonal halved, as a mask."""
    return np.tri(n, dtype=dtype) - np.eye(n, dtype=dtype) / 2


def _det_vjp(g, ans, a):
    return _expand(g) * cofactor(a, ans)


def _logabsdet_vjp(g, ans, a):
    refuse_singular(ans)
    return _expand(g) * anp.swapaxes(anp.inv(a), -1, -2)


def _slogdet_packed_vjp(g, ans, a):
    # the sign's cotangent g[..., 0] meets a derivative of 0
    refuse_singular(concrete(ans)[..., 1], op="slogdet_packed")
    return _expand(g[..., 1]) * anp.swapaxes(anp.inv(a), -1, -2)


# fmt: off
defvjp("matmul",           _matmul_vjp(0), _matmul_vjp(1))
defvjp("inv",              lambda g, ans, a: -anp.matmul(anp.matmul(anp.swapaxes(ans, -1, -2), g), anp.swapaxes(ans, -1, -2)))
defvjp("solve",            _solve_vjp(0), _solve_vjp(1))
# the triangle a rule does not read gets a structural zero (zeros.step_cotangent): no 0 * nan below
defvjp_steps("solve_triangular", _solve_triangular_vjp(0), _solve_triangular_vjp(1))
defvjp_steps("cho_solve",        _cho_solve_vjp(0), _cho_solve_vjp(1))
defvjp("cholesky",         _cholesky_vjp)
defvjp("det",              _det_vjp)
defvjp("logabsdet",        _logabsdet_vjp)
defvjp("slogdet_packed",   _slogdet_packed_vjp)
# fmt: on
