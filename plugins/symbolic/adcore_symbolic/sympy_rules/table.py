"""The "sympy" rule table itself, which the modules of this package fill, one module per
module of the core catalogue (adcore/ops/), and the helpers rules use: the rule forms
are in the package's docstring."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from adcore.extend import reduced_axes


class _Module:
    """A module imported on its first attribute access: adcore registers every plugin's
    rules when it first needs its registry, and that must not import sympy."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


sp = _Module("sympy")
fn = _Module("adcore_symbolic.functions")

SYMPY_RULES: dict[str, Any] = {}
# ops sympy has no form of, with why: they get no rule (the backend reports them unsupported)
NO_SYMPY_FORM: dict[str, str] = {}


def defsympy(op: str, rule: Any) -> None:
    """The op's output built from its inputs' sympy expressions."""
    if op in SYMPY_RULES:
        raise ValueError(f"op {op!r} has two sympy rules in adcore_symbolic.sympy_rules")
    SYMPY_RULES[op] = rule


def each(func: Any, *inputs: Any) -> np.ndarray:
    """func applied to the inputs element by element, broadcasting them: an object array."""
    return np.asarray(np.frompyfunc(func, len(inputs), 1)(*inputs), dtype=object)


def reduce_with(func: Any, x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """func(*elements) for each slice of x along `axis` (None: all axes), NumPy's reduction shape."""
    x = np.asarray(x, dtype=object)
    axes = reduced_axes(x.ndim, axis)
    kept = [i for i in range(x.ndim) if i not in axes]
    rows = np.transpose(x, kept + list(axes)).reshape([x.shape[i] for i in kept] + [-1])
    out = np.empty(rows.shape[:-1], dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = func(*rows[index])
    if keepdims:
        out = out.reshape([1 if i in axes else n for i, n in enumerate(x.shape)])
    return out
