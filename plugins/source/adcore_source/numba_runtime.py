"""numba versions of what generated code calls (imported by compile.py only, when it compiles).

`substitute(namespace)` swaps, in a generated module's namespace, each runtime helper for its
numba version here and each adcore op for its NumPy impl (templates call ops: `cos(x)`). The
helpers take numbers and arrays of up to 2 dimensions; anything else has no numba version, so
numba refuses it (a typing error) and the Python version runs.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

from adcore.extend import rules
from adcore_source import reverse_runtime, runtime


def unbroadcast(g: Any, x: Any) -> Any:
    """g summed back to x's shape (numba's version: the overload below)."""
    raise NotImplementedError("a numba stand-in, called from compiled code only")


def add_adjoint(a: Any, b: Any) -> Any:
    raise NotImplementedError("a numba stand-in, called from compiled code only")


def zero_tangent(v: Any) -> Any:
    raise NotImplementedError("a numba stand-in, called from compiled code only")


def broadcast_like(t: Any, y: Any) -> Any:
    raise NotImplementedError("a numba stand-in, called from compiled code only")


def snapshot(v: Any) -> Any:
    raise NotImplementedError("a numba stand-in, called from compiled code only")


def param_adjoint(adjoint: Any, p: Any) -> Any:
    raise NotImplementedError("a numba stand-in, called from compiled code only")


@numba.njit
def plain(g: Any) -> Any:
    return g  # a compiled sweep never sees a Masked cotangent


@numba.njit
def keep_zeros(g: Any, c: Any) -> Any:
    return c


@overload(unbroadcast)
def _unbroadcast(g, x):  # noqa: ANN001, ANN202 -- numba typing function
    if isinstance(g, types.Number) and isinstance(x, types.Number):
        return lambda g, x: g
    if isinstance(g, types.Array) and isinstance(x, types.Number):
        return lambda g, x: g.sum()
    if not (isinstance(g, types.Array) and isinstance(x, types.Array)):
        return None
    if g.ndim == 1 and x.ndim == 1:

        def one(g, x):
            if g.shape == x.shape:
                return g
            return np.full(x.shape, g.sum())

        return one
    if g.ndim == 2 and x.ndim == 1:

        def rows(g, x):
            s = g.sum(axis=0)
            return s if s.shape == x.shape else np.full(x.shape, s.sum())

        return rows
    if g.ndim == 2 and x.ndim == 2:

        def two(g, x):
            if g.shape == x.shape:
                return g
            out = np.zeros(x.shape, g.dtype)
            for i in range(g.shape[0]):
                for j in range(g.shape[1]):
                    out[min(i, x.shape[0] - 1), min(j, x.shape[1] - 1)] += g[i, j]
            return out

        return two
    return None


@overload(add_adjoint)
def _add_adjoint(a, b):  # noqa: ANN001, ANN202
    if isinstance(a, types.NoneType):
        return lambda a, b: b
    if isinstance(b, types.NoneType):
        return lambda a, b: a
    return lambda a, b: a + b


@overload(zero_tangent)
def _zero_tangent(v):  # noqa: ANN001, ANN202
    if isinstance(v, types.Float):
        return lambda v: 0.0
    if isinstance(v, types.Array):
        return lambda v: np.zeros_like(v)
    return None


@overload(broadcast_like)
def _broadcast_like(t, y):  # noqa: ANN001, ANN202
    if isinstance(y, types.Number):
        return lambda t, y: t
    return lambda t, y: t + np.zeros_like(y)


@overload(snapshot)
def _snapshot(v):  # noqa: ANN001, ANN202
    if isinstance(v, types.Number):
        return lambda v: v
    if isinstance(v, types.Array):
        return lambda v: v.copy()
    return None


@overload(param_adjoint)
def _param_adjoint(adjoint, p):  # noqa: ANN001, ANN202
    if isinstance(adjoint, types.NoneType):
        if isinstance(p, types.Number):
            return lambda adjoint, p: 0.0 * p
        if isinstance(p, types.Array):
            return lambda adjoint, p: np.zeros_like(p)
        return None
    if isinstance(p, types.Number) and isinstance(adjoint, types.Number):
        return lambda adjoint, p: adjoint
    if isinstance(p, types.Array) and isinstance(adjoint, types.Array):

        def same_shape(adjoint, p):
            out = np.empty_like(p)
            out.reshape(-1)[:] = np.ascontiguousarray(unbroadcast(adjoint, p)).reshape(-1)
            return out

        return same_shape
    return None


def substitute(namespace: dict[str, Any]) -> None:
    """Each runtime helper in namespace swapped for its numba version, each adcore op for its impl."""
    ours = {
        id(rules.unbroadcast): unbroadcast,
        id(runtime.unbroadcast): unbroadcast,
        id(runtime.add_adjoint): add_adjoint,
        id(runtime.zero_tangent): zero_tangent,
        id(runtime.zero_adjoint): zero_tangent,
        id(runtime.broadcast_like): broadcast_like,
        id(runtime.plain): plain,
        id(runtime.keep_zeros): keep_zeros,
        id(reverse_runtime.snapshot): snapshot,
        id(reverse_runtime.param_adjoint): param_adjoint,
    }
    for name, value in list(namespace.items()):
        if id(value) in ours:
            namespace[name] = ours[id(value)]
        elif type(value).__name__ == "OpSpec":
            impl = value.impl
            namespace[name] = impl if isinstance(impl, np.ufunc) else numba.njit(impl)
