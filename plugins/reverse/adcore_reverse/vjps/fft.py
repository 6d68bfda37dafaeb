"""VJPs of adcore/ops/fft.py: fftn, ifftn, rfftn, irfftn, as transposes in JAX's convention.

Each op is linear in its input, x -> F(resized(x)), so its VJP is resized back of F's transpose
under <u, v> = Re(sum(u * v)) (no conjugation). The DFT matrix is symmetric: fftn's transpose is
fftn, ifftn's ifftn. rfftn is fftn with the upper half of the last axis dropped; its transpose
(JAX's _rfft_transpose) is Re(fftn) of the cotangent zero-padded back to the full length, which
is irfftn of conj(g) / c in the other norm, with c = 1 at the zero and Nyquist bins and 2 between
them (irfftn counts those bins twice). irfftn's transpose (JAX's _irfft_transpose) is
conj(rfftn(g)) * c in the other norm. A real input's cotangent is the real part.
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.ops.fft import SWAPPED_NORM, fft_plan, resized
from adcore_reverse.vjps.table import defvjp


def half_spectrum_weights(plan, ndim: int, dtype) -> np.ndarray:
    """c along the last transformed axis: how often irfftn counts each bin of the half spectrum."""
    n = plan.lengths[-1]
    c = np.full(n // 2 + 1, 2.0, dtype=np.finfo(dtype).dtype)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0  # the Nyquist bin
    return c.reshape([c.size if a == plan.axes[-1] else 1 for a in range(ndim)])


def as_input(gx, x):
    """The cotangent of input x: its real part for a real x."""
    return gx if x.dtype.kind == "c" else anp.real(gx)


def _symmetric_vjp(name: str):
    def vjp(g, ans, x, s=None, axes=None, norm=None):
        plan = fft_plan(name, x.shape, s, axes, norm)
        return as_input(resized(getattr(anp, name)(g, axes=plan.axes, norm=plan.norm), x.shape), x)

    return vjp


def _rfftn_vjp(g, ans, x, s=None, axes=None, norm=None):
    plan = fft_plan("rfftn", x.shape, s, axes, norm)
    c = half_spectrum_weights(plan, g.ndim, g.dtype)
    full = anp.irfftn(anp.conj(g) / c, s=plan.lengths, axes=plan.axes, norm=SWAPPED_NORM[plan.norm])
    return resized(full, x.shape)


def _irfftn_vjp(g, ans, x, s=None, axes=None, norm=None):
    plan = fft_plan("irfftn", x.shape, s, axes, norm)
    half = anp.rfftn(g, s=plan.lengths, axes=plan.axes, norm=SWAPPED_NORM[plan.norm])
    return as_input(resized(anp.conj(half) * half_spectrum_weights(plan, g.ndim, g.dtype), x.shape), x)


# fmt: off
# --- the discrete Fourier transforms ---------------------------------------------------
defvjp("fftn",   _symmetric_vjp("fftn"))
defvjp("ifftn",  _symmetric_vjp("ifftn"))
defvjp("rfftn",  _rfftn_vjp)
defvjp("irfftn", _irfftn_vjp)

# fmt: on
