"""The forward sweep of reverse mode: f's statements in f's order, with what the adjoint sweep
needs recorded (reverse_flow): pushes before overwrites and at the ends of loop trips, trip counts,
the names it reads saved at the end (copied where the caller or f's own writes could change them),
and dead assignments with no effect left out."""

from __future__ import annotations

import ast
import copy
from typing import Any

from adcore_source import reverse_flow as flow
from adcore_source import reverse_runtime
from adcore_source.errors import refuse
from adcore_source.reverse_scan import walk_statements


def forward_function(em: Any, rec: flow.Record) -> ast.FunctionDef:
    """`def <f>_fwd(<params>): ... return out, saved`: f's statements and what `rec` says to keep."""
    body, ret = em.body, None
    if not body or not isinstance(body[-1], ast.Return):
        refuse(None, "a function that returns nothing", "return the value to differentiate", em.norm)
    body, ret = body[:-1], body[-1]
    em.last_line = None
    code = _block(em, body, rec)
    em.comment(ret, code)
    prologue = _prologue(em, rec)
    saved = [*em.stacks.values(), *sorted(rec.at_end)]
    em.saved_names = saved
    snap = em.ctx.bind("snapshot", reverse_runtime.snapshot)
    kept = [
        _call(snap, [_name(n)]) if n in em.written and n not in em.stacks.values() else _name(n)
        for n in saved
    ]
    value = ret.value if ret.value is not None else ast.Constant(None)
    code.append(ast.Return(ast.Tuple([copy.deepcopy(value), ast.Tuple(kept, ast.Load())], ast.Load())))
    return _function(
        f"{_identifier(em.norm.name)}_fwd",
        em.params,
        _without_dead(prologue + code, lambda call: _pure(em, call)),
    )


def _prologue(em: Any, rec: flow.Record) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    kept = set(rec.at_end) | {v for names in rec.restored.values() for v in names}
    aliases = flow.aliases(em.body, em.params, _fresh_value)
    copied = [p for p in em.params if any(p in aliases.get(n, ()) for n in kept)]
    if copied:
        snap = em.ctx.bind("snapshot", reverse_runtime.snapshot)
        out += [_assign(p, _call(snap, [_name(p)])) for p in copied]  # the caller may change them later
    for name in sorted(
        flow.undefined_reads(em.body, em.params, rec, lambda s: em.reads(s)[0] | flow.assigned_names(s))
    ):
        out.append(_assign(name, ast.Constant(None)))
    out += [_assign(s, ast.List([], ast.Load())) for s in em.stacks.values()]
    return out


def _pure(em: Any, call: ast.Call) -> bool:
    """A call of an op (np.cos, np.sum): nothing but its value, which may be left out unread."""
    if not isinstance(call.func, ast.Name) or call.func.id not in em.norm.namespace:
        return False
    from adcore_source.resolve import callee_kind

    try:
        return callee_kind(em.norm.namespace[call.func.id]).kind in ("template", "op")
    except Exception:  # noqa: BLE001 (what resolve cannot say is kept)
        return False


def _fresh_value(value: ast.expr) -> bool:
    """`value` makes a new value (arithmetic, a template op), sharing no memory with its inputs."""
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant)):
        return True
    return False


def _block(em: Any, stmts: list[ast.stmt], rec: flow.Record) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in stmts:
        out += em.commented(stmt, lambda s: _statement(em, s, rec))
    return out


def _statement(em: Any, stmt: ast.stmt, rec: flow.Record) -> list[ast.stmt]:
    if isinstance(stmt, ast.If):
        return [
            ast.If(
                copy.deepcopy(stmt.test),
                _block(em, stmt.body, rec) or [ast.Pass()],
                _block(em, stmt.orelse, rec),
            )
        ]
    if isinstance(stmt, (ast.For, ast.While)):
        return _loop(em, stmt, rec)
    out = [push(em, v, _name(v)) for v in sorted(rec.pushes(stmt))]
    if id(stmt) in rec.written and isinstance(stmt, ast.Assign):  # x[i] = v: x[i] kept, a copy
        target = stmt.targets[0]
        item = ast.Subscript(_name(target.value.id), copy.deepcopy(target.slice), ast.Load())
        out.append(
            push(
                em,
                f"{target.value.id}_items",
                _call(em.ctx.bind("snapshot", reverse_runtime.snapshot), [item]),
            )
        )
    code = [copy.deepcopy(s) for s in em.parts(stmt).fwd] if em.simple_active(stmt) else [copy.deepcopy(stmt)]
    x = flow.in_place_target(stmt)
    if isinstance(stmt, ast.Assign) and x is not None and em.is_active(x) and not em.for_numba:
        code = [
            _assign(
                x,
                _call(
                    em.ctx.bind("set_at", reverse_runtime.set_at),
                    [_name(x), index_expr(stmt.targets[0].slice), copy.deepcopy(stmt.value)],
                ),
            )
        ]
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Subscript, ast.Attribute)):
        source = stmt.value.value
        if isinstance(source, ast.Name) and source.id in em.written and isinstance(stmt.targets[0], ast.Name):
            # a view of an array written in place later: the value read now, for the adjoint sweep
            snap = em.ctx.bind("snapshot", reverse_runtime.snapshot)
            code[-1].value = _call(snap, [code[-1].value])
    return out + code


