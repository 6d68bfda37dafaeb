"""adcore-special: erf, gammaln, polygamma and powm1 as differentiable adcore ops.

The ops are callable as they are (`adcore_special.erf(x)`), as `adcore.ops.erf(x)` once
the plugin is loaded, and through the scipy or NumPy function they stand for
(`scipy.special.erf(x)`, `scipy.special.powm1(x, y)`) on traced values.
"""

from __future__ import annotations

from adcore_special.ops import erf, gammaln, polygamma, powm1

__all__ = ["erf", "gammaln", "powm1", "polygamma"]
