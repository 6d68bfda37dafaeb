"""Reverse mode: f's A-normal form in, `def f_fwd(<params>)` and `def f_bwd(saved, b<out>)` out.

f_fwd runs f's statements in f's order (a tier-2 call as `y, y_pullback = call_vjp(...)`, a user
callee as `y, y_saved = g_fwd(...)`) and records what the adjoint sweep needs (reverse_flow): a
value about to be overwritten is pushed on `<name>_stack` (x[i]'s on `<x>_items`, a copy), a
loop's trip count is kept in `<target>_trips`, and the names the adjoint sweep reads are returned
with the stacks as `saved`. f_bwd goes through f's statements backwards (reverse_sweep): each
assignment's adjoint (`bx = bx + by * cos(x)`), then the overwritten value popped back; an `if`
on its flag, a loop as many times as it ran. It returns the active parameters' adjoints in
their structure, shape and dtype.
"""

from __future__ import annotations

import ast
import copy
import linecache
import os
from collections.abc import Iterable
from typing import Any

from adcore_source import reverse_flow as flow
from adcore_source import reverse_runtime
from adcore_source.errors import refuse
from adcore_source.reverse_parts import (
    ANS,
    INACTIVE_ATTRIBUTES,
    LINEAR_ATTRIBUTES,
    VALUE_ATTRIBUTES,
    G,
    Parts,
    assignment_parts,
)


def emit_reverse(
    norm: Any, active_params: Iterable[str | int], ctx: Any
) -> tuple[ast.FunctionDef, ast.FunctionDef]:
    """(`def <f>_fwd(<params>): ... return out, saved`, `def <f>_bwd(saved, b<out>): ... return
    (b<p> for each active p)`) for f's A-normal form `norm`; `active_params`: parameter names or
    positions (the vararg is one tuple parameter); `ctx` binds names and transforms user callees."""
    from adcore_source.reverse_sweep import adjoint_function

    em = Emitter(norm, active_params, ctx)
    rec = flow.record(em.body, em.reads, em.has_adjoint, em.counter, set(em.active))
    fwd = em.forward_function(rec)
    bwd = adjoint_function(em, rec)
    return ast.fix_missing_locations(fwd), ast.fix_missing_locations(bwd)


def signature_params(norm: Any) -> list[str]:
    return [*norm.params, *([norm.vararg] if norm.vararg else []), *norm.kwonly]


