"""JVPs of adcore/ops/eig.py: eig_packed and eigvals (JAX's eig_jvp_rule, in eig_packed's gauge).

With C = V^-1 dA V: dw = diag(C); dV = V (F * C) + V diag(d), F[i, j] = 1 / (w_j - w_i) off the
diagonal, and d the gauge's share: Re(d_k) = -Re(v_k^H dV0_k) keeps each vector of unit norm,
Im(d_k) = -Im(dV0_k[m]) / v_k[m] keeps its largest entry m real (LAPACK's pivot, of either sign). The map is R-linear in dA
(Re, Im, conj of the primal only), so it holds for complex a too (JAX's convention).
"""

from __future__ import annotations

import adcore.numpy as anp
from adcore.ops.eig import diagonal_of, gap_inverse, gauge_mask, refuse_degenerate
from adcore_forward.jvps.table import defjvp


def _eig_packed_jvp(t, ans, a):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    refuse_degenerate("eig_packed", w, v)
    c = anp.matmul(anp.matmul(anp.inv(v), t), v)  # (B, ..., n, n)
    dw = diagonal_of(c)
    dv0 = anp.matmul(v, gap_inverse(w) * c)
    mask = gauge_mask(v)
    pivot = anp.sum(v * mask, axis=-2)  # v_k[m], real (as complex), of LAPACK's sign
    d_re = -anp.real(anp.sum(anp.conj(v) * dv0, axis=-2))
    d_im = -anp.imag(anp.sum(dv0 * mask, axis=-2)) / anp.real(pivot)
    dv = dv0 + v * anp.expand_dims(d_re + 1j * d_im, axis=-2)
    return anp.concatenate([anp.expand_dims(dw, axis=-2), dv], axis=-2)


def _eigvals_jvp(t, ans, a):
    v = anp.eig_packed(a)[..., 1:, :]
    refuse_degenerate("eigvals", ans, v)
    return diagonal_of(anp.matmul(anp.matmul(anp.inv(v), t), v))


# fmt: off
defjvp("eig_packed", _eig_packed_jvp)
defjvp("eigvals",    _eigvals_jvp)
# fmt: on
