"""Sympy rules of the core ops: the "sympy" rule table the symbolic backend needs.

Each entry maps an op name to one rule:

    rule(*inputs, **params) -> the op's output

Each input is a NumPy object array of sympy expressions with the input's shape (an input
that is a constant comes as it is: a number or a NumPy array); `params` are the op's
static params as passed. The rule returns the output the same way: an object array of
the output's shape, or one expression for a 0-d output. NumPy does arithmetic on object
arrays element by element with sympy's own operators, and its shape functions
(transpose, reshape, indexing, concatenate) move the expressions about unchanged, so
most rules are one NumPy call. `each(fn, *inputs)` applies a sympy function elementwise,
with broadcasting; `reduce_with(fn, x, axis, keepdims)` calls fn(*slice) per reduced
slice. Sympy is imported when a rule first runs, not when the table is registered.

Kinks follow docs/conventions.md: abs' = sign (0 at 0); sign' = floor' = round' = 0
(sympy's DiracDelta is read as 0); maximum/minimum through Max/Min, whose derivative
Heaviside(0) = 1/2 splits a tie; max/min reductions through amax/amin, which split
among k ties; relu and clip as Piecewise, so relu'(0) = 0 and clip' = 1 on the bounds;
where as Piecewise, whose condition has no derivative. Ops sympy has no stable or exact
form of call the adcore op from the compiled code (adcore_symbolic.functions).
"""

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


def defsympy(op: str, rule: Any) -> None:
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


def _mean(*xs: Any) -> Any:
    return sp.Add(*xs) / len(xs) if xs else sp.nan


def _clip(x: Any, a_min: Any, a_max: Any) -> Any:
    pieces = [(a_min, x < a_min)] if a_min is not None else []
    pieces += [(a_max, x > a_max)] if a_max is not None else []
    return sp.Piecewise(*pieces, (x, True))


def _truth(condition: Any) -> Any:
    """A `where` condition as a sympy boolean: a number or expression is true where nonzero."""
    if isinstance(condition, (bool, np.bool_)) or isinstance(condition, sp.logic.boolalg.Boolean):
        return condition
    return sp.Ne(condition, 0)


def _where(condition: Any, x: Any, y: Any) -> Any:
    return sp.Piecewise((x, _truth(condition)), (y, True))


def _relu(x: Any) -> Any:
    return sp.Piecewise((x, x > 0), (0, True))


def _scatter_add(values: Any, index: Any, shape: Any) -> np.ndarray:
    out = np.zeros(shape, dtype=object)
    np.add.at(out, index, values)
    return out


