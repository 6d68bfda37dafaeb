"""JVPs of adcore/ops/decompositions.py and norms.py: eigh_packed, eigvalsh, svd_packed, svdvals, qr_packed,
norm, pinv, lstsq_solution, lstsq_residuals, lstsq_singular_values.

The tangent of each output of a decomposition, from the same literature as the VJPs (Giles 2008,
Seeger et al. 2017, Townsend 2016, Walter & Lehmann 2018, Golub & Pereyra 1973), with the same
masked 1 / (gap) factors, and the same refusal where the tangent's part they multiply is not
rounding (docs/conventions.md, "decompositions"). `t` is (B,) + a.shape; matmul
broadcasts the decomposition's factors over the batch axis.
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete, plain_numbers
from adcore.errors import UnsupportedByBackendError
from adcore.extend import batched_axis, ties_averaged
from adcore.ops.decomposition_rules import (
    EIGH_ADVICE,
    SVD_ADVICE,
    degenerate_blocks,
    degenerate_tolerance,
    diagonal_of,
    gap_inverse,
    inverse_singular_values,
    nonzero_singular_values,
    norm_direction,
    qr_r_inverse,
    refuse_second_order,
    refuse_undetermined,
    swap_last,
    symmetric_read,
    truncated_pinv,
)
from adcore.ops.decompositions import lstsq_rcond, pinv_rtol
from adcore.ops.norms import norm_axes
from adcore_forward.jvps.table import defjvp


def _refuse_complex_vectors(op: str, ans) -> None:
    """Complex eigen- and singular vectors are LAPACK's up to a phase e^{i phi} that moves with a:
    a tangent of them is NumPy's only for losses that do not depend on it, and forward cannot see
    the loss (reverse checks it on the cotangent), so it refuses rather than give a plausible
    tangent of another function."""
    if np.iscomplexobj(concrete(ans)):
        raise UnsupportedByBackendError(
            f"op {op!r} on backend 'forward': complex singular or eigen vectors are specified up to "
            "multiplication by e^{i phi} (LAPACK picks phi, and it moves with the input), so only "
            "functions unchanged by that phase have a derivative, and forward cannot check that. Use "
            "backend='reverse', which checks it on the cotangent, or, for values only, "
            "np.linalg.eigvalsh / svdvals / norm(a, 'nuc' or 2), whose forward rules need no vectors "
            "(their second derivatives at a complex matrix take the vectors' tangents, and are refused too)"
        )


def _eigh_jvp(t, ans, a, UPLO="L"):
    _refuse_complex_vectors("eigh_packed", ans)
    w, v = ans[..., 0, :], ans[..., 1:, :]
    x = anp.matmul(anp.matmul(swap_last(v), symmetric_read(t, UPLO)), v)
    tol = degenerate_tolerance(w, w.shape[-1])
    refuse_second_order("eigh_packed", w, tol, ans, t)
    same = degenerate_blocks(w, tol)
    repeated = same & ~np.eye(same.shape[-1], dtype=bool)
    if plain_numbers(repeated).any():  # (under vmap: in any example)
        refuse_undetermined(
            "eigh_packed",
            w,
            "the tangent's projection V^T dA V has entries off the diagonal inside a repeated "
            "eigenvalue's eigenspace, where the eigenvectors' tangent is not determined (forward "
            "computes it whether or not np.linalg.eigh's eigenvectors are used)",
            EIGH_ADVICE,
            (x, repeated),
            scale=np.max(np.abs(concrete(t)), initial=0.0),
        )
    f = gap_inverse(w, tol)
    dw = anp.expand_dims(diagonal_of(x), axis=-2)
    return anp.concatenate([dw, anp.matmul(v, f * x)], axis=-2)


def _eigvalsh_jvp(t, ans, a, UPLO="L"):
    tol = degenerate_tolerance(ans, ans.shape[-1])
    refuse_second_order("eigvalsh", ans, tol, a, t)
    v = anp.eigh_packed(a, UPLO=UPLO)[..., 1:, :]
    dw = diagonal_of(anp.matmul(anp.matmul(_adjoint(v), symmetric_read(t, UPLO)), v))
    return ties_averaged(anp.real(dw) if np.iscomplexobj(concrete(dw)) else dw, ans, tol)


def _adjoint(x):
    """x^H of each matrix (x^T for real x)."""
    return anp.conj(swap_last(x)) if np.iscomplexobj(concrete(x)) else swap_last(x)


def _refuse_svd_tangent(s, tol, t, p, tv, tu, u, v, m, n) -> None:
    """At repeated or zero singular values, refuse a tangent whose masked part the rule cannot
    know (forward computes U's and V's tangents whether or not they are used): U^T dA V off the
    diagonal inside a block of equal singular values, the (I - U U^T) dA V or (I - V V^T) dA^T U
    columns a zero singular value would divide, and a zero singular value's own tangent (its
    abs'(0) = 0 is the convention of functions of the singular values only)."""
    same = degenerate_blocks(s, tol)
    zero = concrete(s) <= tol
    repeated = same & ~np.eye(same.shape[-1], dtype=bool)
    if not (plain_numbers(repeated).any() or plain_numbers(zero).any()):
        return
    scale = np.max(np.abs(concrete(t)), initial=0.0)
    checks = [(p, repeated), (diagonal_of(p), zero)]
    if m > n:
        checks.append((tv - anp.matmul(u, p), zero[..., None, :]))
    if n > m:
        checks.append((tu - anp.matmul(v, swap_last(p)), zero[..., None, :]))
    refuse_undetermined(
        "svd_packed",
        s,
        "the tangent has a part inside a repeated or zero singular value's block (U^T dA V there, "
        "or what a zero singular value would divide), where U's and V's tangents are not "
        "determined (forward computes them whether or not they are used)",
        SVD_ADVICE,
        *checks,
        scale=scale,
    )


