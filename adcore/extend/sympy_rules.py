"""The helpers of `sympy` rules (re-exported by `adcore.extend`): none of them imports sympy.

adcore calls every plugin's hooks when it first needs its registry, and `import adcore` plus
a gradient on another backend must not import sympy: a rule module names sympy (and the
module of its own sympy functions) through a `LazyModule`, imported when a rule first runs,
under the symbolic backend. A rule's inputs are NumPy object arrays of sympy expressions:
`each` applies a sympy function to them element by element, `reduce_with` to each slice of
a reduction.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from adcore.extend.rules import reduced_axes


class LazyModule:
    """A module imported on its first attribute access: `sp = LazyModule("sympy")`, then
    `sp.exp` in a rule imports sympy when the rule first runs, not when it is registered."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


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
