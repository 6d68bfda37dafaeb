"""In-place writes on normalized code: parameters written in place are copied, aliases are refused.

A write `x[i] = v` (S2) or `x += v` changes the object x names. The emitters treat every name as its
own value, so a second name sharing that object (`y = x`, a view `x[1:]`, `x.T`, `np.reshape(x, ...)`,
a list holding x, an argument of a user function) would see a change the derivative does not follow:
normalize refuses those, naming both.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator

import numpy as np

from adcore_source.errors import Origin, refuse
from adcore_source.lowering import ExpressionLowerer, located

VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat", "base"})
VIEW_METHODS = frozenset(
    {"reshape", "ravel", "view", "transpose", "swapaxes", "squeeze", "diagonal", "__array__"}
)
VIEW_FUNCTIONS = tuple(
    getattr(np, name)
    for name in ("asarray", "asanyarray", "ascontiguousarray", "reshape", "ravel", "transpose", "squeeze",
                 "moveaxis", "swapaxes", "atleast_1d", "atleast_2d", "atleast_3d", "expand_dims", "broadcast_to",
                 "diagonal", "real", "imag", "asfortranarray")
    if hasattr(np, name)
)  # fmt: skip


def walk_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a normalized body, nested blocks included, in order."""
    for s in body:
        yield s
        for attr in ("body", "orelse"):
            yield from walk_statements(getattr(s, attr, []) or [])


def written_in_place(body: list[ast.stmt]) -> set[str]:
    """The names of the S2 writes `x[I] = A`."""
    return {
        s.targets[0].value.id
        for s in walk_statements(body)
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript)
    }


def copy_written_params(
    body: list[ast.stmt], params: list[str], lowerer: ExpressionLowerer, line: int
) -> list[ast.stmt]:
    """body after `x = np_array(x)` for each parameter x written in place (the caller's array stays as it was)."""
    written = [p for p in params if p in written_in_place(body)]
    if not written:
        return body
    copy = _numpy_array_name(lowerer)
    copies = [
        located(ast.Assign([ast.Name(p, ast.Store())], ast.Call(copy, [ast.Name(p, ast.Load())], [])), line)
        for p in written
    ]
    return copies + body


def _numpy_array_name(lowerer: ExpressionLowerer) -> ast.Name:
    for key, value in lowerer.namespace.items():
        if value is np.array and key not in lowerer.locals:
            return ast.Name(key, ast.Load())
    key = lowerer.names.fresh("np_array")
    lowerer.namespace[key] = np.array
    return ast.Name(key, ast.Load())


def check_aliases(body: list[ast.stmt], lowerer: ExpressionLowerer, origin: Origin) -> None:
    """Refuse a second name for an object that is written in place after the second name appears."""
    writes: dict[str, list[ast.stmt]] = {}
    for s in walk_statements(body):
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            writes.setdefault(s.targets[0].value.id, []).append(s)
    for s in lowerer.augmented:
        writes.setdefault(s.targets[0].id, []).append(s)
    if not writes:
        return
    order, loops = _positions(body)

    def written_after(name: str, at: ast.stmt) -> bool:
        return any(order[id(w)] > order[id(at)] or loops[id(w)] & loops[id(at)] for w in writes.get(name, []))

    reads = _read_counts(body)
    for s in walk_statements(body):
        if isinstance(s, ast.For) and written_after(s.target.id, s):
            _refuse(s, s.target.id, f"an element of {s.iter.id}", origin)
        if (
            isinstance(s, ast.Expr)
            and isinstance(s.value.args[0], ast.Name)
            and written_after(s.value.args[0].id, s)
        ):
            _refuse(s, s.value.args[0].id, f"the list {s.value.func.value.id}", origin)
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            continue
        v, e = s.targets[0].id, s.value
        for x, how in _shared(e, lowerer):
            if v in lowerer.exempt or (how == "same" and reads.get(x, 0) == 1 and x in lowerer.temporaries):
                continue  # a temporary read once, by this copy: one value under two names, never both live
            if how == "holds" and written_after(x, s):
                _refuse(s, x, f"the container {v}", origin)
            if how == "user" and written_after(x, s):
                _refuse(s, x, f"an argument of {e.func.id}, a user function", origin)
            if how in ("same", "view") and (written_after(x, s) or written_after(v, s)):
                _refuse(s, x if written_after(x, s) else v, f"{v} (a second name for {x})", origin)
            if how == "part" and written_after(v, s):
                _refuse(s, v, f"part of {x}", origin)


def _positions(body: list[ast.stmt]) -> tuple[dict[int, int], dict[int, frozenset[int]]]:
    """Each statement's place in program order and the loops around it (by id)."""
    order: dict[int, int] = {}
    loops: dict[int, frozenset[int]] = {}

    def number(stmts: list[ast.stmt], around: frozenset[int]) -> None:
        for s in stmts:
            order[id(s)], loops[id(s)] = len(order), around
            inner = around | {id(s)} if isinstance(s, ast.For | ast.While) else around
            for attr in ("body", "orelse"):
                number(getattr(s, attr, []) or [], inner)

    number(body, frozenset())
    return order, loops


def _shared(e: ast.expr, lowerer: ExpressionLowerer) -> Iterator[tuple[str, str]]:
    """(name, how) for each local whose object e's value may share: same, view, part, holds, user."""
    match e:
        case ast.Name(id=x) if x in lowerer.locals:
            yield x, "same"
        case ast.Subscript(value=ast.Name(id=x), slice=index):
            yield x, "view" if any(isinstance(n, ast.Slice) for n in ast.walk(index)) else "part"
        case ast.Attribute(value=ast.Name(id=x), attr=attr) if attr in VIEW_ATTRIBUTES:
            yield x, "view"
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            yield from ((a.id, "holds") for a in elts if isinstance(a, ast.Name))
        case ast.Dict(values=values):
            yield from ((a.id, "holds") for a in values if isinstance(a, ast.Name))
        case ast.Call(func=ast.Name(id=c), args=args):
            names = [
                a.value.id if isinstance(a, ast.Starred) else a.id
                for a in args
                if isinstance(a, ast.Name | ast.Starred)
            ]
            if c in lowerer.method_of and lowerer.method_of[c][1] in VIEW_METHODS:
                yield lowerer.method_of[c][0], "view"
            obj = lowerer.namespace.get(c) if c not in lowerer.locals else None
            if any(obj is f for f in VIEW_FUNCTIONS) and names:
                yield names[0], "view"
            elif c in lowerer.lifted or (isinstance(obj, types.FunctionType) and not _library(obj)):
                yield from ((n, "user") for n in names)


def _library(fn: types.FunctionType) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in {"numpy", "adcore", "scipy"}


def _read_counts(body: list[ast.stmt]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _refuse(node: ast.AST, name: str, other: str, origin: Origin) -> None:
    refuse(
        node,
        f"{other} sharing {name!r}, which is written in place",
        f"write {name} = {name} + v instead of +=, or copy with np.array(...) before sharing",
        origin,
    )