def push(em: Any, what: str, value: ast.expr) -> ast.stmt:
    stack = em.stack(what if what.endswith("_items") else f"{what}_stack")
    return ast.Expr(ast.Call(ast.Attribute(_name(stack), "append", ast.Load()), [value], []))


def _loop(em: Any, stmt: ast.For | ast.While, rec: flow.Record) -> list[ast.stmt]:
    if stmt.orelse:
        refuse(stmt, "a loop with an else clause", "the A-normal form has none", em.norm)
    loop = rec.loops.get(id(stmt))
    body = _block(em, stmt.body, rec)
    if loop is None:
        return [_looped(stmt, body)]
    out: list[ast.stmt] = []
    if loop.counter_restored:
        out.append(push(em, loop.counter, _name(loop.counter)))
    if loop.target_restored:
        out.append(push(em, stmt.target.id, _name(stmt.target.id)))
    if not loop.runs:
        return [*out, _looped(stmt, body)]
    out.append(_assign(loop.counter, ast.Constant(0)))
    count = _assign(loop.counter, ast.BinOp(_name(loop.counter), ast.Add(), ast.Constant(1)))
    end = [push(em, stmt.target.id, _name(stmt.target.id))] if loop.target_pushed else []
    end += [push(em, v, _name(v)) for v in loop.trip_pushed]
    if body and _is_break(body[-1]):
        body = body[:-1] + end + body[-1:]
    else:
        body = body + end
    return out + [_looped(stmt, [count, *body])]


# --- dead statements of the forward sweep --------------------------------------------------------

_NO_EFFECT = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Compare,
    ast.Tuple,
    ast.List,
    ast.Dict,
)


def _without_dead(body: list[ast.stmt], pure: Any) -> list[ast.stmt]:
    """The forward sweep without the assignments nothing reads that have no effect (`x_sum = x.sum`,
    whose call went through call_vjp; `unused = np.cos(x)`: `pure(call)` says an op call has none),
    and without the comments left naming no code."""
    while True:
        read = {
            n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        dead = _dead(body, read, pure)
        if not dead:
            break
        body = _dropped(body, dead)
    return body


def _dead(body: list[ast.stmt], read: set[str], pure: Any) -> set[int]:
    out: set[int] = set()
    for stmt in walk_statements(body):
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id not in read
        ):
            calls = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Call)]
            if isinstance(stmt.value, (*_NO_EFFECT, ast.BinOp, ast.UnaryOp, ast.Call)) and all(
                map(pure, calls)
            ):
                out.add(id(stmt))
    return out


def _dropped(stmts: list[ast.stmt], dead: set[int]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for stmt in stmts:
        if id(stmt) in dead:
            continue
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            stmt.body = _dropped(stmt.body, dead) or [ast.Pass()]
            stmt.orelse = _dropped(stmt.orelse, dead)
        kept.append(stmt)
    return [
        s
        for k, s in enumerate(kept)
        if not (_is_comment(s) and (k + 1 == len(kept) or _is_comment(kept[k + 1])))
    ]


def _is_comment(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def index_expr(node: ast.expr) -> ast.expr:
    """A subscript's index as an expression (slices as slice(...) calls)."""
    if isinstance(node, ast.Slice):
        parts = [node.lower, node.upper, node.step]
        return _call("slice", [copy.deepcopy(p) if p is not None else ast.Constant(None) for p in parts])
    if isinstance(node, ast.Tuple):
        return ast.Tuple([index_expr(e) for e in node.elts], ast.Load())
    return copy.deepcopy(node)


def _is_break(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Break)


def _looped(stmt: ast.For | ast.While, body: list[ast.stmt]) -> ast.stmt:
    if isinstance(stmt, ast.For):
        return ast.For(copy.deepcopy(stmt.target), copy.deepcopy(stmt.iter), body or [ast.Pass()], [])
    return ast.While(copy.deepcopy(stmt.test), body or [ast.Pass()], [])


def _function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    return ast.FunctionDef(
        name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[]
    )


def _identifier(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    return cleaned or "function"


def _name(id_: str) -> ast.Name:
    return ast.Name(id_, ast.Load())


def _call(func: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(_name(func), args, [])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Name(target, ast.Store())], value)
