"""VJPs of adcore/ops/linalg.py: matmul."""

from __future__ import annotations

from typing import Any

import adcore.numpy as anp
from adcore.extend import unbroadcast
from adcore_reverse.vjps.table import defvjp


def _matmul_vjp(argnum: int):
    def rule(g, ans, a, b):
        # promote 1-d operands to matrices as matmul does, then A^T G and G B^T
        a2 = a if a.ndim > 1 else anp.reshape(a, (1, a.shape[0]))
        b2 = b if b.ndim > 1 else anp.reshape(b, (b.shape[0], 1))
        # restore the dropped axes: b's last first, so a 0-d g (vector @ vector) becomes 1x1
        g2 = g
        if b.ndim == 1:
            g2 = anp.expand_dims(g2, -1)
        if a.ndim == 1:
            g2 = anp.expand_dims(g2, -2)
        if argnum == 0:
            return anp.reshape(unbroadcast(anp.matmul(g2, _swap(b2)), a2), a.shape)
        return anp.reshape(unbroadcast(anp.matmul(_swap(a2), g2), b2), b.shape)

    return rule


def _swap(x: Any) -> Any:
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return anp.transpose(x, axes)


# fmt: off
defvjp("matmul",     _matmul_vjp(0), _matmul_vjp(1))
# fmt: on
