"""adcore-special: erfcx, loggamma, psi and powm1 as differentiable adcore ops.

The ops are callable as they are (`adcore_special.erfcx(x)`), as `adcore.ops.erfcx(x)` once
the plugin is loaded, and through the scipy function they stand for
(`scipy.special.erfcx(x)`, `scipy.special.powm1(x, y)`) on traced values.
"""

from __future__ import annotations

from adcore_special.ops import erfcx, loggamma, powm1, psi

__all__ = ["erfcx", "loggamma", "powm1", "psi"]
