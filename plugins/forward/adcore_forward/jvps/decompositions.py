"""JVPs of adcore/ops/decompositions.py: eigh_packed, eigvalsh, svd_packed, svdvals, qr_packed,
norm, pinv, lstsq_solution.

The tangent of each output of a decomposition, from the same literature as the VJPs (Giles 2008,
Seeger et al. 2017, Townsend 2016, Walter & Lehmann 2018, Golub & Pereyra 1973), with the same
masked 1 / (gap) factors (docs/conventions.md, "decompositions"). `t` is (B,) + a.shape; matmul
broadcasts the decomposition's factors over the batch axis.
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import batched_axis
from adcore.ops.decomposition_rules import (
    degenerate_tolerance,
    diagonal_of,
    gap_inverse,
    inverse_singular_values,
    nonzero_singular_values,
    norm_direction,
    qr_r_inverse,
    refuse_second_order,
    swap_last,
    symmetric_read,
)
from adcore.ops.decompositions import lstsq_rcond, norm_axes
from adcore_forward.jvps.table import defjvp


def _eigh_jvp(t, ans, a, UPLO="L"):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    x = anp.matmul(anp.matmul(swap_last(v), symmetric_read(t, UPLO)), v)
    tol = degenerate_tolerance(w, w.shape[-1])
    refuse_second_order("eigh_packed", w, tol, ans, t)
    f = gap_inverse(w, tol)
    dw = anp.expand_dims(diagonal_of(x), axis=-2)
    return anp.concatenate([dw, anp.matmul(v, f * x)], axis=-2)


def _eigvalsh_jvp(t, ans, a, UPLO="L"):
    refuse_second_order("eigvalsh", ans, degenerate_tolerance(ans, ans.shape[-1]), a, t)
    v = anp.eigh_packed(a, UPLO=UPLO)[..., 1:, :]
    return diagonal_of(anp.matmul(anp.matmul(swap_last(v), symmetric_read(t, UPLO)), v))


def _svd_jvp(t, ans, a):
    m = a.shape[-2]
    u, s, v = ans[..., :m, :], ans[..., m, :], ans[..., m + 1 :, :]
    tol = degenerate_tolerance(s, max(a.shape[-2:]))
    refuse_second_order("svd_packed", s, tol, ans, t, zeros=True)
    tv = anp.matmul(t, v)  # dA V
    tu = anp.matmul(swap_last(t), u)  # dA^T U
    p = anp.matmul(swap_last(u), tv)  # U^T dA V
    sym, anti = (p + swap_last(p)) * 0.5, (p - swap_last(p)) * 0.5
    minus, plus = gap_inverse(s, tol), gap_inverse(s, tol, +1)
    s_inv = anp.expand_dims(inverse_singular_values(s, tol), axis=-2)
    du = anp.matmul(u, minus * sym + plus * anti)
    dv = anp.matmul(v, minus * sym - plus * anti)
    if m > a.shape[-1]:  # (I - U U^T) dA V S^-1
        du = du + (tv - anp.matmul(u, p)) * s_inv
    if a.shape[-1] > m:  # (I - V V^T) dA^T U S^-1
        dv = dv + (tu - anp.matmul(v, swap_last(p))) * s_inv
    ds = anp.expand_dims(diagonal_of(p) * nonzero_singular_values(s, tol), axis=-2)
    return anp.concatenate([du, ds, dv], axis=-2)


def _svdvals_jvp(t, ans, a):
    m = a.shape[-2]
    refuse_second_order("svdvals", ans, degenerate_tolerance(ans, max(a.shape[-2:])), a, t, zeros=True)
    packed = anp.svd_packed(a)
    u, v = packed[..., :m, :], packed[..., m + 1 :, :]
    tol = degenerate_tolerance(ans, max(a.shape[-2:]))
    return diagonal_of(anp.matmul(anp.matmul(swap_last(u), t), v)) * nonzero_singular_values(ans, tol)


def _qr_jvp(t, ans, a):
    # C = Q^T dA R^-1 = Omega + dR R^-1 (Omega antisymmetric, dR R^-1 upper triangular)
    m = a.shape[-2]
    q, r = ans[..., :m, :], ans[..., m:, :]
    r_inv = qr_r_inverse(r)
    t_r = anp.matmul(t, r_inv)  # dA R^-1
    c = anp.matmul(swap_last(q), t_r)
    n = r.shape[-1]
    lower = np.tril(np.ones((n, n), concrete(r).dtype), -1)
    omega = c * lower - swap_last(c * lower)
    upper = c - omega  # dR R^-1
    dq = t_r - anp.matmul(q, upper)
    dr = anp.matmul(upper, r)
    return anp.concatenate([dq, dr], axis=-2)


def _norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    axes, _ = norm_axes(x, ord, axis)
    if not axes:
        return t * norm_direction(x, ans, ord, axis)
    return anp.sum(t * norm_direction(x, ans, ord, axis), axis=batched_axis(axes, x.ndim), keepdims=keepdims)


def _pinv_jvp(t, ans, a, rcond=None, hermitian=False, rtol=None):
    # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, P = pinv(A)
    p, tt = ans, swap_last(t)
    first = -anp.matmul(anp.matmul(p, t), p)
    second = anp.matmul(anp.matmul(p, swap_last(p)), tt - anp.matmul(anp.matmul(tt, a), p))
    third = anp.matmul(tt - anp.matmul(p, anp.matmul(a, tt)), anp.matmul(swap_last(p), p))
    return first + second + third


def _lstsq_jvp(argnum: int):
    # x = P b, P = pinv(a): dx = dP b + P db
    def rule(t, ans, a, b, rcond=None):
        p = anp.pinv(a, rcond=lstsq_rcond(a, rcond))
        if argnum == 1:
            t2 = t if b.ndim == 2 else anp.expand_dims(t, axis=-1)
            return anp.reshape(anp.matmul(p, t2), t.shape[:1] + ans.shape)
        b2 = b if b.ndim == 2 else anp.expand_dims(b, axis=-1)
        return anp.reshape(anp.matmul(_pinv_jvp(t, p, a), b2), t.shape[:1] + ans.shape)

    return rule


# fmt: off
defjvp("eigh_packed",    _eigh_jvp)
defjvp("eigvalsh",       _eigvalsh_jvp)
defjvp("svd_packed",     _svd_jvp)
defjvp("svdvals",        _svdvals_jvp)
defjvp("qr_packed",      _qr_jvp)
defjvp("norm",           _norm_jvp)
defjvp("pinv",           _pinv_jvp)
defjvp("lstsq_solution", _lstsq_jvp(0), _lstsq_jvp(1))
# fmt: on
