"""The ops: what each computes (scipy.special) and where the checks draw its inputs.

Each spec names the scipy function it stands for (`numpy=`), so calling that function on a
traced value runs the op: `scipy.special.erfcx(x)` in user code is differentiable as written.
The name is a string, and the impls reach scipy through a LazyModule: loading the plugin
imports no scipy (adcore loads every plugin when it first needs its registry); the first call
of an op does, and the registry finds `scipy.special.erfcx` once user code has imported it.

An op's name is unique across every installed plugin, and so is the function it stands for:
adcore-scipy has erf, gammaln and polygamma, so this plugin brings functions it does not
(erfcx, loggamma, psi(x, n) and powm1), and both load side by side.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adcore.extend import LazyModule
from adcore.spec import POSITIVE, REAL, WIDE, Kink, OpSpec, elementwise_samples

special = LazyModule("scipy.special")

# erfcx draws from WIDE (-3 to 3): out to where it grows as 2 exp(x**2) and where it decays as
# 1 / (sqrt(pi) x); loggamma and psi have poles at 0, -1, -2, ...: they draw from POSITIVE (0.5 to 3)


def _order(n: Any) -> int:
    """psi's n, checked: a non-negative integer."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"op 'psi': n must be a non-negative integer, got {n!r}")
    return int(n)


def _erfcx(x: Any) -> Any:
    return special.erfcx(x)


def _loggamma(x: Any) -> Any:
    return special.loggamma(x)


def _powm1(x: Any, y: Any) -> Any:
    return special.powm1(x, y)


def _psi(x: Any, n: int = 0) -> Any:
    # scipy.special.polygamma computes in float64 whatever x is; psi and zeta keep float32
    n = _order(n)
    if n == 0:
        return special.psi(x)
    return (-1) ** (n + 1) * math.gamma(n + 1) * special.zeta(n + 1, x)


erfcx = OpSpec(
    "erfcx",
    _erfcx,
    numpy=("scipy.special.erfcx",),
    samples=elementwise_samples(WIDE),
    elementwise=True,
    doc="the scaled complementary error function exp(x**2) erfc(x), without erfc's underflow",
)
loggamma = OpSpec(
    "loggamma",
    _loggamma,
    numpy=("scipy.special.loggamma",),
    samples=elementwise_samples(POSITIVE),
    elementwise=True,
    doc="log(Gamma(x)) for x > 0 (scipy's loggamma; nan for real x < 0)",
)
psi = OpSpec(
    "psi",
    _psi,
    params=("n",),
    samples=elementwise_samples(POSITIVE, params=({}, {"n": 1}, {"n": 2})),
    elementwise=True,
    doc="psi(x, n=0): the n-th derivative of the digamma function (scipy's polygamma(n, x))",
)
powm1 = OpSpec(
    "powm1",
    _powm1,
    nin=2,
    numpy=("scipy.special.powm1",),
    samples=elementwise_samples(POSITIVE, REAL),  # broadcasting pairs, 0-d and empty included
    elementwise=True,
    # Where a rule written y (ans + 1) / x or (ans + 1) log(x) is 0/0 or 0 * -inf = nan, the values
    # every exact backend must give, checked by conformance as power's are: at x = 0 < y, d/dx =
    # y x**(y-1) (1 at y = 1, else 0) and d/dy = 0 (0**y is 0 near y); at y = 0, d/dx = 0 (x**0 is
    # the constant 1) and d/dy = log(x). No random sample can hold them: x < 0 is nan for y off the
    # integers, and d/dx jumps across y = 1 at x = 0.
    kinks=(
        Kink(
            ([0.0, 0.0, 0.0, 0.0, 2.0, 0.5], [1.0, 2.0, 3.0, 2.5, 0.0, 0.0]),
            (np.diag([1.0, 0, 0, 0, 0, 0]), np.diag([0, 0, 0, 0, np.log(2.0), np.log(0.5)])),
            why="x**y - 1 at x = 0 < y: d/dx = y x**(y-1), d/dy = 0 (0**y is 0 near y); at y = 0, d/dx = 0",
        ),
    ),
    doc="x**y - 1, accurate where x**y is near 1, broadcasting x with y; its derivatives are power's",
)

OPS: tuple[OpSpec, ...] = (erfcx, loggamma, psi, powm1)
