"""Pieces of rules that more than one kind of rule needs for the same op (re-exported by
`adcore.extend`): `refuse_singular` for logabsdet at a singular matrix, `ties_averaged` for the
values of a decomposition at a repeated value, `centred` for var and std. Written with adcore ops,
so rules built from them nest. Layer 3 (docs/architecture.md): it imports core and ops only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.core import concrete, plain_numbers
from adcore.errors import LinearAlgebraError
from adcore.ops.reductions import mean


def refuse_singular(logabsdet: Any, op: str = "logabsdet") -> None:
    """log|det a| = -inf has no derivative: say so rather than give inf or nan."""
    if plain_numbers(np.isneginf(concrete(logabsdet))).any():  # (under vmap: any example's)
        raise LinearAlgebraError(
            f"op {op!r} (np.linalg.slogdet): a is singular, log|det a| = -inf, which has no "
            "derivative; det(a) has one (the cofactor matrix) if that is what you need"
        )


def ties_averaged(v: Any, values: Any, tol: Any) -> Any:
    """v (a tangent or cotangent of the values) averaged within each repeated value: ties split
    equally, as max's. The derivative of a symmetric function of the values is unchanged (exact,
    as it is equal within a block), and the others (w[0] at a repeated eigenvalue, no derivative)
    get a subgradient that does not depend on LAPACK's basis of the eigenspace."""
    # imported here: import adcore then compiles no decomposition rules (only a rule's call needs them)
    from adcore.ops.decomposition_rules import block_average, degenerate_blocks

    same = degenerate_blocks(values, tol)
    ties = same & ~np.eye(same.shape[-1], dtype=bool)
    return block_average(v, same) if plain_numbers(ties).any() else v  # (under vmap: in any example)


def centred(x: Any, axis: Any) -> Any:
    """x minus its mean over axis (var's and std's derivative is along it)."""
    return x - mean(x, axis=axis, keepdims=True)
