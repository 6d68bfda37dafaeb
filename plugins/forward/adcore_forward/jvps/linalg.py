"""JVPs of adcore/ops/linalg.py: matmul."""

from __future__ import annotations

import adcore.numpy as anp
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp
from adcore_forward.jvps.table import lift_to as _lift_to


def _matmul_jvp(argnum: int):
    def rule(t, ans, a, b):
        if argnum == 1 and b.ndim == 1 and a.ndim == 2:  # matrix @ vector: one product t @ a^T
            return anp.matmul(t, anp.transpose(a))
        if argnum == 0:  # t_a @ b, a 1-d a as a row, batch axes lined up
            ta = t if a.ndim > 1 else anp.reshape(t, (t.shape[0], 1, a.shape[0]))
            share = anp.matmul(_lift_to(ta, max(ta.ndim - 1, b.ndim)), b)
        else:  # a @ t_b, a 1-d b as a column
            tb = t if b.ndim > 1 else anp.reshape(t, (t.shape[0], b.shape[0], 1))
            share = anp.matmul(a, _lift_to(tb, max(a.ndim, tb.ndim - 1)))
        return anp.reshape(share, _batch(t, ans))

    return rule


# fmt: off
defjvp("matmul",     _matmul_jvp(0), _matmul_jvp(1))
# fmt: on
