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
from adcore_source.activity import active_names
from adcore_source.reverse_parts import (
    ANS,
    G,
    Parts,
    assignment_parts,
)
from adcore_source.reverse_scan import (
    Namer,
    flagged,
    local_names,
    methods_of,
    names_in,
    names_of,
    sequences,
    signature_params,
    useful,
    walk_statements,
)


def emit_reverse(
    norm: Any, active_params: Iterable[str | int], ctx: Any, for_numba: bool = False
) -> tuple[ast.FunctionDef, ast.FunctionDef]:
    """(`def <f>_fwd(<params>): ... return out, saved`, `def <f>_bwd(saved, b<out>): ... return
    (b<p> for each active p)`) for f's A-normal form `norm`; `active_params`: parameter names or
    positions (the vararg is one tuple parameter); `ctx` binds names and transforms user callees;
    `for_numba`: the variant numba compiles (in-place writes as `x[i] = v`, not `x = set_at(x, i, v)`,
    which also takes traced values)."""
    from adcore_source.reverse_forward import forward_function
    from adcore_source.reverse_sweep import adjoint_function

    em = Emitter(norm, active_params, ctx, for_numba)
    rec = flow.record(em.body, em.reads, em.has_adjoint, em.counter, set(em.active))
    fwd = forward_function(em, rec)
    bwd = adjoint_function(em, rec)
    return ast.fix_missing_locations(fwd), ast.fix_missing_locations(bwd)


class Emitter:
    """One function's emission: its names, what is active, each statement's parts and reads, the
    comments naming f's lines; reverse_forward and reverse_sweep write the two functions from it."""

    def __init__(
        self, norm: Any, active_params: Iterable[str | int], ctx: Any, for_numba: bool = False
    ) -> None:
        self.norm, self.ctx = norm, ctx
        self.for_numba = (
            for_numba  # in-place writes as f writes them (set_at, for traced values, is not numba's)
        )
        self.params = signature_params(norm)
        wanted = [self.params[a] if isinstance(a, int) else a for a in active_params]
        self.active = [p for p in self.params if p in wanted]
        self.body = flagged(copy.deepcopy(norm.body), Namer(names_in(norm)))
        self.taken = names_in(norm) | names_of(self.body)
        self.locals = set(self.params) | {n for s in self.body for n in flow.assigned_names(s)}
        self.activity = frozenset(active_names(norm, self.active))
        self.methods = methods_of(self.body, self.activity)
        self.written = {flow.in_place_target(s) for s in walk_statements(self.body)} - {None}
        self.useful = useful(self.body, self.activity, self.methods)
        self.sequences = sequences(self.body)
        assigned = {n for s in walk_statements(self.body) for n in flow.assigned_names(s)} | self.written
        self.fixed_params = {p for p in self.active if p not in assigned}  # read anywhere in the sweep
        self.namer = Namer(self.taken | {G, ANS})
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
                    local_names(stmt.targets[0].slice, self.locals) | local_names(stmt.value, self.locals),
                    set(),
                )
            call = stmt.value
            return (
                set(),
                (local_names(call, self.locals) - {x}) if call.func.attr == "extend" else set(),
                set(),
            )
        if not self.simple_active(stmt):
            return defines, set(), set()
        p = self.parts(stmt)
        defines = set(p.defines)
        used: set[str] = set()
        for node in [*(c.expr for c in p.contribs), *p.prelude]:
            used |= local_names(node, self.locals | defines)
        if p.at is not None:
            used |= {p.at[0]} | local_names(p.at[1], self.locals)
        ans = any(isinstance(n, ast.Name) and n.id == ANS for c in p.contribs for n in ast.walk(c.expr))
        y = stmt.targets[0].id
        after = ((used & defines) - {y}) | ({y} if ans else set())
        before = used - (defines - {y})
        return defines, before, after

    def iterates_active(self, stmt: ast.stmt) -> bool:
        """`for v in s:` with s active: v's adjoint goes to s's at each trip's index."""
        return isinstance(stmt, ast.For) and self.is_active(stmt.iter.id) and self.is_active(stmt.target.id)

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


# --- helpers ---------------------------------------------------------------------------------------
