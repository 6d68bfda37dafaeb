"""The scipy.signal ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.

signal_convolve is bilinear without conjugation. Forward: each input's share is the full
convolution of its tangent with the other input (a leading axis of length 1 under the batch
axis), cut to the mode's window. Reverse, in JAX's convention: in1's cotangent is the
convolution, mode valid, of g zero-padded out to the full output with in2 reversed along every
axis; likewise in2's. A real input's cotangent is the real part. Both use the op's own method.
Symbolic: the full convolution on object arrays, one shifted product of in1 per entry of in2
(SciPy's convolve takes no object arrays), cut to the mode's window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore_scipy.signal.ops import output_window, signal_convolve


def _as_input(gx: Any, x: Any) -> Any:
    return gx if x.dtype.kind == "c" else anp.real(gx)


def _reversed(x: Any) -> Any:
    return anp.flip(x) if np.ndim(x) else x


def _convolve_jvp(which: int):
    def jvp(t, ans, in1, in2, mode="full", method="auto"):
        other = in2 if which == 0 else in1
        full = signal_convolve(t, anp.expand_dims(other, 0), mode="full", method=method)
        window = output_window(mode, np.shape(in1), np.shape(in2))
        return anp.getitem(full, index=(slice(None),) + window)

    return jvp


def _convolve_vjp(which: int):
    def vjp(g, ans, in1, in2, mode="full", method="auto"):
        x, other = (in1, in2) if which == 0 else (in2, in1)
        shape1, shape2 = np.shape(in1), np.shape(in2)
        window = output_window(mode, shape1, shape2)
        widths = tuple((w.start, m + n - 1 - w.stop) for w, m, n in zip(window, shape1, shape2))
        full = anp.pad(g, widths) if any(sum(p) for p in widths) else g
        gx = signal_convolve(full, _reversed(other), mode="valid", method=method)
        return _as_input(gx, x)

    return vjp


def _convolve_sympy(in1, in2, mode="full", method="auto"):
    a, b = np.asarray(in1, dtype=object), np.asarray(in2, dtype=object)
    out = np.zeros(tuple(m + n - 1 for m, n in zip(a.shape, b.shape)), dtype=int).astype(object)
    for j in np.ndindex(b.shape):
        out[tuple(slice(k, k + m) for k, m in zip(j, a.shape))] += a * b[j]
    return out[output_window(mode, a.shape, b.shape)]


# fmt: off
JVPS: dict[str, Any] = {
    "signal_convolve": (_convolve_jvp(0), _convolve_jvp(1)),
}
VJPS: dict[str, Any] = {
    "signal_convolve": (_convolve_vjp(0), _convolve_vjp(1)),
}
SYMPY_RULES: dict[str, Any] = {
    "signal_convolve": _convolve_sympy,
}
# fmt: on