def _svd_jvp(t, ans, a):
    _refuse_complex_vectors("svd_packed", ans)
    m = a.shape[-2]
    u, s, v = ans[..., :m, :], ans[..., m, :], ans[..., m + 1 :, :]
    tol = degenerate_tolerance(s, max(a.shape[-2:]))
    refuse_second_order("svd_packed", s, tol, ans, t, zeros=True)
    tv = anp.matmul(t, v)  # dA V
    tu = anp.matmul(swap_last(t), u)  # dA^T U
    p = anp.matmul(swap_last(u), tv)  # U^T dA V
    _refuse_svd_tangent(s, tol, t, p, tv, tu, u, v, m, a.shape[-1])
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
    if np.iscomplexobj(concrete(v)):  # d s_k = Re(u_k^H dA v_k); the block below s holds conj(V)
        ds = anp.real(diagonal_of(anp.matmul(anp.matmul(_adjoint(u), t), anp.conj(v))))
        ds = ties_averaged(ds, ans, tol)
    else:
        ds = ties_averaged(diagonal_of(anp.matmul(anp.matmul(swap_last(u), t), v)), ans, tol)
    return ds * nonzero_singular_values(ans, tol)


def _qr_jvp(t, ans, a):
    m, n = a.shape[-2:]
    if m >= n:
        return anp.concatenate(_qr_square_jvp(t, ans[..., :m, :], ans[..., m:, :]), axis=-2)
    # wide, a = [X Y], R = [U V]: (Q, U) the square QR of X, V = Q^T Y
    q, u = ans[..., :m, :m], ans[..., m:, :m]
    dq, du = _qr_square_jvp(t[..., :, :m], q, u)
    dv = anp.matmul(swap_last(dq), a[..., :, m:]) + anp.matmul(swap_last(q), t[..., :, m:])
    padding = np.zeros(dv.shape, concrete(dv).dtype)  # Q's zero columns up to n
    return anp.concatenate(
        [anp.concatenate([dq, padding], axis=-1), anp.concatenate([du, dv], axis=-1)], axis=-2
    )


def _qr_square_jvp(t, q, r):
    # C = Q^T dA R^-1 = Omega + dR R^-1 (Omega antisymmetric, dR R^-1 upper triangular)
    r_inv = qr_r_inverse(r)
    t_r = anp.matmul(t, r_inv)  # dA R^-1
    c = anp.matmul(swap_last(q), t_r)
    n = r.shape[-1]
    lower = np.tril(np.ones((n, n), concrete(r).dtype), -1)
    omega = c * lower - swap_last(c * lower)
    upper = c - omega  # dR R^-1
    return t_r - anp.matmul(q, upper), anp.matmul(upper, r)


