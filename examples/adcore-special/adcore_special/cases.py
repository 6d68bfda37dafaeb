"""A composite function the conformance suite checks like an op: the special ops chained."""

from __future__ import annotations

from typing import Any

import adcore
import adcore.numpy as anp
from adcore.spec import REAL, elementwise_samples
from adcore_special.ops import erfcx, loggamma, powm1


def special_chain(x: Any, y: Any) -> Any:
    """sum(powm1(erfcx(x), loggamma(1 + y**2))): every op of the plugin through the chain
    rule, broadcasting x with y (its second derivatives need psi)."""
    return anp.sum(powm1(erfcx(x), loggamma(1 + y * y)))


SPECIAL_CHAIN = adcore.Case(
    "special_chain",
    special_chain,
    samples=elementwise_samples(REAL, REAL),  # the broadcasting pairs powm1 is checked on
    argnums=(0, 1),
    doc=special_chain.__doc__ or "",
)
