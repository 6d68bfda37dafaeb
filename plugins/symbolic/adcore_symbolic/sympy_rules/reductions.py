"""Sympy rules of adcore/ops/reductions.py: sum, mean, prod, max, min."""

from __future__ import annotations

from typing import Any

from adcore_symbolic.sympy_rules.table import defsympy, fn, reduce_with, sp


def _mean(*xs: Any) -> Any:
    return sp.Add(*xs) / len(xs) if xs else sp.nan


# fmt: off
# --- reductions ----------------------------------------------------------------------
defsympy("sum",        lambda x, axis=None, keepdims=False: reduce_with(sp.Add, x, axis, keepdims))
defsympy("mean",       lambda x, axis=None, keepdims=False: reduce_with(_mean, x, axis, keepdims))
defsympy("prod",       lambda x, axis=None, keepdims=False: reduce_with(sp.Mul, x, axis, keepdims))
defsympy("max",        lambda x, axis=None, keepdims=False: reduce_with(fn.amax, x, axis, keepdims))
defsympy("min",        lambda x, axis=None, keepdims=False: reduce_with(fn.amin, x, axis, keepdims))

# fmt: on