def _norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    axes, _ = norm_axes(x, ord, axis)
    if not axes:
        dn = t * norm_direction(x, ans, ord, axis)
    else:
        dn = anp.sum(
            t * norm_direction(x, ans, ord, axis), axis=batched_axis(axes, x.ndim), keepdims=keepdims
        )
    return anp.real(dn) if np.iscomplexobj(concrete(x)) else dn  # d norm = Re(sum D dx)


def _pinv_jvp(t, ans, a, rcond=None, hermitian=False, rtol=None):
    cut = pinv_rtol(a, rcond, rtol)
    pieces = truncated_pinv("pinv", a, cut, t, ans)
    if pieces is not None:
        return _truncated_pinv_jvp(t, pieces, a.shape[-2], a.shape[-1])
    return _fixed_rank_pinv_jvp(t, ans, a)


def _fixed_rank_pinv_jvp(t, p, a):
    # Golub & Pereyra, the dropped singular values exact zeros, P = pinv(A):
    # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
    tt = swap_last(t)
    first = -anp.matmul(anp.matmul(p, t), p)
    second = anp.matmul(anp.matmul(p, swap_last(p)), tt - anp.matmul(anp.matmul(tt, a), p))
    third = anp.matmul(tt - anp.matmul(p, anp.matmul(a, tt)), anp.matmul(swap_last(p), p))
    return first + second + third


def _truncated_pinv_jvp(t, pieces, m, n):
    # dP = V (H o X + G o X^T) U^T + (I - V V^T) dA^T U S_k^-2 U^T + V S_k^-2 V^T dA^T (I - U U^T),
    # X = U^T dA V: the derivative of the truncated pseudo-inverse (decomposition_rules.truncated_pinv)
    u, v, h, f, inverse_squares = pieces
    x = anp.matmul(anp.matmul(swap_last(u), t), v)
    out = anp.matmul(anp.matmul(v, h * x + f * swap_last(x)), swap_last(u))
    tt = swap_last(t)
    if n > m:
        w = anp.matmul(u * anp.expand_dims(inverse_squares, axis=-2), swap_last(u))
        out = out + anp.matmul(tt - anp.matmul(v, anp.matmul(swap_last(v), tt)), w)
    if m > n:
        w = anp.matmul(v * anp.expand_dims(inverse_squares, axis=-2), swap_last(v))
        out = out + anp.matmul(w, tt - anp.matmul(anp.matmul(tt, u), swap_last(u)))
    return out


def _lstsq_jvp(argnum: int):
    # x = P b, P = pinv(a, rcond): dx = dP b + P db
    def rule(t, ans, a, b, rcond=None):
        cut = lstsq_rcond(a, rcond)
        p = anp.pinv(a, rcond=cut)
        if argnum == 1:
            t2 = t if b.ndim == 2 else anp.expand_dims(t, axis=-1)
            return anp.reshape(anp.matmul(p, t2), t.shape[:1] + ans.shape)
        b2 = b if b.ndim == 2 else anp.expand_dims(b, axis=-1)
        return anp.reshape(anp.matmul(_pinv_jvp(t, p, a, rcond=cut), b2), t.shape[:1] + ans.shape)

    return rule


def _lstsq_residuals_jvp(argnum: int):
    # res_k = |a x_k - b_k|^2 at full column rank: d res_k = 2 r_k^T (da x_k - db_k), since a^T r = 0
    def rule(t, ans, a, b, rcond=None):
        if ans.shape[0] == 0:  # no residuals: an empty tangent
            return np.zeros(t.shape[:1] + ans.shape, concrete(ans).dtype)
        x = anp.lstsq_solution(a, b, rcond=rcond)
        x2 = x if x.ndim == 2 else anp.expand_dims(x, axis=-1)
        r = anp.matmul(a, x2) - (b if b.ndim == 2 else anp.expand_dims(b, axis=-1))
        moved = anp.matmul(t, x2) if argnum == 0 else -(t if b.ndim == 2 else anp.expand_dims(t, axis=-1))
        return anp.reshape(2.0 * anp.sum(r * moved, axis=-2), t.shape[:1] + ans.shape)

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
defjvp("lstsq_residuals", _lstsq_residuals_jvp(0), _lstsq_residuals_jvp(1))
defjvp("lstsq_singular_values", _svdvals_jvp)
# fmt: on
