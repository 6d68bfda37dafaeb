"""VJPs of adcore/ops/eig.py: eig_packed and eigvals, the transposes of adcore_forward.jvps.eig's
JVPs under JAX's pairing <u, v> = Re(sum(u * v)) (no conjugation).

With s_k = sum_i gV_ik V_ik: gdV0 = gV - Re(s_k) conj(V) - i Im(s_k) / v_k[m] E (E the gauge's
mask, 1 at each vector's largest entry m, real of LAPACK's sign); gC = diag(gw) + F * (V^T gdV0); gA = V^-T gC V^T, its
real part for a real a (a real primal's cotangent).
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.ops.eig import gap_inverse, gauge_mask, refuse_degenerate, swap_last
from adcore_reverse.vjps.table import defvjp


def _to_input(ga, a):
    """gA for a: its real part for a real a."""
    return ga if np.iscomplexobj(concrete(a)) else anp.real(ga)


def _diagonal_matrix(d):
    return anp.expand_dims(d, axis=-2) * np.eye(d.shape[-1], dtype=concrete(d).real.dtype)


def _eig_packed_vjp(g, ans, a):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0, :], g[..., 1:, :]
    refuse_degenerate("eig_packed", w, v)
    mask = gauge_mask(v)
    pivot = anp.real(anp.sum(v * mask, axis=-2))
    s = anp.sum(gv * v, axis=-2)
    gdv0 = (
        gv
        - anp.expand_dims(anp.real(s), axis=-2) * anp.conj(v)
        - 1j * anp.expand_dims(anp.imag(s) / pivot, axis=-2) * mask
    )
    gc = _diagonal_matrix(gw) + gap_inverse(w) * anp.matmul(swap_last(v), gdv0)
    ga = anp.matmul(anp.matmul(swap_last(anp.inv(v)), gc), swap_last(v))
    return _to_input(ga, a)


def _eigvals_vjp(g, ans, a):
    v = anp.eig_packed(a)[..., 1:, :]
    refuse_degenerate("eigvals", ans, v)
    ga = anp.matmul(swap_last(anp.inv(v)) * anp.expand_dims(g, axis=-2), swap_last(v))
    return _to_input(ga, a)


# fmt: off
defvjp("eig_packed", _eig_packed_vjp)
defvjp("eigvals",    _eigvals_vjp)
# fmt: on
