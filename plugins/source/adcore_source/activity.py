"""Activity analysis: which locals of a normalized function depend on a differentiated parameter.

A name is active when some assignment to it (anywhere: a fixpoint over loops and branches) reads an
active name through an operation with a derivative. Comparisons, `not`, `len`, `range`, `.shape`,
`.dtype`, `.ndim`, `.size` and the piecewise-constant ops (floor, sign, round, argmax, ... : the ops
whose partials are None) give inactive values. `float(x)`, `int(x)`, `x.item()` and `x.tolist()` of an
active x would drop its derivative: refused, naming the line.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from adcore.extend.elementwise_partials import PARTIALS
from adcore_source.errors import refuse
from adcore_source.normalize import Normalized

INACTIVE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides", "flags"})
DROPPING_ATTRIBUTES = frozenset({"item", "tolist"})
INACTIVE_OPERATORS = (ast.FloorDiv, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
DROPPING_BUILTINS = (builtins.float, builtins.int, builtins.bool, builtins.complex)
_INACTIVE_BUILTINS = (len, range, isinstance, type, id, print, round, repr, str, format, hash, callable)
_INACTIVE_NUMPY = (
    "shape", "ndim", "size", "result_type", "zeros_like", "ones_like", "empty_like", "argmax", "argmin",
    "argsort", "argwhere", "nonzero", "flatnonzero", "count_nonzero", "searchsorted", "digitize", "isnan",
    "isinf", "isfinite", "isclose", "allclose", "array_equal", "signbit", "floor", "ceil", "trunc", "rint",
    "fix", "sign", "around", "round", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "floor_divide", "heaviside", "iscomplexobj",
    "isrealobj", "isscalar", "unique",
)  # fmt: skip
_INACTIVE_MATH = ("floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "isclose", "copysign")
INACTIVE_CALLEES: tuple[Any, ...] = (
    *_INACTIVE_BUILTINS,
    *(getattr(np, n) for n in _INACTIVE_NUMPY if hasattr(np, n)),
    *(getattr(math, n) for n in _INACTIVE_MATH if n != "copysign"),
)
_NO_DERIVATIVE_OPS = frozenset(op for op, partials in PARTIALS.items() if all(p is None for p in partials))


def active_names(norm: Normalized, active_params: Iterable[str | int]) -> frozenset[str]:
    """The locals of norm that depend on the parameters `active_params` (names or positions)."""
    params = [*norm.params, *([norm.vararg] if norm.vararg else []), *norm.kwonly]
    active = {params[p] if isinstance(p, int) else p for p in active_params}
    statements = list(_walk(norm.body))
    changed = True
    while changed:
        changed = False
        for s in statements:
            for name in _made_active(s, active, norm):
                if name not in active:
                    active.add(name)
                    changed = True
    for s in statements:
        _refuse_dropped_derivatives(s, active, norm)
    return frozenset(active)


def inactive_callee(obj: Any) -> bool:
    """True for a callee whose value never carries a derivative (len, np.floor, np.argmax, ...)."""
    if any(obj is c for c in INACTIVE_CALLEES):
        return True
    name = getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) or ""
    from_library = isinstance(obj, np.ufunc) or module.split(".")[0] in {"numpy", "adcore"}
    return from_library and name in _NO_DERIVATIVE_OPS


def _walk(body: list[ast.stmt]):
    for s in body:
        yield s
        for attr in ("body", "orelse"):
            yield from _walk(getattr(s, attr, []) or [])


def _made_active(s: ast.stmt, active: set[str], norm: Normalized) -> list[str]:
    """The names statement s makes active, given the active names so far."""
    if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
        return [s.targets[0].id] if _active_value(s.value, active, norm) else []
    if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):  # S2: x[I] = A
        return [s.targets[0].value.id] if _is_active(s.value, active) else []
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):  # S3: xs.append(A)
        owner = s.value.func.value.id
        return [owner] if any(_is_active(a, active) for a in s.value.args) else []
    if isinstance(s, ast.For):
        return [s.target.id] if _is_active(s.iter, active) else []
    return []


def _is_active(e: ast.expr | None, active: set[str]) -> bool:
    return isinstance(e, ast.Name) and e.id in active


def _active_value(e: ast.expr, active: set[str], norm: Normalized) -> bool:
    match e:
        case ast.Name() | ast.Constant():
            return _is_active(e, active)
        case ast.BinOp(left=a, op=op, right=b):
            return not isinstance(op, INACTIVE_OPERATORS) and (_is_active(a, active) or _is_active(b, active))
        case ast.UnaryOp(op=op, operand=a):
            return isinstance(op, ast.USub | ast.UAdd) and _is_active(a, active)
        case ast.Compare():
            return False
        case ast.Subscript(value=x):
            return _is_active(x, active)
        case ast.Attribute(value=x, attr=attr):
            return attr not in INACTIVE_ATTRIBUTES and _is_active(x, active)
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            return any(_is_active(a, active) for a in elts)
        case ast.Dict(values=values):
            return any(_is_active(a, active) for a in values)
        case ast.Call(func=ast.Name(id=c), args=args, keywords=keywords):
            if c in norm.namespace and c not in active and inactive_callee(norm.namespace[c]):
                return False
            if c in norm.namespace and any(norm.namespace[c] is d for d in DROPPING_BUILTINS):
                return False  # refused below when its argument is active
            inputs = [a.value if isinstance(a, ast.Starred) else a for a in args] + [
                k.value for k in keywords
            ]
            return _is_active(e.func, active) or any(_is_active(a, active) for a in inputs)
    return False


def _refuse_dropped_derivatives(s: ast.stmt, active: set[str], norm: Normalized) -> None:
    if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
        return
    e = s.value
    if isinstance(e, ast.Attribute) and e.attr in DROPPING_ATTRIBUTES and _is_active(e.value, active):
        refuse(
            s,
            f"{e.value.id}.{e.attr}() of a differentiated value",
            "keep it an array (or a NumPy scalar)",
            norm,
        )
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in norm.namespace:
        obj = norm.namespace[e.func.id]
        if any(obj is d for d in DROPPING_BUILTINS) and any(_is_active(a, active) for a in e.args):
            refuse(
                s,
                f"{obj.__name__}() of a differentiated value (it would drop the derivative)",
                "keep the value as it is, or use it only in comparisons",
                norm,
            )
