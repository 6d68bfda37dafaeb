"""The ops: what each computes (scipy.special or NumPy) and where the checks draw its inputs.

Each spec names the scipy or NumPy function it stands for (`numpy=`), so calling that
function on a traced value runs the op: `scipy.special.erf(x)` in user code is
differentiable as written.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from adcore.spec import POSITIVE, REAL, WIDE, OpSpec, elementwise_samples

# erf draws from WIDE (-3 to 3): out into the tails, where it flattens; gammaln and polygamma
# have poles at 0, -1, -2, ...: they draw from POSITIVE (0.5 to 3)


def _order(n: Any) -> int:
    """polygamma's n, checked: a non-negative integer."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"op 'polygamma': n must be a non-negative integer, got {n!r}")
    return int(n)


def _polygamma(x: Any, n: int = 0) -> Any:
    # scipy.special.polygamma computes in float64 whatever x is; psi and zeta keep float32
    n = _order(n)
    if n == 0:
        return special.psi(x)
    return (-1) ** (n + 1) * math.gamma(n + 1) * special.zeta(n + 1, x)


erf = OpSpec(
    "erf",
    special.erf,
    numpy=(special.erf,),
    samples=elementwise_samples(WIDE),
    elementwise=True,
    doc="the error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x",
)
gammaln = OpSpec(
    "gammaln",
    special.gammaln,
    numpy=(special.gammaln,),
    samples=elementwise_samples(POSITIVE),
    elementwise=True,
    doc="log|Gamma(x)|",
)
polygamma = OpSpec(
    "polygamma",
    _polygamma,
    params=("n",),
    samples=elementwise_samples(POSITIVE, params=({}, {"n": 1}, {"n": 2})),
    elementwise=True,
    doc="polygamma(x, n=0): the n-th derivative of the digamma function (scipy's polygamma(n, x))",
)
powm1 = OpSpec(
    "powm1",
    special.powm1,
    nin=2,
    numpy=(special.powm1,),
    samples=elementwise_samples(POSITIVE, REAL),  # broadcasting pairs, 0-d and empty included
    elementwise=True,
    doc="x**y - 1 for x > 0, accurate where x**y is near 1, broadcasting x with y",
)

OPS: tuple[OpSpec, ...] = (erf, gammaln, polygamma, powm1)
