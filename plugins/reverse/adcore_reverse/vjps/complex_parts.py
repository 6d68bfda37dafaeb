"""VJPs of adcore/ops/complex_parts.py: real, imag, conj, angle
(abs on complex inputs: its rule in elementwise.py, from complex_parts.abs_slope).

JAX's convention (docs/complex.md): for L(dz) = a dz + b conj(dz), the VJP of a cotangent c is
a c + conj(b c). The cotangent of a real output is real, so real's VJP is c + 0j, imag's -1j c,
angle's -1j c conj(z) / |z|**2; conj's is conj(c). On a real input: real and conj pass c on,
imag and angle (a step) send 0.
"""

from __future__ import annotations

import adcore.numpy as anp
from adcore.ops import complex_parts as cp
from adcore_reverse.vjps.table import defvjp


def _angle_vjp(g, ans, x, deg=False):
    if not cp.is_complex(x):
        return cp.zeros_like(g)
    return g * (-1j * cp.angle_unit(deg)) * cp.inverse_conjugate(x)


# fmt: off
defvjp("real",   lambda g, ans, x: cp.as_complex(g, x))
defvjp("imag",   lambda g, ans, x: g * -1j if cp.is_complex(x) else cp.zeros_like(g))
defvjp("conj",   lambda g, ans, x: anp.conj(g))
defvjp("angle",  _angle_vjp)
# fmt: on
