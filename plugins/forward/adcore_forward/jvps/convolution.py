"""JVPs of adcore/ops/convolution.py: convolve, correlate.

Both are linear in each input (correlate conjugate-linear in v, still R-linear), so each input's
share is the op with the tangent in that input's place, one tangent direction at a time
(np.convolve and np.correlate are 1-d only), stacked along the batch axis.
"""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore_forward.jvps.table import defjvp


def _bilinear_jvp(name: str, which: int, default_mode: str):
    op = getattr(anp, name)

    def jvp(t, ans, a, v, mode=default_mode):
        if t.shape[0] == 0:
            return np.zeros(t.shape[:1] + ans.shape, dtype=ans.dtype)
        shares = [op(t[b], v, mode) if which == 0 else op(a, t[b], mode) for b in range(t.shape[0])]
        return anp.stack(shares)

    return jvp


# fmt: off
# --- convolution -----------------------------------------------------------------------
defjvp("convolve",  _bilinear_jvp("convolve", 0, "full"),   _bilinear_jvp("convolve", 1, "full"))
defjvp("correlate", _bilinear_jvp("correlate", 0, "valid"), _bilinear_jvp("correlate", 1, "valid"))

# fmt: on
