"""Forward mode: f's A-normal form in, `def f_jvp(<params>, <d+active params>)` out.

Each statement of f is copied, followed by its tangent statement (`dy = dx * cos(x)` from a
template, `y, dy = call_jvp(...)` for other ops and dynamic callees, `y, dy = g_jvp(a, da)` for a
user callee). What is known statically about tangents is tracked statement by statement
(`_State`): a name whose tangent is zero has no tangent variable at all until one is needed (an
in-place write, an append, a merge of branches or of loop iterations where it is nonzero on the
other path); control flow is copied unchanged. The jvp takes f's parameters positionally (the
vararg as one tuple, the keyword-only ones after them), then the tangents of the active ones in
that order, and returns (out, dout), dout materialised as zeros when no tangent reaches out.
"""

from __future__ import annotations

import ast
import copy
import linecache
import os
from collections.abc import Iterable
from typing import Any

from adcore_source import forward_calls as calls
from adcore_source import forward_syntax as syntax
from adcore_source.activity import active_names
from adcore_source.errors import refuse
from adcore_source.forward_runtime import tangent_into
from adcore_source.forward_state import State, joined
from adcore_source.reverse_runtime import set_at

# attributes of arrays that are values, not methods
LINEAR_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat"})
# attributes no derivative flows through
INACTIVE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides", "flags"})


def emit_forward(norm: Any, active_params: Iterable[str | int], ctx: Any) -> ast.FunctionDef:
    """`def <f>_jvp(<params>, <d+param for each active param>): ... return out, dout` for f's
    A-normal form `norm`; `active_params` are parameter names or positions; `ctx` binds names in
    the generated module and transforms user callees (see generate.py). Comment markers
    (`Expr(Constant("# file:line  source"))`) precede each block of statements from a new line of f."""
    return _Emitter(norm, _active_names(norm, active_params), ctx).function()


def signature_params(norm: Any) -> list[str]:
    """f's parameters as the jvp takes them: positional ones, the vararg as a tuple, keyword-only."""
    return [*norm.params, *([norm.vararg] if norm.vararg else []), *norm.kwonly]


def _active_names(norm: Any, active: Iterable[str | int]) -> list[str]:
    params = signature_params(norm)
    names = [params[a] if isinstance(a, int) else a for a in active]
    return [p for p in params if p in names]


def comment_marker(text: str) -> ast.Expr:
    """A statement generate.py turns into the comment line `text` (ast keeps no comments)."""
    return ast.Expr(ast.Constant(text))