class Emitter:
    """One function's emission: its names, activity, per-statement parts, and the forward sweep."""

    def __init__(self, norm: Any, active_params: Iterable[str | int], ctx: Any) -> None:
        self.norm, self.ctx = norm, ctx
        self.params = signature_params(norm)
        wanted = [self.params[a] if isinstance(a, int) else a for a in active_params]
        self.active = [p for p in self.params if p in wanted]
        self.body = _flagged(copy.deepcopy(norm.body), _Namer(_names_in(norm)))
        self.taken = _names_in(norm) | _names_of(self.body)
        self.locals = set(self.params) | {n for s in self.body for n in flow.assigned_names(s)}
        self.activity = _activity(norm, self.active, self.body)
        self.methods = _methods(self.body, self.activity)
        self.written = {flow.in_place_target(s) for s in _walk_statements(self.body)} - {None}
        self.useful = _useful(self.body, self.activity, self.methods)
        assigned = {n for s in _walk_statements(self.body) for n in flow.assigned_names(s)} | self.written
        self.fixed_params = {p for p in self.active if p not in assigned}  # read anywhere in the sweep
        self.namer = _Namer(self.taken | {G, ANS})
        self.adjoint_names: dict[str, str] = {}
        self.temps: dict[tuple[int, str], str] = {}
        self.current: ast.stmt | None = None
        self._parts: dict[tuple[int, bool], Parts] = {}
        self.stacks: dict[str, str] = {}  # what is pushed -> its stack's name, in order of creation
        self.counters: dict[int, str] = {}
        self.last_line: int | None = None

    # --- names ---------------------------------------------------------------------------------

    def is_active(self, name: str) -> bool:
        return name in self.activity

    def b(self, name: str) -> str:
        """The adjoint variable of `name`: b<name>, renamed if f uses that name."""
        if name not in self.adjoint_names:
            self.adjoint_names[name] = self.namer.fresh(f"b{name}")
        return self.adjoint_names[name]

    def temp(self, base: str) -> str:
        """A temporary of the current statement, the same name each time it is asked for."""
        key = (id(self.current), base)
        if key not in self.temps:
            self.temps[key] = self.namer.fresh(base)
        return self.temps[key]

    def stack(self, what: str) -> str:
        if what not in self.stacks:
            self.stacks[what] = self.namer.fresh(what)
        return self.stacks[what]

    def counter(self, loop: ast.For | ast.While) -> str:
        if id(loop) not in self.counters:
            named = isinstance(loop, ast.For) and loop.target.id.strip("_")
            base = (
                f"{loop.target.id}_trips"
                if named
                else "while_trips"
                if isinstance(loop, ast.While)
                else "trips"
            )
            self.counters[id(loop)] = self.namer.fresh(base)
        return self.counters[id(loop)]

    def comment(self, stmt: ast.stmt, out: list[ast.stmt]) -> None:
        """`# file:line  source` before the first block from a new line of f."""
        line = getattr(stmt, "lineno", None)
        if line is None or line == self.last_line:
            return
        self.last_line = line
        text = linecache.getline(self.norm.filename, line).strip()
        out.append(
            ast.Expr(ast.Constant(f"# {os.path.basename(self.norm.filename)}:{line}  {text}".rstrip()))
        )

    # --- what each statement is ----------------------------------------------------------------

    def parts(self, stmt: ast.Assign, masked: bool = False) -> Parts:
        key = (id(stmt), masked)
        if key not in self._parts:
            self.current = stmt
            self._parts[key] = assignment_parts(self, stmt, masked)
        return self._parts[key]

    def simple_active(self, stmt: ast.stmt) -> bool:
        """An assignment `y = E` with y active and E reading an active name."""
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
            return False
        if not self.is_active(stmt.targets[0].id) or stmt.targets[0].id not in self.useful:
            return False
        return any(isinstance(n, ast.Name) and self.is_active(n.id) for n in ast.walk(stmt.value))

    def has_adjoint(self, stmt: ast.stmt) -> bool:
        if self.simple_active(stmt):
            p = self.parts(stmt)
            return bool(p.contribs or p.at)
        x = flow.in_place_target(stmt)
        return x is not None and self.is_active(x)

    def reads(self, stmt: ast.stmt) -> tuple[set[str], set[str], set[str]]:
        """(assigned names, names the adjoint reads as before the statement, as after it)."""
        if isinstance(stmt, (ast.For, ast.While, ast.If)):
            return set(), {stmt.iter.id} if self.iterates_active(stmt) else set(), set()
        defines = flow.assigned_names(stmt)
        x = flow.in_place_target(stmt)
        if x is not None:
            if not self.is_active(x):
                return set(), set(), set()
            if isinstance(stmt, ast.Assign):  # x[i] = v: the index, and v for its shape
                return (
                    set(),
                    _local_names(stmt.targets[0].slice, self.locals) | _local_names(stmt.value, self.locals),
                    set(),
                )
            call = stmt.value
            return (
                set(),
                (_local_names(call, self.locals) - {x}) if call.func.attr == "extend" else set(),
                set(),
            )
        if not self.simple_active(stmt):
            return defines, set(), set()
        p = self.parts(stmt)
        defines = set(p.defines)
        used: set[str] = set()
        for node in [*(c.expr for c in p.contribs), *p.prelude]:
            used |= _local_names(node, self.locals | defines)
        if p.at is not None:
            used |= {p.at[0]} | _local_names(p.at[1], self.locals)
        ans = any(isinstance(n, ast.Name) and n.id == ANS for c in p.contribs for n in ast.walk(c.expr))
        y = stmt.targets[0].id
        after = ((used & defines) - {y}) | ({y} if ans else set())
        before = used - (defines - {y})
        return defines, before, after

    def iterates_active(self, stmt: ast.stmt) -> bool:
        """`for v in s:` with s active: v's adjoint goes to s's at each trip's index."""
        return isinstance(stmt, ast.For) and self.is_active(stmt.iter.id) and self.is_active(stmt.target.id)

    # --- the forward sweep ----------------------------------------------------------------------

    def forward_function(self, rec: flow.Record) -> ast.FunctionDef:
        body, ret = self.body, None
        if not body or not isinstance(body[-1], ast.Return):
            refuse(None, "a function that returns nothing", "return the value to differentiate", self.norm)
        body, ret = body[:-1], body[-1]
        self.last_line = None
        code = self.fwd_block(body, rec)
        self.comment(ret, code)
        prologue = self.prologue(rec)
        saved = [*self.stacks.values(), *sorted(rec.at_end)]
        self.saved_names = saved
        snap = self.ctx.bind("snapshot", reverse_runtime.snapshot)
        kept = [
            _call(snap, [_name(n)]) if n in self.written and n not in self.stacks.values() else _name(n)
            for n in saved
        ]
        value = ret.value if ret.value is not None else ast.Constant(None)
        code.append(ast.Return(ast.Tuple([copy.deepcopy(value), ast.Tuple(kept, ast.Load())], ast.Load())))
        return _function(
            f"{_identifier(self.norm.name)}_fwd", self.params, _without_dead(prologue + code, self.pure)
        )

    def prologue(self, rec: flow.Record) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        kept = set(rec.at_end) | {v for names in rec.restored.values() for v in names}
        aliases = flow.aliases(self.body, self.params, self.fresh_value)
        copied = [p for p in self.params if any(p in aliases.get(n, ()) for n in kept)]
        if copied:
            snap = self.ctx.bind("snapshot", reverse_runtime.snapshot)
            out += [_assign(p, _call(snap, [_name(p)])) for p in copied]  # the caller may change them later
        for name in sorted(
            flow.undefined_reads(
                self.body, self.params, rec, lambda s: self.reads(s)[0] | flow.assigned_names(s)
            )
        ):
            out.append(_assign(name, ast.Constant(None)))
        out += [_assign(s, ast.List([], ast.Load())) for s in self.stacks.values()]
        return out

    def pure(self, call: ast.Call) -> bool:
        """A call of an op (np.cos, np.sum): nothing but its value, which may be left out unread."""
        if not isinstance(call.func, ast.Name) or call.func.id not in self.norm.namespace:
            return False
        from adcore_source.resolve import callee_kind

        try:
            return callee_kind(self.norm.namespace[call.func.id]).kind in ("template", "op")
        except Exception:  # noqa: BLE001 (what resolve cannot say is kept)
            return False

    def fresh_value(self, value: ast.expr) -> bool:
        """`value` makes a new value (arithmetic, a template op), sharing no memory with its inputs."""
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant)):
            return True
        return False

    def fwd_block(self, stmts: list[ast.stmt], rec: flow.Record) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            out += self.commented(stmt, lambda s: self.fwd_statement(s, rec))
        return out

    def commented(self, stmt: ast.stmt, emit: Any) -> list[ast.stmt]:
        """emit(stmt)'s code, after the comment naming stmt's line of f if it is a new one (before
        the code of an if's or a loop's body)."""
        line, marker = self.last_line, []
        self.comment(stmt, marker)
        code = emit(stmt)
        if not code:
            self.last_line = line
            return []
        return marker + code

    def fwd_statement(self, stmt: ast.stmt, rec: flow.Record) -> list[ast.stmt]:
        if isinstance(stmt, ast.If):
            return [
                ast.If(
                    copy.deepcopy(stmt.test),
                    self.fwd_block(stmt.body, rec) or [ast.Pass()],
                    self.fwd_block(stmt.orelse, rec),
                )
            ]
        if isinstance(stmt, (ast.For, ast.While)):
            return self.fwd_loop(stmt, rec)
        out = [self.push(v, _name(v)) for v in sorted(rec.pushes(stmt))]
        if id(stmt) in rec.written and isinstance(stmt, ast.Assign):  # x[i] = v: x[i] kept, a copy
            target = stmt.targets[0]
            item = ast.Subscript(_name(target.value.id), copy.deepcopy(target.slice), ast.Load())
            out.append(
                self.push(
                    f"{target.value.id}_items",
                    _call(self.ctx.bind("snapshot", reverse_runtime.snapshot), [item]),
                )
            )
        code = (
            [copy.deepcopy(s) for s in self.parts(stmt).fwd]
            if self.simple_active(stmt)
            else [copy.deepcopy(stmt)]
        )
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Subscript, ast.Attribute)):
            source = stmt.value.value
            if (
                isinstance(source, ast.Name)
                and source.id in self.written
                and isinstance(stmt.targets[0], ast.Name)
            ):
                # a view of an array written in place later: the value read now, for the adjoint sweep
                snap = self.ctx.bind("snapshot", reverse_runtime.snapshot)
                code[-1].value = _call(snap, [code[-1].value])
        return out + code

    def push(self, what: str, value: ast.expr) -> ast.stmt:
        stack = self.stack(what if what.endswith("_items") else f"{what}_stack")
        return ast.Expr(ast.Call(ast.Attribute(_name(stack), "append", ast.Load()), [value], []))

    def fwd_loop(self, stmt: ast.For | ast.While, rec: flow.Record) -> list[ast.stmt]:
        if stmt.orelse:
            refuse(stmt, "a loop with an else clause", "the A-normal form has none", self.norm)
        loop = rec.loops.get(id(stmt))
        body = self.fwd_block(stmt.body, rec)
        if loop is None:
            return [_looped(stmt, body)]
        out: list[ast.stmt] = []
        if loop.counter_restored:
            out.append(self.push(loop.counter, _name(loop.counter)))
        if loop.target_restored:
            out.append(self.push(stmt.target.id, _name(stmt.target.id)))
        if not loop.runs:
            return [*out, _looped(stmt, body)]
        out.append(_assign(loop.counter, ast.Constant(0)))
        count = _assign(loop.counter, ast.BinOp(_name(loop.counter), ast.Add(), ast.Constant(1)))
        end = [self.push(stmt.target.id, _name(stmt.target.id))] if loop.target_pushed else []
        end += [self.push(v, _name(v)) for v in loop.trip_pushed]
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
    for stmt in _walk_statements(body):
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


