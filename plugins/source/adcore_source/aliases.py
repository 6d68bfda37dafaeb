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
    """Refuse two names for one object when one is written in place and the other read after that."""
    writes: dict[str, list[ast.stmt]] = {}
    for s in walk_statements(body):
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            writes.setdefault(s.targets[0].value.id, []).append(s)
    for s in lowerer.augmented:
        writes.setdefault(s.targets[0].id, []).append(s)
    if not writes:
        return
    order, loops, parent = _positions(body)
    reads = _readers(body)

    def after(a: ast.stmt, b: ast.stmt) -> bool:
        """a may run after b: later in the body, or both in one loop (a later iteration)."""
        return order[id(a)] > order[id(b)] or bool(loops[id(a)] & loops[id(b)])

    def read_stale(r: ast.stmt, w: ast.stmt, at: ast.stmt) -> bool:
        """r may run after w with no new run of `at` between them."""
        o_r, o_w, o_at = order[id(r)], order[id(w)], order[id(at)]
        if parent[id(at)] == parent[id(r)] and o_at < o_r and not o_at < o_w < o_r:
            return False  # at runs before r whenever r runs, and w does not come between
        if o_r > o_w:
            return True
        rerun = parent[id(at)] in loops[id(r)] and o_at < o_r
        return bool(loops[id(r)] & loops[id(w)]) and not rerun

    def stale(written: str, other: str, at: ast.stmt) -> bool:
        """`written` changes in place after `at` made `other` share it, and `other` is read after that."""
        return any(
            after(w, at) and any(read_stale(r, w, at) for r in reads.get(other, []))
            for w in writes.get(written, [])
        )

    def check(at: ast.stmt, x: str, v: str, what: str) -> None:
        if stale(x, v, at) or stale(v, x, at):
            _refuse(at, x if stale(x, v, at) else v, what, origin)

    for s in walk_statements(body):
        if isinstance(s, ast.For):
            check(s, s.iter.id, s.target.id, f"{s.target.id}, an element of {s.iter.id},")
        if isinstance(s, ast.Expr) and isinstance(s.value.args[0], ast.Name):
            check(s, s.value.args[0].id, s.value.func.value.id, f"the list {s.value.func.value.id}")
        if (
            not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name))
            or s.targets[0].id in lowerer.exempt
        ):
            continue
        v, e = s.targets[0].id, s.value
        for x, how in _shared(e, lowerer):
            check(s, x, v, _sharing(how, x, v))


def _sharing(how: str, x: str, v: str) -> str:
    if how == "holds":
        return f"the container {v}"
    if how == "user":
        return f"{v}, the value of a user function of {x},"
    if how == "part":
        return f"{v}, part of {x},"
    return f"{v} (a second name for {x})"


def _readers(body: list[ast.stmt]) -> dict[str, list[ast.stmt]]:
    """For each name, the statements that read it (their own expressions, not their nested blocks)."""
    found: dict[str, list[ast.stmt]] = {}
    for s in walk_statements(body):
        if isinstance(s, ast.Assign):
            parts = [s.value] + ([s.targets[0].slice] if isinstance(s.targets[0], ast.Subscript) else [])
        else:
            parts = [
                getattr(s, attr) for attr in ("value", "test", "iter") if getattr(s, attr, None) is not None
            ]
        for name in {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}:
            found.setdefault(name, []).append(s)
    return found


def _positions(
    body: list[ast.stmt],
) -> tuple[dict[int, int], dict[int, frozenset[int]], dict[int, int | None]]:
    """Each statement's place in program order, the loops around it and the block holding it (by id)."""
    order: dict[int, int] = {}
    loops: dict[int, frozenset[int]] = {}
    parent: dict[int, int | None] = {}

    def number(stmts: list[ast.stmt], around: frozenset[int], holder: int | None) -> None:
        for s in stmts:
            order[id(s)], loops[id(s)], parent[id(s)] = len(order), around, holder
            inner = around | {id(s)} if isinstance(s, ast.For | ast.While) else around
            for attr in ("body", "orelse"):
                number(getattr(s, attr, []) or [], inner, id(s))

    number(body, frozenset(), None)
    return order, loops, parent


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


def _refuse(node: ast.AST, name: str, other: str, origin: Origin) -> None:
    refuse(
        node,
        f"{other} sharing its value with {name!r}, which is written in place before the other is read",
        f"copy with np.array(...) before sharing (or write {name} = {name} + v instead of {name} += v)",
        origin,
    )
