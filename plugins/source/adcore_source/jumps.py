"""Remove early returns, breaks and continues from a function body, before it is lowered.

An early `return v` becomes `result = v; returned = True`; a `break` sets `broke`, a `continue` sets
`skipped`; the statements after one that may have set a flag run under `if not <flags>:`. A `for`
loop that can be left early ends with `if <exit flag>: break` (grammar S7); a `while` loop's test
becomes `not <exit flags> and <test>`. The result is plain Python computing the same values.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from adcore_source.naming import Names


@dataclass
class _Loop:
    broke: str | None = None
    skipped: str | None = None


@dataclass
class _Flags:
    returned: str | None = None
    result: str | None = None
    used: set[str] = field(default_factory=set)


def without_jumps(body: list[ast.stmt], names: Names, line: int) -> list[ast.stmt]:
    """body with no continue, no break but S7's, and one return, the last statement."""
    early = any(isinstance(n, ast.Return) for s in body[:-1] for n in _walk(s)) or (
        body
        and not isinstance(body[-1], ast.Return)
        and any(isinstance(n, ast.Return) for n in _walk(body[-1]))
    )
    flags = _Flags()
    if early:
        flags.returned, flags.result = names.fresh("returned"), names.fresh("result")
        start = [_set(flags.returned, False, line), _set(flags.result, None, line)]
        end = [_at(ast.Return(ast.Name(flags.result, ast.Load())), body[-1].lineno)]
        out = start + _Remover(names, flags).block(body, None) + end
        return out if flags.returned in flags.used else _without_assignments(out, flags.returned)
    return _Remover(names, flags).block(body, None)


class _Remover:
    def __init__(self, names: Names, flags: _Flags):
        self.names = names
        self.flags = flags

    def block(self, stmts: list[ast.stmt], loop: _Loop | None) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, s in enumerate(stmts):
            out += self.stmt(s, loop)
            if isinstance(s, ast.Return | ast.Break | ast.Continue):
                return out  # what follows never runs
            set_flags = self.flags_set_by(s, loop)
            rest = stmts[i + 1 :]
            if set_flags and rest:
                self.flags.used.update(set_flags)
                guard = ast.UnaryOp(ast.Not(), _either(set_flags))
                out.append(_at(ast.If(guard, self.block(rest, loop), []), rest[0].lineno))
                return out
        return out

    def flags_set_by(self, s: ast.stmt, loop: _Loop | None) -> list[str]:
        found: list[str] = []
        if self.flags.returned and any(isinstance(n, ast.Return) for n in _walk(s)):
            found.append(self.flags.returned)
        if loop is not None:
            kinds = {type(n) for n in _walk(s, into_loops=False)}
            found += [
                flag
                for flag, kind in ((loop.broke, ast.Break), (loop.skipped, ast.Continue))
                if flag and kind in kinds
            ]
        return found

    def stmt(self, s: ast.stmt, loop: _Loop | None) -> list[ast.stmt]:
        if isinstance(s, ast.Return) and self.flags.returned:
            value = s.value if s.value is not None else ast.Constant(None)
            return [_at(ast.Assign([ast.Name(self.flags.result, ast.Store())], value), s.lineno),
                    _set(self.flags.returned, True, s.lineno)]  # fmt: skip
        if isinstance(s, ast.Break) and loop is not None:
            return [_set(loop.broke, True, s.lineno)]
        if isinstance(s, ast.Continue) and loop is not None:
            return [_set(loop.skipped, True, s.lineno)]
        if isinstance(s, ast.If):
            return [_at(ast.If(s.test, self.block(s.body, loop), self.block(s.orelse, loop)), s.lineno)]
        if isinstance(s, ast.For | ast.While):
            return self.loop(s)
        return [s]

    def loop(self, s: ast.For | ast.While) -> list[ast.stmt]:
        kinds = {type(n) for b in s.body for n in _walk(b, into_loops=False)}
        inner = _Loop(
            broke=self.names.fresh("broke") if ast.Break in kinds else None,
            skipped=self.names.fresh("skipped") if ast.Continue in kinds else None,
        )
        returns = self.flags.returned is not None and any(
            isinstance(n, ast.Return) for b in s.body for n in _walk(b)
        )
        body = self.block(s.body, inner)
        if inner.skipped:
            body = [_set(inner.skipped, False, s.body[0].lineno), *body]
        exits = [flag for flag in (inner.broke, self.flags.returned if returns else None) if flag]
        before = [_set(inner.broke, False, s.lineno)] if inner.broke else []
        if not exits:
            return [*before, _replace_body(s, body)]
        self.flags.used.update(exits)
        if isinstance(s, ast.For):
            body.append(_at(ast.If(_either(exits), [_at(ast.Break(), s.lineno)], []), s.lineno))
            return [*before, _replace_body(s, body)]
        test = ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), _either(exits)), s.test])
        return [*before, _at(ast.While(test, body, s.orelse), s.lineno)]


def _replace_body(s: ast.For | ast.While, body: list[ast.stmt]) -> ast.stmt:
    new = (
        ast.For(s.target, s.iter, body, s.orelse)
        if isinstance(s, ast.For)
        else ast.While(s.test, body, s.orelse)
    )
    return _at(new, s.lineno)


def _either(flags: list[str]) -> ast.expr:
    names = [ast.Name(f, ast.Load()) for f in flags]
    return names[0] if len(names) == 1 else ast.BoolOp(ast.Or(), names)


def _set(name: str, value: object, line: int) -> ast.Assign:
    return _at(ast.Assign([ast.Name(name, ast.Store())], ast.Constant(value)), line)


def _at(node: ast.stmt, line: int) -> ast.stmt:
    node.lineno = node.end_lineno = line
    node.col_offset = node.end_col_offset = 0
    return node


def _walk(node: ast.AST, into_loops: bool = True):
    """ast.walk within one function (not into nested defs/lambdas/classes), optionally not into loops."""
    yield node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
        return  # its returns are its own
    if not into_loops and isinstance(node, ast.For | ast.While | ast.AsyncFor):
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield from _walk(child, into_loops)


def _without_assignments(stmts: list[ast.stmt], name: str) -> list[ast.stmt]:
    """stmts without the assignments to `name` (a flag nothing reads)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name:
            continue
        for attr in ("body", "orelse"):
            if isinstance(getattr(s, attr, None), list):
                setattr(s, attr, _without_assignments(getattr(s, attr), name))
        out.append(s)
    return out