# --- helpers ---------------------------------------------------------------------------------------


class _Namer:
    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def _flagged(stmts: list[ast.stmt], namer: _Namer) -> list[ast.stmt]:
    """The body with each `if c:` whose branches assign c preceded by `c_taken = c` and testing it:
    the adjoint sweep reads the flag where the if ends, and must read the one the if tested."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            stmt.body, stmt.orelse = _flagged(stmt.body, namer), _flagged(stmt.orelse, namer)
            c = stmt.test.id
            if any(c in flow.assigned_names(s) for s in stmt.body + stmt.orelse):
                flag = namer.fresh(f"{c}_taken")
                out.append(ast.copy_location(_assign(flag, _name(c)), stmt))
                stmt.test = _name(flag)
        elif isinstance(stmt, (ast.For, ast.While)):
            stmt.body = _flagged(stmt.body, namer)
        out.append(stmt)
    return out


def _activity(norm: Any, active: list[str], body: list[ast.stmt]) -> frozenset[str]:
    try:
        from adcore_source.activity import active_names
    except ImportError:  # activity.py not there yet: the names an active value reaches
        return _reached(norm, active, body)
    return frozenset(active_names(norm, active))


def _reached(norm: Any, active: list[str], body: list[ast.stmt]) -> frozenset[str]:
    from adcore_source.resolve import callee_kind

    out = set(active)
    stmts = list(_walk_statements(body))
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            target, value = None, None
            if isinstance(stmt, ast.Assign):
                t = stmt.targets[0]
                target, value = (t.id if isinstance(t, ast.Name) else t.value.id), stmt.value
            elif isinstance(stmt, ast.For):
                target, value = stmt.target.id, stmt.iter
            elif flow.in_place_target(stmt) is not None:
                target, value = flow.in_place_target(stmt), stmt.value
            if (
                target is None
                or target in out
                or not (
                    _local_names(value, out) - {target}
                    or (isinstance(stmt, ast.Assign) and _local_names(value, out))
                )
            ):
                continue
            if isinstance(value, ast.Compare) or (
                isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
            ):
                continue
            if isinstance(value, ast.Attribute) and value.attr in INACTIVE_ATTRIBUTES:
                continue
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in norm.namespace
            ):
                if callee_kind(norm.namespace[value.func.id]).kind == "inactive":
                    continue
            out.add(target)
            changed = True
    return frozenset(out)


def _methods(body: list[ast.stmt], activity: frozenset[str]) -> dict[str, tuple[str, str]]:
    """m -> (x, attr) for `m = x.attr`, a method of an active x (called later through call_vjp)."""
    out: dict[str, tuple[str, str]] = {}
    for stmt in _walk_statements(body):
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
    return out


def _useful(body: list[ast.stmt], activity: frozenset[str], methods: dict) -> set[str]:
    """The active names an adjoint can reach: those the output's value depends on through active
    values (the others' adjoints are zero: their statements run as f's, with no adjoint code)."""
    ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
    out = {ret.value.id} if ret is not None and isinstance(ret.value, ast.Name) else set()
    stmts = list(_walk_statements(body))
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            if isinstance(stmt, ast.For):
                target, sources = stmt.target.id, {stmt.iter.id}
            elif flow.in_place_target(stmt) is not None:
                target = flow.in_place_target(stmt)
                value = stmt.value if isinstance(stmt, ast.Assign) else stmt.value.args[0]
                sources = _local_names(value, activity)
            elif isinstance(stmt, ast.Assign) and not isinstance(stmt.value, ast.Compare):
                target, sources = stmt.targets[0].id, _local_names(stmt.value, activity)
                if isinstance(stmt.value, ast.Call) and stmt.value.func.id in methods:
                    sources.add(methods[stmt.value.func.id][0])
            else:
                continue
            new = (sources & activity) - out if target in out else set()
            if new:
                out |= new
                changed = True
    return out


def _walk_statements(stmts: list[ast.stmt]):
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            yield from _walk_statements(stmt.body)
            yield from _walk_statements(stmt.orelse)


def _names_in(norm: Any) -> set[str]:
    names = set(signature_params(norm)) | set(getattr(norm, "namespace", {}) or {})
    return names | _names_of(norm.body)


def _names_of(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}


def _local_names(node: ast.AST, locals_: set[str]) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in locals_}


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


def _name(id_: str, ctx: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id_, ctx or ast.Load())


def _call(func: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(_name(func), args, [])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([_name(target, ast.Store())], value)
