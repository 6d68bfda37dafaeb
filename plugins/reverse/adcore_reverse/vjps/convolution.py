"""VJPs of adcore/ops/convolution.py: convolve, correlate.

convolve(a, v)'s full output is sum_i a_i v_(k-i), bilinear without conjugation, so in JAX's
convention the cotangent of a_i is sum_k g_k v_(k-i): convolve of g (zero-padded out to the full
output) with v reversed, mode valid; likewise for v. correlate(a, v) is the window of convolve(a,
conj(v[::-1])): for a the same with conj(v[::-1]) for v; conjugate-linear in v, whose dv -> b
conj(dv) has the VJP conj(b^T g). A real input's cotangent is the real part.
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.ops.convolution import output_window
from adcore_reverse.vjps.fft import as_input
from adcore_reverse.vjps.table import defvjp


def _vector(x):
    return anp.reshape(x, (-1,))  # np.convolve takes a 0-d input as one of length 1


def _full(op, g, a, v, mode):
    """g zero-padded out to the full output, length m + n - 1."""
    m, n = max(np.size(a), 1), max(np.size(v), 1)
    window = output_window(op, mode, m, n)
    return anp.pad(g, ((window.start, m + n - 1 - window.stop),))


def _conj(x):
    return np.conjugate(x) if np.iscomplexobj(x) else x  # the conj op on a traced value


def _convolve_vjp_a(g, ans, a, v, mode="full"):
    ga = anp.convolve(_full("convolve", g, a, v, mode), anp.flip(_vector(v)), "valid")
    return as_input(anp.reshape(ga, a.shape), a)


def _convolve_vjp_v(g, ans, a, v, mode="full"):
    gv = anp.convolve(_full("convolve", g, a, v, mode), anp.flip(_vector(a)), "valid")
    return as_input(anp.reshape(gv, v.shape), v)


def _correlate_vjp_a(g, ans, a, v, mode="valid"):
    return as_input(anp.convolve(_full("correlate", g, a, v, mode), _conj(v), "valid"), a)


def _correlate_vjp_v(g, ans, a, v, mode="valid"):
    gv = anp.flip(anp.convolve(_full("correlate", g, a, v, mode), anp.flip(a), "valid"))
    return as_input(_conj(gv), v)


# fmt: off
# --- convolution -----------------------------------------------------------------------
defvjp("convolve",  _convolve_vjp_a, _convolve_vjp_v)
defvjp("correlate", _correlate_vjp_a, _correlate_vjp_v)

# fmt: on
