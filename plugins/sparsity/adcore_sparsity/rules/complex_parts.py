"""Sparsity rules of adcore/ops/complex_parts.py: real, imag, conj and angle, elementwise.

On a real input, real and conj are the identity; imag is 0 and angle a step (0 or pi): no
dependency. On a complex one each output element depends on its input element; angle's
derivative Im(dz / z) is 0 at z = 0 (a point of no derivative, given 0 as abs'(0)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.extend.sparsity import SparsityRule, elementwise, readable, selected
from adcore.ops.complex_parts import is_complex
from adcore_sparsity.rules.table import defsparsity


def of_complex(order: str, at_zero: bool = True) -> SparsityRule:
    """An elementwise op with no derivative on a real input; on a complex one the identity pattern
    (without z = 0 at a point, unless at_zero)."""

    def dependencies(ans: Any, z: Any, **params: Any) -> tuple:
        if not is_complex(z):
            return (None,)
        keep = True if at_zero or not readable(z) else np.asarray(z) != 0
        return (selected(np.shape(z), np.shape(ans), keep),)

    return SparsityRule(dependencies, order, True)


# fmt: off
defsparsity("real",  elementwise("linear"))
defsparsity("imag",  of_complex("linear"))
defsparsity("conj",  elementwise("linear"))
defsparsity("angle", of_complex("nonlinear", at_zero=False))
# fmt: on
