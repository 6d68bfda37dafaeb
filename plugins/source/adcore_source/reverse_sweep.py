"""The adjoint sweep of reverse mode: f's statements backwards, each one's adjoint then its pops.

What is known of each adjoint is tracked statement by statement (reverse_state): an adjoint known
zero has no variable and is not added into (its first contribution assigns it); one that is zero
on some paths only is None there (`add_adjoint` and `if by is not None:` take it).
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from adcore_source import reverse_flow as flow
from adcore_source import reverse_runtime
from adcore_source.reverse_forward import index_expr
from adcore_source.reverse_parts import ANS, Contribution, G
from adcore_source.reverse_state import MAYBE, SOME, AdjointState, joined, materialised


def adjoint_function(em: Any, rec: flow.Record) -> ast.FunctionDef:
    """`def <f>_bwd(saved, b<out>): ... return (adjoints of the active parameters)`."""
    ret = em.body[-1]
    out = ret.value.id if isinstance(ret.value, ast.Name) else None
    seed = em.b(out) if out is not None else em.namer.fresh("bout")
    saved_name = em.namer.fresh("saved")
    sweep = _Sweep(em, rec)
    state = AdjointState()
    if out is not None and em.is_active(out):
        state.set(out, SOME, owned=False, masked=False)
    em.last_line = None
    code = sweep.block(em.body[:-1], state)
    saved = em.saved_names
    head: list[ast.stmt] = []
    if saved:
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in saved], ast.Store())
        head.append(ast.Assign([target], ast.Name(saved_name, ast.Load())))
    param_adjoint = em.ctx.bind("param_adjoint", reverse_runtime.param_adjoint)
    results = [
        ast.Call(
            ast.Name(param_adjoint, ast.Load()),
            [
                ast.Name(em.b(p), ast.Load()) if p in state.kinds else ast.Constant(None),
                ast.Name(p, ast.Load()),
            ],
            [],
        )
        for p in em.active
    ]
    code.append(ast.Return(ast.Tuple(results, ast.Load())))
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(saved_name), ast.arg(seed)], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    name = f"{em.norm.name if em.norm.name.isidentifier() else 'function'}_bwd"
    return ast.FunctionDef(
        name=name, args=args, body=head + code, decorator_list=[], returns=None, type_params=[]
    )


class _Sweep:
    def __init__(self, em: Any, rec: flow.Record) -> None:
        self.em, self.rec = em, rec

    def block(self, stmts: list[ast.stmt], state: AdjointState) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in reversed(stmts):
            out += self.em.commented(stmt, lambda s: self.statement(s, state))
        return out

    def statement(self, stmt: ast.stmt, state: AdjointState) -> list[ast.stmt]:
        if isinstance(stmt, ast.If):
            return self.if_(stmt, state)
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, state)
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Pass, ast.Return)):
            return []
        if flow.in_place_target(stmt) is not None:
            return self.in_place(stmt, state)
        if not isinstance(stmt, ast.Assign):
            return []
        pops = [self.pop(v) for v in sorted(self.rec.pushes(stmt))]
        y = stmt.targets[0].id
        if not self.em.simple_active(stmt) or y not in state.kinds or not self.em.has_adjoint(stmt):
            state.zero(y)
            return pops
        return self.assignment(stmt, y, state, pops)

    # --- S1: y = E -----------------------------------------------------------------------------

    def assignment(
        self, stmt: ast.Assign, y: str, state: AdjointState, pops: list[ast.stmt]
    ) -> list[ast.stmt]:
        em = self.em
        parts = em.parts(stmt, y in state.masked)
        em.current = stmt
        pushed = self.rec.pushes(stmt)
        _, before, after = em.reads(stmt)
        renames = {G: em.b(y), ANS: y}
        pre: list[ast.stmt] = []
        if pushed & before:  # y = op(y, ...): y's value after the statement copied before y is popped
            for name in sorted(after & pushed):
                keep = em.temp(f"{name}_after")
                pre.append(_assign(keep, ast.Name(name, ast.Load())))
                renames[ANS if name == y else name] = keep
            pre += pops
            pops = []

        def body(inner: AdjointState) -> list[ast.stmt]:
            code = [_renamed(s, renames) for s in parts.prelude]
            own = [c for c in parts.contribs if c.to != y]
            mine = [c for c in parts.contribs if c.to == y]
            if parts.at is not None:
                code += self.add_at(parts.at, _renamed(ast.Name(G, ast.Load()), renames), inner)
            for c in own:
                code += self.accumulate(c.to, c, renames, inner)
            inner.zero(y)
            ours = renames
            if len(mine) > 1:  # y = op(y, y): each contribution reads y's adjoint from before the first
                g = em.temp(f"{em.b(y)}_out")
                code.append(_assign(g, ast.Name(em.b(y), ast.Load())))
                ours = {**renames, G: g}
            for c in mine:
                code += self.accumulate(y, c, ours, inner)
            return code

        return pre + self.guarded(y, state, body) + pops

    def accumulate(self, to: str, c: Contribution, renames: dict, state: AdjointState) -> list[ast.stmt]:
        """`b<to> = expr` (the first contribution), `b<to> = b<to> + expr`, or add_adjoint."""
        expr = _renamed(c.expr, renames)
        b = self.em.b(to)
        kind = state.kinds.get(to)
        numeric = c.numeric and not c.maybe_none
        if kind is None:
            state.set(to, MAYBE if c.maybe_none else SOME, owned=c.fresh, masked=c.masked)
            return [_assign(b, expr)]
        if kind == SOME and numeric and not c.masked and to not in state.masked:
            state.set(to, SOME, owned=True, masked=False)
            return [_assign(b, ast.BinOp(ast.Name(b, ast.Load()), ast.Add(), expr))]
        add = self.em.ctx.runtime("add_adjoint")
        new_kind = SOME if kind == SOME or not c.maybe_none else MAYBE
        state.set(to, new_kind, owned=False, masked=c.masked or to in state.masked)
        return [_assign(b, _call(add, [ast.Name(b, ast.Load()), expr]))]

    def add_at(self, at: tuple[str, ast.expr], g: ast.expr, state: AdjointState) -> list[ast.stmt]:
        """y = x[index]: y's adjoint added into x's at index, in place."""
        x, index = at
        b = self.em.b(x)
        add_at = self.em.ctx.bind("add_at", reverse_runtime.add_at)
        current: ast.expr = ast.Name(b, ast.Load()) if x in state.kinds else ast.Constant(None)
        if x in state.kinds and x not in state.owned:
            current = _call(self.em.ctx.bind("owned", reverse_runtime.owned), [current])
        masked = isinstance(g, ast.Name) and g.id in {self.em.b(n) for n in state.masked}
        # a g with structural zeros gives x's adjoint some: a new value then, not one written into
        state.set(x, SOME, owned=not masked, masked=masked or (x in state.masked and x in state.kinds))
        return [_assign(b, _call(add_at, [current, ast.Name(x, ast.Load()), copy.deepcopy(index), g]))]

    def guarded(self, name: str, state: AdjointState, body: Any) -> list[ast.stmt]:
        """body(state) where name's adjoint is not None: under `if b<name> is not None:` when it may be."""
        if state.kinds.get(name) == SOME:
            return body(state)
        inner = state.copy()
        inner.set(name, SOME, owned=name in state.owned, masked=name in state.masked)
        code = body(inner)
        outside = state.copy()
        outside.zero(name)  # it is None there
        if name in inner.kinds:  # None there, which a MAYBE may be (and nobody else holds)
            outside.set(name, MAYBE, owned=name in inner.owned, masked=name in inner.masked)
        merged = joined(inner, outside)
        code += [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(inner, merged)]
        orelse = [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(outside, merged)]
        state.replace(merged)
        test = ast.Compare(ast.Name(self.em.b(name), ast.Load()), [ast.IsNot()], [ast.Constant(None)])
        return [ast.If(test, code or [ast.Pass()], orelse)]

    # --- S2 x[i] = v, S3 x.append(v) -------------------------------------------------------------

    def in_place(self, stmt: ast.stmt, state: AdjointState) -> list[ast.stmt]:
        x = flow.in_place_target(stmt)
        restore = self.restore(stmt, x) if id(stmt) in self.rec.written else []
        if x not in state.kinds:
            return restore
        em = self.em

        def body(inner: AdjointState) -> list[ast.stmt]:
            code: list[ast.stmt] = []
            bx = ast.Name(em.b(x), ast.Load())
            masked = set(inner.masked)  # a list's entries may carry structural zeros
            if x not in inner.owned or x in inner.masked:  # (an array's are dropped: owned is plain)
                code.append(_assign(em.b(x), _call(em.ctx.bind("owned", reverse_runtime.owned), [bx])))
                inner.set(x, SOME, owned=True, masked=x in masked)
            if isinstance(stmt, ast.Assign):
                v = stmt.value
                index = index_expr(stmt.targets[0].slice)
                taken = _call(em.ctx.bind("take_at", reverse_runtime.take_at), [bx, index, copy.deepcopy(v)])
            else:
                (v,) = stmt.value.args
                if stmt.value.func.attr == "append":
                    taken = _call(em.ctx.bind("pop_adjoint", reverse_runtime.pop_adjoint), [bx])
                else:
                    helper = em.ctx.bind("popped_extension", reverse_runtime.popped_extension)
                    taken = _call(helper, [bx, copy.deepcopy(v)])
            if isinstance(v, ast.Name) and em.is_active(v.id):
                maybe_none = not isinstance(stmt, ast.Assign)  # an appended entry's may be None
                taken_from = Contribution(v.id, taken, maybe_none=maybe_none, masked=x in masked)
                code += self.accumulate(v.id, taken_from, {}, inner)
            elif not isinstance(stmt, ast.Assign):
                code.append(ast.Expr(taken))
            if isinstance(stmt, ast.Assign):  # the values x had there were overwritten: zero there
                cleared = _call(
                    em.ctx.bind("cleared_at", reverse_runtime.cleared_at), [bx, copy.deepcopy(index)]
                )
                code.append(_assign(em.b(x), cleared))
            return code

        return self.guarded(x, state, body) + restore

    def restore(self, stmt: ast.stmt, x: str) -> list[ast.stmt]:
        if isinstance(stmt, ast.Assign):
            popped = self.popped(self.em.stack(f"{x}_items"))
            if self.em.is_active(x) and not self.em.for_numba:  # (a traced x is built anew)
                set_at = self.em.ctx.bind("set_at", reverse_runtime.set_at)
                return [
                    _assign(
                        x, _call(set_at, [ast.Name(x, ast.Load()), index_expr(stmt.targets[0].slice), popped])
                    )
                ]
            target = copy.deepcopy(stmt.targets[0])
            target.ctx = ast.Store()
            return [ast.Assign([target], popped)]
        call = stmt.value
        if call.func.attr == "append":
            return [ast.Expr(ast.Call(ast.Attribute(ast.Name(x, ast.Load()), "pop", ast.Load()), [], []))]
        helper = self.em.ctx.bind("unextend", reverse_runtime.unextend)
        return [ast.Expr(_call(helper, [ast.Name(x, ast.Load()), copy.deepcopy(call.args[0])]))]

    # --- control flow ----------------------------------------------------------------------------

    def if_(self, stmt: ast.If, state: AdjointState) -> list[ast.stmt]:
        if id(stmt) not in self.rec.ifs:
            return []
        then, orelse = state.copy(), state.copy()
        then_code = self.block(stmt.body, then)
        else_code = self.block(stmt.orelse, orelse)
        merged = joined(then, orelse)
        then_code += [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(then, merged)]
        else_code += [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(orelse, merged)]
        state.replace(merged)
        return [ast.If(copy.deepcopy(stmt.test), then_code or [ast.Pass()], else_code)]

    def loop(self, stmt: ast.For | ast.While, state: AdjointState) -> list[ast.stmt]:
        loop = self.rec.loops.get(id(stmt))
        if loop is None:
            return []
        target = stmt.target.id if isinstance(stmt, ast.For) else None
        if not loop.runs:
            return [self.pop(target)] if loop.target_restored else []
        owning = self.owning(stmt, state)  # adjoints written into in place by every trip: copied once
        owning += self.zeros_before(stmt, state)
        head, line = state.copy(), self.em.last_line
        self.em.current = stmt
        trip = self.em.temp("trip" if self.em.iterates_active(stmt) or "_" in self.em.taken else "_")
        while True:  # the state where each trip's adjoint starts: a fixpoint
            self.em.last_line = line
            inner = head.copy()
            body = [self.pop(target)] if loop.target_pushed else []
            body += [self.pop(v) for v in reversed(loop.trip_pushed)]
            body += self.block(stmt.body, inner)
            if self.em.iterates_active(stmt) and target in inner.kinds:  # v = s[trip]
                at = (stmt.iter.id, ast.Name(trip, ast.Load()))
                g = ast.Name(self.em.b(target), ast.Load())
                body += self.guarded(target, inner, lambda st, at=at, g=g: self.add_at(at, g, st))
                inner.zero(target)
            after = joined(head, inner)
            if after.same(head):
                break
            head = after
        pre = [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(state, head)]
        body += [_assign(self.em.b(n), ast.Constant(None)) for n in materialised(inner, head)]
        state.replace(head)
        trips: ast.expr = _call("range", [ast.Name(loop.counter, ast.Load())])
        if self.em.iterates_active(stmt):
            trips = _call("reversed", [trips])
        looped = ast.For(ast.Name(trip, ast.Store()), trips, body or [ast.Pass()], [])
        code = owning + pre + [looped]
        if loop.target_restored:
            code.append(self.pop(target))
        if loop.counter_restored:
            code.append(self.pop(loop.counter))
        return code

    def owning(self, loop: ast.For | ast.While, state: AdjointState) -> list[ast.stmt]:
        """`bx = owned(bx)` before a loop whose trips write into x's adjoint in place."""
        written = {flow.in_place_target(s) for s in _statements(loop.body)}
        for s in _statements(loop.body):
            if self.em.simple_active(s) and self.em.parts(s).at is not None:
                written.add(self.em.parts(s).at[0])
            if self.em.iterates_active(s):
                written.add(s.iter.id)
        if self.em.iterates_active(loop):
            written.add(loop.iter.id)
        out = []
        for name in sorted(n for n in written if n in state.kinds and n not in state.owned):
            b = self.em.b(name)
            out.append(
                _assign(b, _call(self.em.ctx.bind("owned", reverse_runtime.owned), [ast.Name(b, ast.Load())]))
            )
            state.owned.add(name)
        return out

    def zeros_before(self, loop: ast.For | ast.While, state: AdjointState) -> list[ast.stmt]:
        """`ba = zero_adjoint(a)` before a loop whose trips add into the adjoint of a parameter f never
        reassigns (its value is there to take the zeros' shape from): `ba = ba + ...` in the loop."""
        out = []
        targets = {
            c.to
            for s in _statements(loop.body)
            if self.em.simple_active(s)
            for c in self.em.parts(s).contribs
        }
        for name in sorted(targets & self.em.fixed_params - set(state.kinds)):
            zero = self.em.ctx.runtime("zero_adjoint")
            out.append(_assign(self.em.b(name), _call(zero, [ast.Name(name, ast.Load())])))
            state.set(name, SOME, owned=True, masked=False)
        return out

    def pop(self, name: str) -> ast.stmt:
        return _assign(name, self.popped(self.em.stack(f"{name}_stack")))

    @staticmethod
    def popped(stack: str) -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name(stack, ast.Load()), "pop", ast.Load()), [], [])


def _renamed(node: Any, renames: dict[str, str]) -> Any:
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in renames:
            n.id = renames[n.id]
    return node


def _call(func: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(ast.Name(func, ast.Load()), args, [])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Name(target, ast.Store())], value)


def _statements(stmts: list[ast.stmt]):
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)