def _matmul(a: Any, b: Any) -> np.ndarray:
    """a @ b with each entry one sympy Add of its products (NumPy's object matmul adds them
    one at a time, and each sympy Add then copies the terms so far: quadratic)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    row, column = a.ndim == 1, b.ndim == 1
    a = a[None, :] if row else a
    b = b[:, None] if column else b
    out = reduce_with(sp.Add, a[..., :, :, None] * b[..., None, :, :], axis=-2)
    out = out[..., 0, :] if row else out
    return out[..., 0] if column else out


def _logsumexp_keepdims(x: Any, axis: Any) -> np.ndarray:
    return reduce_with(fn.logsumexp, x, axis, keepdims=True)


# fmt: off
# --- arithmetic -------------------------------------------------------------------
defsympy("negative",   lambda x: -x)
defsympy("add",        lambda x, y: x + y)
defsympy("subtract",   lambda x, y: x - y)
defsympy("multiply",   lambda x, y: x * y)
defsympy("divide",     lambda x, y: x / y)
defsympy("power",      lambda x, y: each(fn.power, x, y))
defsympy("square",     lambda x: x ** 2)
defsympy("reciprocal", lambda x: 1 / x)
defsympy("sqrt",       lambda x: each(sp.sqrt, x))

# --- exponentials and logarithms ----------------------------------------------------
defsympy("exp",        lambda x: each(sp.exp, x))
defsympy("expm1",      lambda x: each(fn.expm1, x))
defsympy("log",        lambda x: each(sp.log, x))
defsympy("log1p",      lambda x: each(fn.log1p, x))

# --- trigonometric and hyperbolic -------------------------------------------------
defsympy("sin",        lambda x: each(sp.sin, x))
defsympy("cos",        lambda x: each(sp.cos, x))
defsympy("tan",        lambda x: each(sp.tan, x))
defsympy("arcsin",     lambda x: each(sp.asin, x))
defsympy("arccos",     lambda x: each(sp.acos, x))
defsympy("arctan",     lambda x: each(sp.atan, x))
defsympy("arctan2",    lambda y, x: each(sp.atan2, y, x))
defsympy("sinh",       lambda x: each(sp.sinh, x))
defsympy("cosh",       lambda x: each(sp.cosh, x))
defsympy("tanh",       lambda x: each(sp.tanh, x))

# --- kinks and steps -----------------------------------------------------------------
defsympy("abs",        lambda x: each(sp.Abs, x))
defsympy("sign",       lambda x: each(fn.sign, x))
defsympy("floor",      lambda x: each(fn.floor, x))
defsympy("round",      lambda x, decimals=0: each(lambda e: fn.Round(e, decimals), x))
defsympy("maximum",    lambda x, y: each(sp.Max, x, y))
defsympy("minimum",    lambda x, y: each(sp.Min, x, y))
defsympy("clip",       lambda x, a_min=None, a_max=None: each(_clip, x, a_min, a_max))
defsympy("where",      lambda c, x, y: each(_where, c, x, y))

# --- reductions and matmul ----------------------------------------------------------
defsympy("sum",        lambda x, axis=None, keepdims=False: reduce_with(sp.Add, x, axis, keepdims))
defsympy("mean",       lambda x, axis=None, keepdims=False: reduce_with(_mean, x, axis, keepdims))
defsympy("prod",       lambda x, axis=None, keepdims=False: reduce_with(sp.Mul, x, axis, keepdims))
defsympy("max",        lambda x, axis=None, keepdims=False: reduce_with(fn.amax, x, axis, keepdims))
defsympy("min",        lambda x, axis=None, keepdims=False: reduce_with(fn.amin, x, axis, keepdims))
defsympy("matmul",     _matmul)

# --- shapes and indexing ------------------------------------------------------------
defsympy("transpose",    lambda x, axes=None: np.transpose(x, axes))
defsympy("reshape",      lambda x, shape: np.reshape(x, shape))
defsympy("broadcast_to", lambda x, shape: np.broadcast_to(x, shape))
defsympy("expand_dims",  lambda x, axis: np.expand_dims(x, axis))
defsympy("squeeze",      lambda x, axis=None: np.squeeze(x, axis))
defsympy("getitem",      lambda x, index: np.asarray(x, dtype=object)[index])
defsympy("scatter_add",  _scatter_add)
defsympy("concatenate",  lambda *xs, axis=0: np.concatenate([np.asarray(x, dtype=object) for x in xs], axis=axis))
defsympy("stack",        lambda *xs, axis=0: np.stack([np.asarray(x, dtype=object) for x in xs], axis=axis))

# --- neural-network ops -------------------------------------------------------------
defsympy("sigmoid",       lambda x: each(fn.sigmoid, x))
defsympy("relu",          lambda x: each(_relu, x))
defsympy("softplus",      lambda x: each(fn.softplus, x))
defsympy("softmax",       lambda x, axis=-1: each(sp.exp, x - _logsumexp_keepdims(x, axis)))
defsympy("log_softmax",   lambda x, axis=-1: x - _logsumexp_keepdims(x, axis))
defsympy("logsumexp",     lambda x, axis=None, keepdims=False: reduce_with(fn.logsumexp, x, axis, keepdims))
defsympy("stop_gradient", lambda x: each(fn.stop_gradient, x))
# fmt: on
