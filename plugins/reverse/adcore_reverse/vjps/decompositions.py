"""VJPs of adcore/ops/decompositions.py and norms.py: eigh_packed, eigvalsh, svd_packed, svdvals, qr_packed,
norm, pinv, lstsq_solution, lstsq_residuals, lstsq_singular_values.

eigh: Giles (2008), Seeger et al. (2017); svd: Townsend (2016); qr: Walter & Lehmann (2018),
Liao et al. (2019); pinv: Golub & Pereyra (1973). The 1 / (gap) factors are masked to 0 where
eigen- or singular values coincide, and what they multiply is checked on the concrete cotangent:
where it is not rounding the derivative is not in the cotangent, and the rule raises an
InvalidValueError saying what to use instead (docs/conventions.md, "decompositions").
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete, plain_numbers
from adcore.extend import ties_averaged
from adcore.ops.decomposition_rules import (
    EIGH_ADVICE,
    PHASE_ADVICE,
    SVD_ADVICE,
    degenerate_blocks,
    degenerate_tolerance,
    diagonal_matrix,
    diagonal_of,
    gap_inverse,
    inverse_singular_values,
    nonzero_singular_values,
    norm_direction,
    qr_r_inverse,
    read_triangle,
    refuse_phase_dependent,
    refuse_second_order,
    refuse_undetermined,
    swap_last,
    truncated_pinv,
)
from adcore.ops.decompositions import lstsq_rcond, pinv_rtol
from adcore.ops.norms import norm_axes
from adcore_reverse.vjps.table import defvjp


def _eigh_vjp(g, ans, a, UPLO="L"):
    if np.iscomplexobj(concrete(ans)):
        return _complex_eigh_vjp(g, ans, a, UPLO)
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0, :], g[..., 1:, :]
    tol = degenerate_tolerance(w, w.shape[-1])
    refuse_second_order("eigh_packed", w, tol, ans, g)
    f = gap_inverse(w, tol)
    x = anp.matmul(swap_last(v), gv)
    _refuse_eigh_cotangent(w, tol, x, gw, gv)
    inner = diagonal_matrix(gw) + f * (x - swap_last(x)) * 0.5
    gs = anp.matmul(anp.matmul(v, inner), swap_last(v))
    return gs * read_triangle(a, UPLO)


def _complex_eigh_vjp(g, ans, a, UPLO):
    # Hermitian a, JAX's convention: gA = conj(V) (diag(gw) + F o (X - X^H) / 2) V^T, X = V^T gV
    # (torch's linalg_eigh_backward conjugated), the phase of each eigenvector checked unused
    w, v = anp.real(ans[..., 0, :]), ans[..., 1:, :]
    gw, gv = anp.real(g[..., 0, :]), g[..., 1:, :]
    tol = degenerate_tolerance(w, w.shape[-1])
    refuse_second_order("eigh_packed", w, tol, ans, g)
    x = anp.matmul(swap_last(v), gv)
    scale = np.max(np.abs(concrete(gv)), initial=0.0)  # (not float(): under vmap each example's)
    refuse_phase_dependent(
        "eigh_packed", np.imag(np.diagonal(concrete(x), axis1=-2, axis2=-1)), scale, PHASE_ADVICE
    )
    _refuse_eigh_cotangent(w, tol, x, gw, gv)
    inner = diagonal_matrix(gw) + gap_inverse(w, tol) * (x - anp.conj(swap_last(x))) * 0.5
    gs = anp.matmul(anp.matmul(anp.conj(v), inner), swap_last(v))
    return gs * read_triangle(a, UPLO)


def _refuse_eigh_cotangent(w, tol, x, gw, gv) -> None:
    """At repeated eigenvalues, refuse a cotangent whose masked part the rule cannot know: V^T gV
    off the diagonal inside a repeated eigenvalue's block (the 1 / gap factor is 0 / 0 there, and
    its limit, f'(w) for V f(w) V^T, is not in the cotangent) or gw differing inside one (no
    derivative for a function not symmetric in them; V f(w) V^T with f(w) = 0 there, logm at I)."""
    same = degenerate_blocks(w, tol)
    repeated = same & ~np.eye(same.shape[-1], dtype=bool)
    if not plain_numbers(repeated).any():  # (under vmap: in any example)
        return
    scale = np.maximum(np.max(np.abs(concrete(gw)), initial=0.0), np.max(np.abs(concrete(gv)), initial=0.0))
    refuse_undetermined(
        "eigh_packed",
        w,
        "the eigenvectors' cotangent has a part inside a repeated eigenvalue's eigenspace (V^T dL/dV "
        "off its diagonal there)",
        EIGH_ADVICE,
        (x, repeated),
        scale=scale,
    )
    gw_ = concrete(gw)
    refuse_undetermined(
        "eigh_packed",
        w,
        "the eigenvalues' cotangent differs between equal eigenvalues (a function not symmetric in "
        "them, such as w[0], or a V f(w) V^T whose eigenvector cotangent vanishes there)",
        EIGH_ADVICE,
        (gw_[..., :, None] - gw_[..., None, :], repeated),
        scale=scale,
    )


def _eigvalsh_vjp(g, ans, a, UPLO="L"):
    tol = degenerate_tolerance(ans, ans.shape[-1])
    refuse_second_order("eigvalsh", ans, tol, a, g)
    g = ties_averaged(g, ans, tol)
    v = anp.eigh_packed(a, UPLO=UPLO)[..., 1:, :]
    left = anp.conj(v) if np.iscomplexobj(concrete(v)) else v  # d w_k = Re(v_k^H dA v_k)
    gs = anp.matmul(left * anp.expand_dims(g, axis=-2), swap_last(v))
    return gs * read_triangle(a, UPLO)


def _refuse_svd_cotangent(s, tol, j, k, gu, gs, gv, u, v, m, n) -> None:
    """At repeated or zero singular values, refuse a cotangent whose masked part the rule cannot
    know: U^T gU or V^T gV off the diagonal inside a block of equal singular values, gs differing
    inside a block of nonzero ones, the (I - U U^T) gU or (I - V V^T) gV columns a zero singular
    value would divide, and gs at a zero singular value (abs'(0) = 0 is the convention of functions
    of the singular values only) when U or V are used."""
    same = degenerate_blocks(s, tol)
    zero = concrete(s) <= tol
    repeated = same & ~np.eye(same.shape[-1], dtype=bool)
    if not (plain_numbers(repeated).any() or plain_numbers(zero).any()):
        return
    sizes = [np.max(np.abs(concrete(c)), initial=0.0) for c in (gu, gs, gv)]
    scale = np.maximum(np.maximum(sizes[0], sizes[1]), sizes[2])  # (under vmap each example's)
    what = "the singular vectors' cotangent has a part inside a repeated or zero singular value's block"
    refuse_undetermined("svd_packed", s, what, SVD_ADVICE, (j, repeated), (k, repeated), scale=scale)
    gs_ = concrete(gs)
    refuse_undetermined(
        "svd_packed",
        s,
        "the singular values' cotangent differs between equal singular values (a function not "
        "symmetric in them, or U f(s) V^T)",
        SVD_ADVICE,
        (gs_[..., :, None] - gs_[..., None, :], repeated & ~zero[..., :, None]),
        scale=scale,
    )
    if not plain_numbers(zero).any():
        return
    if m > n:
        refuse_undetermined(
            "svd_packed", s, "(I - U U^T) dL/dU would be divided by a zero singular value", SVD_ADVICE,
            (gu - anp.matmul(u, j), zero[..., None, :]), scale=scale,
        )  # fmt: skip
    if n > m:
        refuse_undetermined(
            "svd_packed", s, "(I - V V^T) dL/dV would be divided by a zero singular value", SVD_ADVICE,
            (gv - anp.matmul(v, k), zero[..., None, :]), scale=scale,
        )  # fmt: skip
    if max(sizes[0], sizes[2]) > 64 * max(m, n) * np.finfo(gs_.dtype).eps * scale:
        refuse_undetermined(
            "svd_packed",
            s,
            "a zero singular value has a cotangent while U or V are used too (abs'(0) = 0 holds for "
            "functions of the singular values only; U S Vh rebuilt through it is smooth)",
            SVD_ADVICE,
            (gs_, zero),
            scale=scale,
        )


def _svd_vjp(g, ans, a):
    if np.iscomplexobj(concrete(ans)):
        return _complex_svd_vjp(g, ans, a)
    m = a.shape[-2]
    u, s, v = ans[..., :m, :], ans[..., m, :], ans[..., m + 1 :, :]
    gu, gs, gv = g[..., :m, :], g[..., m, :], g[..., m + 1 :, :]
    tol = degenerate_tolerance(s, max(a.shape[-2:]))
    refuse_second_order("svd_packed", s, tol, ans, g, zeros=True)
    j = anp.matmul(swap_last(u), gu)
    k = anp.matmul(swap_last(v), gv)
    _refuse_svd_cotangent(s, tol, j, k, gu, gs, gv, u, v, m, a.shape[-1])
    ja, ka = j - swap_last(j), k - swap_last(k)
    # (F o Ja) S + S (F o Ka) with F = 1/(s_j^2 - s_i^2), split so that each factor is masked alone
    inner = (
        diagonal_matrix(gs * nonzero_singular_values(s, tol))
        + (gap_inverse(s, tol) * (ja + ka) + gap_inverse(s, tol, +1) * (ja - ka)) * 0.5
    )
    out = anp.matmul(anp.matmul(u, inner), swap_last(v))
    s_inv = inverse_singular_values(s, tol)
    if m > a.shape[-1]:  # (I - U U^T) gU S^-1 V^T
        out = out + anp.matmul((gu - anp.matmul(u, j)) * anp.expand_dims(s_inv, axis=-2), swap_last(v))
    if a.shape[-1] > m:  # U S^-1 gV^T (I - V V^T)
        out = out + anp.matmul(u * anp.expand_dims(s_inv, axis=-2), swap_last(gv - anp.matmul(v, k)))
    return out


def _complex_svd_vjp(g, ans, a):
    # the real rule with U^T, V^T made U^H, V^H in the skew parts, conjugated into JAX's convention
    # (torch's svd_backward conjugated); the block below s holds conj(V), its cotangent conj(gV)'s
    m, n = a.shape[-2:]
    u, s, v = ans[..., :m, :], anp.real(ans[..., m, :]), anp.conj(ans[..., m + 1 :, :])
    gu, gs, gv = g[..., :m, :], anp.real(g[..., m, :]), anp.conj(g[..., m + 1 :, :])
    tol = degenerate_tolerance(s, max(m, n))
    refuse_second_order("svd_packed", s, tol, ans, g, zeros=True)
    j = anp.matmul(swap_last(u), gu)
    k = anp.matmul(swap_last(v), gv)
    sizes = [np.max(np.abs(concrete(c)), initial=0.0) for c in (gu, gs, gv)]
    scale = np.maximum(np.maximum(sizes[0], sizes[1]), sizes[2])  # (under vmap each example's)
    phase_part = np.imag(np.diagonal(concrete(j) + concrete(k), axis1=-2, axis2=-1))
    refuse_phase_dependent("svd_packed", phase_part, scale, PHASE_ADVICE)
    cu = anp.conj(u)
    _refuse_svd_cotangent(s, tol, j, k, gu, gs, gv, cu, anp.conj(v), m, n)
    ja, ka = j - anp.conj(swap_last(j)), k - anp.conj(swap_last(k))
    s_inv = inverse_singular_values(s, tol)
    inner = (
        diagonal_matrix(gs * nonzero_singular_values(s, tol))
        + (gap_inverse(s, tol) * (ja + ka) + gap_inverse(s, tol, +1) * (ja - ka)) * 0.5
        + diagonal_matrix(diagonal_of(ja - ka) * s_inv * 0.25)  # i Im(j_kk - k_kk) / (2 s_k)
    )
    out = anp.matmul(anp.matmul(cu, inner), swap_last(v))
    if m > n:  # (I - conj(U) U^T) gU S^-1 V^T
        out = out + anp.matmul((gu - anp.matmul(cu, j)) * anp.expand_dims(s_inv, axis=-2), swap_last(v))
    if n > m:  # conj(U) S^-1 (gV^H - k^H V^T)
        rest = swap_last(anp.conj(gv) - anp.matmul(v, anp.conj(k)))
        out = out + anp.matmul(cu * anp.expand_dims(s_inv, axis=-2), rest)
    return out


def _svdvals_vjp(g, ans, a):
    m = a.shape[-2]
    tol = degenerate_tolerance(ans, max(a.shape[-2:]))
    refuse_second_order("svdvals", ans, tol, a, g, zeros=True)
    packed = anp.svd_packed(a)
    u, v = packed[..., :m, :], packed[..., m + 1 :, :]
    weights = ties_averaged(g, ans, tol) * nonzero_singular_values(ans, tol)
    out = anp.matmul(u * anp.expand_dims(weights, axis=-2), swap_last(v))  # U w V^H: v holds conj(V)
    return anp.conj(out) if np.iscomplexobj(concrete(out)) else out  # d s_k = Re(u_k^H dA v_k)


def _qr_vjp(g, ans, a):
    m, n = a.shape[-2:]
    if m >= n:
        return _qr_square_vjp(g[..., :m, :], g[..., m:, :], ans[..., :m, :], ans[..., m:, :])
    # wide, a = [X Y], R = [U V]: Q U = X, V = Q^T Y, so gY = Q gV and X sees gQ + Y gV^T
    q, u = ans[..., :m, :m], ans[..., m:, :m]
    gq, gu, gv = g[..., :m, :m], g[..., m:, :m], g[..., m:, m:]
    y = a[..., :, m:]
    gx = _qr_square_vjp(gq + anp.matmul(y, swap_last(gv)), gu, q, u)
    return anp.concatenate([gx, anp.matmul(q, gv)], axis=-1)


def _qr_square_vjp(gq, gr, q, r):
    # Liao et al. (2019), m >= n: M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^-T
    mm = anp.matmul(r, swap_last(gr)) - anp.matmul(swap_last(gq), q)
    n = r.shape[-1]
    lower = np.tril(np.ones((n, n), concrete(r).dtype), -1)
    copyltu = mm * lower + swap_last(mm * lower) + mm * np.eye(n, dtype=concrete(r).dtype)
    return anp.matmul(gq + anp.matmul(q, copyltu), swap_last(qr_r_inverse(r)))


def _norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    axes, _ = norm_axes(x, ord, axis)
    kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    return anp.reshape(g, kept) * norm_direction(x, ans, ord, axis)


def _pinv_vjp(g, ans, a, rcond=None, hermitian=False, rtol=None):
    cut = pinv_rtol(a, rcond, rtol)
    pieces = truncated_pinv("pinv", a, cut, g, ans)
    if pieces is not None:
        return _truncated_pinv_vjp(g, pieces, a.shape[-2], a.shape[-1])
    return _fixed_rank_pinv_vjp(g, ans, a)


def _fixed_rank_pinv_vjp(g, p, a):
    # Golub & Pereyra, the dropped singular values exact zeros, P = pinv(A):
    # gA = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)
    gt = swap_last(g)
    y = anp.matmul(p, gt)  # P G^T
    first = -anp.matmul(anp.matmul(swap_last(p), g), swap_last(p))
    second = anp.matmul(gt - anp.matmul(a, y), anp.matmul(p, swap_last(p)))
    third = anp.matmul(swap_last(p), y - anp.matmul(anp.matmul(y, p), a))
    return first + second + third


def _truncated_pinv_vjp(g, pieces, m, n):
    # dP = V (H o X + G o X^T) U^T + (I - V V^T) dA^T U S_k^-2 U^T + V S_k^-2 V^T dA^T (I - U U^T),
    # X = U^T dA V (decomposition_rules.truncated_pinv); its adjoint, term by term
    u, v, h, f, inverse_squares = pieces
    z = anp.matmul(anp.matmul(swap_last(v), g), u)  # V^T G U
    out = anp.matmul(anp.matmul(u, h * z + f * swap_last(z)), swap_last(v))
    gt = swap_last(g)
    if n > m:  # U S_k^-2 U^T G^T (I - V V^T)
        w = anp.matmul(u * anp.expand_dims(inverse_squares, axis=-2), swap_last(u))
        out = out + anp.matmul(w, gt - anp.matmul(anp.matmul(gt, v), swap_last(v)))
    if m > n:  # (I - U U^T) G^T V S_k^-2 V^T
        w = anp.matmul(v * anp.expand_dims(inverse_squares, axis=-2), swap_last(v))
        out = out + anp.matmul(gt - anp.matmul(u, anp.matmul(swap_last(u), gt)), w)
    return out


def _lstsq_vjp(argnum: int):
    # x = P b, P = pinv(a, rcond): gb = P^T g, and a's through pinv's rule with gP = g b^T
    def rule(g, ans, a, b, rcond=None):
        cut = lstsq_rcond(a, rcond)
        p = anp.pinv(a, rcond=cut)
        g2 = g if g.ndim == 2 else anp.expand_dims(g, axis=-1)
        b2 = b if b.ndim == 2 else anp.expand_dims(b, axis=-1)
        if argnum == 1:
            return anp.reshape(anp.matmul(swap_last(p), g2), b.shape)
        return _pinv_vjp(anp.matmul(g2, swap_last(b2)), p, a, rcond=cut)

    return rule


def _lstsq_residuals_vjp(argnum: int):
    # res_k = |a x_k - b_k|^2 at full column rank: d res_k = 2 r_k^T (da x_k - db_k), since a^T r = 0
    def rule(g, ans, a, b, rcond=None):
        if ans.shape[0] == 0:  # no residuals (rank < n or m <= n): nothing depends on a or b
            return np.zeros(np.shape(a if argnum == 0 else b), concrete(ans).dtype)
        x = anp.lstsq_solution(a, b, rcond=rcond)
        x2 = x if x.ndim == 2 else anp.expand_dims(x, axis=-1)
        b2 = b if b.ndim == 2 else anp.expand_dims(b, axis=-1)
        weighted = (anp.matmul(a, x2) - b2) * (2.0 * g)  # r_k g_k, each column
        if argnum == 1:
            return anp.reshape(-weighted, b.shape)
        return anp.matmul(weighted, swap_last(x2))

    return rule


# fmt: off
defvjp("eigh_packed",    _eigh_vjp)
defvjp("eigvalsh",       _eigvalsh_vjp)
defvjp("svd_packed",     _svd_vjp)
defvjp("svdvals",        _svdvals_vjp)
defvjp("qr_packed",      _qr_vjp)
defvjp("norm",           _norm_vjp)
defvjp("pinv",           _pinv_vjp)
defvjp("lstsq_solution", _lstsq_vjp(0), _lstsq_vjp(1))
defvjp("lstsq_residuals", _lstsq_residuals_vjp(0), _lstsq_residuals_vjp(1))
defvjp("lstsq_singular_values", _svdvals_vjp)
# fmt: on
