"""adcore's symbolic backend: f traced into sympy, differentiated exactly without expression
swell, compiled to NumPy (seed 001 符号微分, seed 002 符号到符号的方法).

Importing this package does not import sympy; `derivative_expr` and the backend's first
use do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore_symbolic.backend import DEFAULT_MAX_NODES, SymbolicBackend
from adcore_symbolic.errors import ExpressionTooLargeError, SymbolicControlFlowError

__all__ = [
    "DEFAULT_MAX_NODES",
    "ExpressionTooLargeError",
    "SymbolicBackend",
    "SymbolicControlFlowError",
    "derivative_expr",
]


def derivative_expr(
    f: Callable[..., Any],
    *shapes_or_args: Any,
    argnums: int | Sequence[int] = 0,
    max_nodes: int = DEFAULT_MAX_NODES,
):
    """The symbolic derivative of f, to read: a Derivation with the sympy expressions
    (`value`, `derivatives`), their CSE form (`cse`, `program`), `str()`, `latex()` and the
    generated NumPy code (`source`).

    Each of `shapes_or_args` is a shape (a tuple of ints: a float64 array of that shape) or
    an argument as f would get it. `argnums` picks the arguments to differentiate by.
    """
    from adcore_symbolic.derive import derive

    args = tuple(_argument(a) for a in shapes_or_args)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    return derive(f, args, nums, want_value=True, max_nodes=max_nodes)


def _argument(a: Any) -> Any:
    if isinstance(a, tuple) and all(isinstance(n, int) for n in a):
        return np.zeros(a)
    if isinstance(a, float):
        return np.asarray(a)
    return a