class _Emitter:
    """The emission of one function: tangent names, comment markers, the statement rules."""

    def __init__(self, norm: Any, active: list[str], ctx: Any) -> None:
        self.norm, self.active, self.ctx = norm, active, ctx
        self.taken = syntax.names_in(norm)
        self.tangent_names: dict[str, str] = {}
        self.tangent_statements: dict[int, ast.Assign] = {}  # the `dy = <expression>` statements
        self.result_names: dict[int, str] = {}  # id of a statement `y = y * a` -> y's new name
        self.locals = set(signature_params(norm)) | syntax.assigned(norm.body)
        self.mutated = syntax.written(norm.body)
        self.methods: dict[str, tuple[str, str]] = {}  # local m = x.attr: (x, attr)
        self.last_line: int | None = None
        self.node: ast.stmt | None = None  # the statement being emitted, for refusals
        self.active_locals: frozenset[str] | None = None  # activity.py's, computed when needed

    # --- names -------------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """A local name f does not use, `base` if free."""
        candidate, k = base, 1
        while candidate in self.taken:
            k += 1
            candidate = f"{base}_{k}"
        self.taken.add(candidate)
        return candidate

    def d(self, name: str) -> str:
        """The tangent variable of `name`: d<name>, renamed if f already uses that name."""
        if name not in self.tangent_names:
            base = candidate = f"d{name}"
            k = 1
            while candidate in self.taken:
                k += 1
                candidate = f"{base}_{k}"
            self.taken.add(candidate)
            self.tangent_names[name] = candidate
        return self.tangent_names[name]

    def tangent_statement(self, name: str, value: ast.expr) -> ast.Assign:
        """`d<name> = value`, a statement syntax.drop_dead_code may drop if nothing reads d<name>."""
        stmt = syntax.assign(self.d(name), value)
        self.tangent_statements[id(stmt)] = stmt  # held: ids of dropped loop drafts are reused
        return stmt

    def tangent_of(self, atom: ast.expr, state: State) -> ast.expr | None:
        """The tangent of an atom as an expression, None when it is zero."""
        if isinstance(atom, ast.Name) and atom.id in state.bound:
            return syntax.name(self.d(atom.id))
        return None

    def tangent_or_zero(self, atom: ast.expr, state: State) -> ast.expr:
        t = self.tangent_of(atom, state)
        return t if t is not None else self.zero(atom)

    def zero(self, atom: ast.expr) -> ast.expr:
        """`zero_tangent(atom)`: zeros of its shape and dtype, containers of zeros for containers."""
        return syntax.call(self.ctx.runtime("zero_tangent"), [copy.deepcopy(atom)])

    def materialise(self, name: str, state: State) -> list[ast.stmt]:
        """`d<name> = zero_tangent(name)`, so the tangent can be written into or passed on."""
        if name in state.bound:
            return []
        if state.defined.get(name) == "maybe":
            refuse(
                self.node,
                f"{name!r} assigned on some paths only, with a nonzero derivative on others",
                f"assign {name} before the branch or loop",
                self.norm,
            )
        state.bind(name, owned=True)
        return [self.tangent_statement(name, self.zero(syntax.name(name)))]

    # --- the function --------------------------------------------------------------------------

    def function(self) -> ast.FunctionDef:
        # activity refuses what would drop a derivative (float(x), x.item() of an active x)
        self.active_locals = active_names(self.norm, self.active)
        state = State()
        for p in signature_params(self.norm):
            state.define(p)
        for p in self.active:
            state.bind(p, owned=False)  # the caller's tangent: never written into
        body = self.block(self.norm.body, state)
        args = [ast.arg(p) for p in signature_params(self.norm)] + [ast.arg(self.d(p)) for p in self.active]
        fn = ast.FunctionDef(
            name=f"{syntax.identifier(self.norm.name)}_jvp",
            args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body or [ast.Pass()],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        syntax.drop_dead_code(fn, self.tangent_statements)
        return ast.fix_missing_locations(fn)

    def block(self, stmts: list[ast.stmt], state: State) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            self.node = stmt
            line, before = getattr(stmt, "lineno", None), self.last_line
            new_line = line is not None and line != before
            if new_line:  # set first: a compound statement's body comes from later lines
                self.last_line = line
            emitted = self.statement(stmt, state)
            if new_line and emitted:
                out.append(comment_marker(self.comment(line)))
            elif new_line and self.last_line == line:  # nothing emitted for it
                self.last_line = before
            out += emitted
        return out

    def comment(self, line: int) -> str:
        text = linecache.getline(self.norm.filename, line).strip()
        return f"# {os.path.basename(self.norm.filename)}:{line}  {text}".rstrip()

    def statement(self, stmt: ast.stmt, state: State) -> list[ast.stmt]:
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
                return self.write(stmt, state)
            return self.assign(stmt, state)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return self.effect(stmt, state)
        if isinstance(stmt, ast.If):
            return self.if_(stmt, state)
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, state)
        if isinstance(stmt, ast.Return):
            return self.return_(stmt, state)
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Pass)):
            return [copy.deepcopy(stmt)]
        refuse(
            stmt,
            f"the statement {type(stmt).__name__}",
            "the forward emitter takes f's A-normal form only",
            self.norm,
        )
        raise AssertionError("refuse raises")  # pragma: no cover

    # --- S1: v = E ----------------------------------------------------------------------------

    def assign(self, stmt: ast.Assign, state: State) -> list[ast.stmt]:
        target = stmt.targets[0]
        if not isinstance(target, ast.Name):
            refuse(
                stmt,
                "an assignment to anything but one name",
                "the A-normal form assigns one name",
                self.norm,
            )
        y, value = target.id, stmt.value
        operation = (ast.BinOp, ast.UnaryOp, ast.Call, ast.Tuple, ast.List, ast.Dict)
        if isinstance(value, operation) and y in syntax.operand_names(value):
            # y = y * a: the tangent reads y as the operand and as the result (or zero_tangent(y) in
            # [y, a]), so the result gets a name of its own first (y_new = y * a; dy_new = ...;
            # y = y_new; dy = dy_new)
            if id(stmt) not in self.result_names:  # one name per statement (loops emit twice)
                self.result_names[id(stmt)] = self.fresh(f"{y}_new")
            fresh = self.result_names[id(stmt)]
            first = ast.Assign([syntax.name(fresh, ast.Store())], value, lineno=stmt.lineno)
            then = ast.Assign([syntax.name(y, ast.Store())], syntax.name(fresh), lineno=stmt.lineno)
            out = self.assign(first, state) + self.assign(then, state)
            state.unbind(fresh)  # read once, here: its tangent is never needed again
            state.defined.pop(fresh, None)
            return out
        pre = self.unaliased(value, y, state)
        primal = copy.deepcopy(stmt)
        if self.pure(value):  # dropped at the end if nothing reads y
            self.tangent_statements[id(primal)] = primal
        self.methods.pop(y, None)
        tangent, owned = self.tangent_expression(y, value, state)
        state.define(y)
        if isinstance(value, ast.Attribute) and value.attr not in LINEAR_ATTRIBUTES | INACTIVE_ATTRIBUTES:
            self.methods[y] = (value.value.id, value.attr)  # called later: a dynamic call of x.attr
        if isinstance(tangent, ast.stmt):  # y, dy = call(...) (or y = g_jvp(...)[0]): the primal runs inside
            if isinstance(tangent.targets[0], ast.Tuple):
                state.bind(y, owned=owned)
            else:
                state.unbind(y)
            return pre + [tangent]
        if tangent is None:
            state.unbind(y)
            return pre + [primal]
        state.bind(y, owned=owned)
        return pre + [primal, self.tangent_statement(y, tangent)]

    def pure(self, value: ast.expr) -> bool:
        """Whether computing value has no effect (arithmetic, reads, displays, a tier-1 op)."""
        if isinstance(value, ast.Call):
            if not isinstance(value.func, ast.Name) or value.func.id not in self.norm.namespace:
                return False
            obj = self.norm.namespace[value.func.id]
            return (
                calls.resolve.callee_kind(obj, len(value.args), [k.arg for k in value.keywords]).kind
                == "template"
            )
        return not isinstance(value, ast.Attribute) or value.attr in LINEAR_ATTRIBUTES | INACTIVE_ATTRIBUTES

    def unaliased(self, value: ast.expr, y: str, state: State) -> list[ast.stmt]:
        """A name that is appended to or written into anywhere, copied into another name or a
        container with a zero tangent, gets its tangent first: a later write through either name
        must reach the tangent both names share, as it reaches the value both share."""
        out: list[ast.stmt] = []
        atoms = [value] if isinstance(value, ast.Name) else syntax.container_atoms(value)
        for a in atoms:
            if isinstance(a, ast.Name) and a.id in self.locals and a.id not in state.bound:
                if a.id in self.mutated or (isinstance(value, ast.Name) and y in self.mutated):
                    if state.defined.get(a.id) and self.may_be_active(a.id):
                        out += self.materialise(a.id, state)
        return out

    def may_be_active(self, name: str) -> bool:
        if self.active_locals is None:
            self.active_locals = active_names(self.norm, self.active)
        return name in self.active_locals

    def tangent_expression(self, y: str, value: ast.expr, state: State) -> tuple[Any, bool]:
        """(the tangent of `y = value`: an expression, a whole statement, or None for zero; whether
        the tangent is a fresh value no other name holds)."""
        if isinstance(value, ast.Name):
            if value.id in self.methods:
                self.methods[y] = self.methods[value.id]
            return self.tangent_of(value, state), False
        if isinstance(value, (ast.Constant, ast.Compare)):
            return None, False
        if isinstance(value, ast.Subscript):
            t = self.tangent_of(value.value, state)
            return (None if t is None else ast.Subscript(t, copy.deepcopy(value.slice), ast.Load())), False
        if isinstance(value, ast.Attribute):
            return self.attribute(value, state), False
        if isinstance(value, (ast.Tuple, ast.List)):
            if not any(self.tangent_of(a, state) is not None for a in value.elts):
                return None, False
            elts = [self.tangent_or_zero(a, state) for a in value.elts]
            return (
                ast.Tuple(elts, ast.Load()) if isinstance(value, ast.Tuple) else ast.List(elts, ast.Load())
            ), True
        if isinstance(value, ast.Dict):
            if not any(self.tangent_of(a, state) is not None for a in value.values):
                return None, False
            keys = [copy.deepcopy(k) for k in value.keys]
            return ast.Dict(keys, [self.tangent_or_zero(a, state) for a in value.values]), True
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Call)):
            return calls.tangent_of_operation(self, y, value, state)
        refuse(
            value,
            f"the expression {type(value).__name__}",
            "the forward emitter takes f's A-normal form only",
            self.norm,
        )
        raise AssertionError("refuse raises")  # pragma: no cover

    def attribute(self, value: ast.Attribute, state: State) -> ast.expr | None:
        t = self.tangent_of(value.value, state)
        if t is None or value.attr in INACTIVE_ATTRIBUTES:
            return None
        # x.T, x.real, a field of a named tuple: the tangent's own; x.sum, a method: the tangent's
        # method, never called (the call of x.sum is a dynamic call with x first, forward_calls)
        return ast.Attribute(t, value.attr, ast.Load())

    # --- S2: v[I] = a, S3: v.append(a) -----------------------------------------------------------

    def write(self, stmt: ast.Assign, state: State) -> list[ast.stmt]:
        target = stmt.targets[0]
        if not isinstance(target.value, ast.Name):
            refuse(
                stmt,
                "a write into anything but a subscript of a name",
                "the A-normal form writes x[i] = a",
                self.norm,
            )
        v, a = target.value.id, stmt.value
        da = self.tangent_of(a, state)
        if da is None and v not in state.bound:
            return [copy.deepcopy(stmt)]
        # x = set_at(x, i, a): in place as f writes, but built anew where x or a is an outer
        # derivative's tracer (this code differentiated again), which cannot be written into
        set_at_ = self.ctx.bind("set_at", set_at)
        index = _index_value(target.slice)
        out = [syntax.assign(v, syntax.call(set_at_, [syntax.name(v), index, copy.deepcopy(a)]))]
        out += self.materialise(v, state)
        out += self.owned(v, state)
        if da is None:
            dv_i = self.zero(a)
        else:  # into an integer array the written value is rounded: no tangent flows
            into = self.ctx.bind("tangent_into", tangent_into)
            dv_i = syntax.call(into, [syntax.name(v), da])
        dv = self.d(v)
        out.append(syntax.assign(dv, syntax.call(set_at_, [syntax.name(dv), copy.deepcopy(index), dv_i])))
        return out

    def owned(self, name: str, state: State) -> list[ast.stmt]:
        """`dv = dv.copy()` before the first write into a tangent other names may hold."""
        if name in state.owned:
            return []
        state.bind(name, owned=True)
        return [
            syntax.assign(
                self.d(name), ast.Call(ast.Attribute(syntax.name(self.d(name)), "copy", ast.Load()), [], [])
            )
        ]

    def effect(self, stmt: ast.Expr, state: State) -> list[ast.stmt]:
        call = stmt.value
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("append", "extend")
            and isinstance(func.value, ast.Name)
        ):
            v, (a,) = func.value.id, call.args
            da = self.tangent_of(a, state)
            out: list[ast.stmt] = [copy.deepcopy(stmt)]
            if da is None and v not in state.bound:
                return out
            if v not in state.bound:  # materialised before the append: the list as it was
                out = self.materialise(v, state) + out
            out += self.owned(v, state)
            dt = da if da is not None else self.zero(a)
            out.append(
                ast.Expr(ast.Call(ast.Attribute(syntax.name(self.d(v)), func.attr, ast.Load()), [dt], []))
            )
            return out
        return [copy.deepcopy(stmt)]  # a call for its effect alone: no derivative flows out of it

    # --- S4..S8: control flow ------------------------------------------------------------------

    def if_(self, stmt: ast.If, state: State) -> list[ast.stmt]:
        then_state, else_state = state.copy(), state.copy()
        body = self.block(stmt.body, then_state)
        orelse = self.block(stmt.orelse, else_state)
        merged = joined(then_state, else_state)
        body += self.materialise_all(merged.bound - then_state.bound, then_state)
        orelse += self.materialise_all(merged.bound - else_state.bound, else_state)
        state.replace(joined(then_state, else_state))
        return [ast.If(copy.deepcopy(stmt.test), body or [ast.Pass()], orelse)]

    def materialise_all(self, names: Iterable[str], state: State) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for name in sorted(names):
            if state.defined.get(name):  # undefined on this path: its tangent is never read here
                out += self.materialise(name, state)
        return out

    def loop(self, stmt: ast.For | ast.While, state: State) -> list[ast.stmt]:
        if stmt.orelse:
            refuse(stmt, "a loop with an else clause", "the A-normal form has none", self.norm)
        pre: list[ast.stmt] = []
        for name in sorted(syntax.written(stmt.body) & (state.bound - state.owned)):
            pre += self.owned(name, state)
        target = stmt.target.id if isinstance(stmt, ast.For) else None
        iterated = self.tangent_of(stmt.iter, state) if isinstance(stmt, ast.For) else None
        head, last_line = state.copy(), self.last_line
        for _ in range(3 * len(self.locals) + 3):  # the state at the loop's head: a fixpoint (monotone)
            self.last_line = last_line
            inner = head.copy()
            if target is not None:
                inner.define(target)
                inner.bind(target, owned=False) if iterated is not None else inner.unbind(target)
            body = self.block(stmt.body, inner)
            after = joined(head, inner)
            if after.same(head):
                break
            head = after
        else:  # pragma: no cover
            raise AssertionError("the forward emitter's loop state did not settle (a bug in adcore-source)")
        pre += self.materialise_all(head.bound - state.bound, state)
        body = self.at_end(body, self.materialise_all(head.bound - inner.bound, inner))
        state.replace(head)
        if isinstance(stmt, ast.While):
            return pre + [ast.While(copy.deepcopy(stmt.test), body, [])]
        if iterated is None:
            return pre + [ast.For(copy.deepcopy(stmt.target), copy.deepcopy(stmt.iter), body, [])]
        both = ast.Tuple([copy.deepcopy(stmt.target), syntax.name(self.d(target), ast.Store())], ast.Store())
        zipped = syntax.call("zip", [copy.deepcopy(stmt.iter), iterated])
        return pre + [ast.For(both, zipped, body, [])]

    @staticmethod
    def at_end(body: list[ast.stmt], extra: list[ast.stmt]) -> list[ast.stmt]:
        """`extra` at the end of a loop body, before its closing `if flag: break` (S7)."""
        if (
            body
            and isinstance(body[-1], ast.If)
            and body[-1].body
            and isinstance(body[-1].body[0], ast.Break)
        ):
            return body[:-1] + extra + body[-1:]
        return body + extra

    def return_(self, stmt: ast.Return, state: State) -> list[ast.stmt]:
        value = stmt.value if stmt.value is not None else ast.Constant(None)
        dout = self.tangent_or_zero(value, state)
        return [ast.Return(ast.Tuple([copy.deepcopy(value), dout], ast.Load()))]


def _index_value(index: ast.expr) -> ast.expr:
    """A subscript's index as a value to pass: `1:n` as slice(1, n), `i, :` as (i, slice(None))."""
    if isinstance(index, ast.Slice):
        parts = [p if p is not None else ast.Constant(None) for p in (index.lower, index.upper, index.step)]
        return ast.Call(ast.Name("slice", ast.Load()), [copy.deepcopy(p) for p in parts], [])
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_index_value(e) for e in index.elts], ast.Load())
    return copy.deepcopy(index)
