"""JVPs of adcore/ops/complex_parts.py: real, imag, conj, angle
(abs on complex inputs: its rule in elementwise.py, from complex_parts.abs_slope).

JAX's convention (docs/complex.md): a JVP is the R-linear map of the tangent; a real output's
tangent is real. On a complex z: real(t), imag(t), conj(t), Im(t conj(z)) / |z|**2 for angle and
Re(t conj(z)) / |z| for abs. On a real input: real and conj pass t on, imag and angle (a step)
give 0.
"""

from __future__ import annotations

import adcore.numpy as anp
from adcore.ops import complex_parts as cp
from adcore_forward.jvps.table import defjvp


def _angle_jvp(t, ans, x, deg=False):
    if not cp.is_complex(x):
        return cp.zeros_like(t, ans.dtype)
    return anp.imag(t * cp.inverse_conjugate(x)) * cp.angle_unit(deg)


# fmt: off
defjvp("real",   lambda t, ans, x: anp.real(t))
defjvp("imag",   lambda t, ans, x: anp.imag(t) if cp.is_complex(x) else cp.zeros_like(t, ans.dtype))
defjvp("conj",   lambda t, ans, x: anp.conj(t))
defjvp("angle",  _angle_jvp)
# fmt: on
