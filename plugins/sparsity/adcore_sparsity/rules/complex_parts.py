"""Sparsity rules of adcore/ops/complex_parts.py: real, imag, conj and angle, elementwise.

On a real input, real and conj are the identity; imag is 0 and angle a step (0 or pi): no
dependency. On a complex one each output element depends on its input element, also where
angle's derivative is 0 (at z = 0, where its rule is conj(z) / 1: second derivatives remain).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.ops.complex_parts import is_complex
from adcore_sparsity.extend import SparsityRule, elementwise, selected
from adcore_sparsity.rules.table import defsparsity


def of_complex(order: str) -> SparsityRule:
    """An elementwise op with no derivative on a real input, the identity pattern on a complex one."""

    def dependencies(ans: Any, z: Any, **params: Any) -> tuple:
        return (selected(np.shape(z), np.shape(ans)) if is_complex(z) else None,)

    return SparsityRule(dependencies, order, True)


# fmt: off
defsparsity("real",  elementwise("linear"))
defsparsity("imag",  of_complex("linear"))
defsparsity("conj",  elementwise("linear"))
defsparsity("angle", of_complex("nonlinear"))
# fmt: on
