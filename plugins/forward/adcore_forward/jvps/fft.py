"""JVPs of adcore/ops/fft.py: fftn, ifftn, rfftn, irfftn. Each op is linear in its input, so
its JVP is the op itself on the tangent, over the same axes moved past the batch axis."""

from __future__ import annotations

from adcore import ops
from adcore.ops.fft import fft_plan
from adcore_forward.jvps.table import defjvp


def _linear_jvp(name: str):
    op = getattr(ops, name)

    def jvp(t, ans, x, s=None, axes=None, norm=None):
        plan = fft_plan(name, x.shape, s, axes, norm)
        return op(t, s=plan.lengths, axes=tuple(a + 1 for a in plan.axes), norm=plan.norm)

    return jvp


# fmt: off
# --- the discrete Fourier transforms ---------------------------------------------------
defjvp("fftn",   _linear_jvp("fftn"))
defjvp("ifftn",  _linear_jvp("ifftn"))
defjvp("rfftn",  _linear_jvp("rfftn"))
defjvp("irfftn", _linear_jvp("irfftn"))

# fmt: on
