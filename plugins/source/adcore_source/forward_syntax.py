"""The forward emitter's syntax helpers: AST builders, the walks over f's normal form, and the
pass that drops dead code from the emitted function."""

from __future__ import annotations

import ast
from typing import Any


def drop_dead_code(fn: ast.FunctionDef, removable: dict[int, ast.Assign]) -> None:
    """Remove the tangent statements `dy = ...` and the primal ones without effect `y = a * b` whose
    name nothing reads (a value or tangent that does not reach the output), until none is left; a
    block left empty gets `pass`."""
    while True:
        read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        dropped = False
        for node in ast.walk(fn):
            for field in ("body", "orelse"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                kept = [s for s in block if removable.get(id(s)) is not s or s.targets[0].id in read]
                if len(kept) != len(block):
                    dropped = True
                    kept = _without_dangling_comments(kept)
                    setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
        if not dropped:
            return


def _without_dangling_comments(block: list[ast.stmt]) -> list[ast.stmt]:
    """A comment marker followed by another marker or nothing has lost its statements."""
    out = []
    for k, s in enumerate(block):
        marker = (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
        if marker and (k + 1 == len(block) or _is_marker(block[k + 1])):
            continue
        out.append(s)
    return out


def _is_marker(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)


# --- small AST builders and walks ------------------------------------------------------------


def name(id_: str, ctx: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id_, ctx or ast.Load())


def call(func: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(name(func), args, [])


def assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([name(target, ast.Store())], value)


def identifier(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    return cleaned or "function"


def operand_names(value: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def container_atoms(value: ast.expr) -> list[ast.expr]:
    if isinstance(value, (ast.Tuple, ast.List)):
        return list(value.elts)
    if isinstance(value, ast.Dict):
        return list(value.values)
    return []


def names_in(norm: Any) -> set[str]:
    names = set([*norm.params, *([norm.vararg] if norm.vararg else []), *norm.kwonly]) | set(
        getattr(norm, "namespace", {}) or {}
    )
    for stmt in norm.body:
        names |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return names


def assigned(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


def written(stmts: list[ast.stmt]) -> set[str]:
    """The names written into in place (x[i] = a, x.append(a)) in these statements."""
    out: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
                if isinstance(node.targets[0].value, ast.Name):
                    out.add(node.targets[0].value.id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name):
                    out.add(node.func.value.id)
    return out
