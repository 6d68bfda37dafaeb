"""What the reverse emitter learns of f's A-normal form before emitting it: the ifs whose flag their
branches rewrite (given a copy to test), the methods of active values, the names an adjoint can
reach, and the names f uses (the generated ones must not clash)."""

from __future__ import annotations

import ast
from typing import Any

from adcore_source import reverse_flow as flow
from adcore_source.reverse_parts import INACTIVE_ATTRIBUTES, LINEAR_ATTRIBUTES, VALUE_ATTRIBUTES


def signature_params(norm: Any) -> list[str]:
    return [*norm.params, *([norm.vararg] if norm.vararg else []), *norm.kwonly]


class Namer:
    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def flagged(stmts: list[ast.stmt], namer: Namer) -> list[ast.stmt]:
    """The body with each `if c:` whose branches assign c preceded by `c_taken = c` and testing it:
    the adjoint sweep reads the flag where the if ends, and must read the one the if tested."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            stmt.body, stmt.orelse = flagged(stmt.body, namer), flagged(stmt.orelse, namer)
            c = stmt.test.id
            if any(c in flow.assigned_names(s) for s in stmt.body + stmt.orelse):
                flag = namer.fresh(f"{c}_taken")
                out.append(
                    ast.copy_location(
                        ast.Assign([ast.Name(flag, ast.Store())], ast.Name(c, ast.Load())), stmt
                    )
                )
                stmt.test = ast.Name(flag, ast.Load())
        elif isinstance(stmt, (ast.For, ast.While)):
            stmt.body = flagged(stmt.body, namer)
        out.append(stmt)
    return out


def methods_of(body: list[ast.stmt], activity: frozenset[str]) -> dict[str, tuple[str, str]]:
    """m -> (x, attr) for `m = x.attr`, a method of an active x (called later through call_vjp)."""
    out: dict[str, tuple[str, str]] = {}
    for stmt in walk_statements(body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            value, m = stmt.value, stmt.targets[0].id
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id in activity
            ):
                if value.attr not in INACTIVE_ATTRIBUTES | VALUE_ATTRIBUTES | set(LINEAR_ATTRIBUTES):
                    out[m] = (value.value.id, value.attr)
            elif isinstance(value, ast.Name) and value.id in out:
                out[m] = out[value.id]
    # only what is called is a method: another attribute (eigh(m).eigenvalues) is a value
    called = {
        c.func.id
        for c in (n for s in walk_statements(body) for n in ast.walk(s))
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
    }
    methods = {out[m] for m in out if m in called}
    return {m: xa for m, xa in out.items() if xa in methods}


def useful(body: list[ast.stmt], activity: frozenset[str], methods: dict) -> set[str]:
    """The active names an adjoint can reach: those the output's value depends on through active
    values (the others' adjoints are zero: their statements run as f's, with no adjoint code)."""
    ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
    out = {ret.value.id} if ret is not None and isinstance(ret.value, ast.Name) else set()
    stmts = list(walk_statements(body))
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            if isinstance(stmt, ast.For):
                target, sources = stmt.target.id, {stmt.iter.id}
            elif flow.in_place_target(stmt) is not None:
                target = flow.in_place_target(stmt)
                value = stmt.value if isinstance(stmt, ast.Assign) else stmt.value.args[0]
                sources = local_names(value, activity)
            elif isinstance(stmt, ast.Assign) and not isinstance(stmt.value, ast.Compare):
                target, sources = stmt.targets[0].id, local_names(stmt.value, activity)
                if isinstance(stmt.value, ast.Call) and stmt.value.func.id in methods:
                    sources.add(methods[stmt.value.func.id][0])
            else:
                continue
            new = (sources & activity) - out if target in out else set()
            if new:
                out |= new
                changed = True
    return out


def walk_statements(stmts: list[ast.stmt]):
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            yield from walk_statements(stmt.body)
            yield from walk_statements(stmt.orelse)


def names_in(norm: Any) -> set[str]:
    names = set(signature_params(norm)) | set(getattr(norm, "namespace", {}) or {})
    return names | names_of(norm.body)


def names_of(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}


def local_names(node: ast.AST, locals_: set[str]) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in locals_}


def sequences(body: list[ast.stmt]) -> set[str]:
    """The names that hold lists or tuples wherever they are assigned: appended to, or assigned a
    display or a concatenation of such names (their `+` is a concatenation, not arithmetic)."""
    stmts = list(walk_statements(body))
    appended = {flow.in_place_target(s) for s in stmts if isinstance(s, ast.Expr)} - {None}
    assigned: dict[str, list[ast.expr]] = {}
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            assigned.setdefault(s.targets[0].id, []).append(s.value)
    out = set(appended)
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in out and all(_sequence_value(v, out) for v in values):
                out.add(name)
                changed = True
    return out


def _sequence_value(value: ast.expr, known: set[str]) -> bool:
    if isinstance(value, (ast.List, ast.Tuple)):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return any(isinstance(a, ast.Name) and a.id in known for a in (value.left, value.right))
    return False
