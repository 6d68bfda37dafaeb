"""adcore-special: erf, gammaln, polygamma and logaddexp as differentiable adcore ops.

The ops are callable as they are (`adcore_special.erf(x)`), as `adcore.ops.erf(x)` once
the plugin is loaded, and through the scipy or NumPy function they stand for
(`scipy.special.erf(x)`, `np.logaddexp(x, y)`) on traced values.
"""

from __future__ import annotations

from adcore_special.ops import erf, gammaln, logaddexp, polygamma

__all__ = ["erf", "gammaln", "logaddexp", "polygamma"]
