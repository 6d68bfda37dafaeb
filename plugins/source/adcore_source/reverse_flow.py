"""What the reverse emitter's forward sweep must record: the dataflow over f's A-normal form.

The adjoint sweep runs f's statements backwards and reads f's locals as they were at each
statement (Tangent's discipline): a value the forward sweep overwrites (`x = ...` again, `x[i] = v`,
a loop's target) is pushed before it is lost when a read in the adjoint sweep still needs it, and
popped back when the adjoint sweep passes that statement. `pending` is that need, a forward
dataflow: at a point of f, the names some earlier statement's adjoint reads and no assignment has
since given a new value (assignments in between restore the value themselves). A write needs a
push exactly when the name it overwrites is pending there. Also here: which names are assigned on
every path (`defined`, so a push or the saved tuple never reads an unbound name) and which may
share memory with a caller's argument (`aliases`, copied before they are kept).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Record:
    """What the forward sweep records, by statement (id of the A-normal-form node)."""

    restored: dict[int, set[str]] = field(default_factory=dict)  # names pushed before the statement
    written: set[int] = field(default_factory=set)  # x[i] = v / x.append(v) whose x is pushed or popped
    loops: dict[int, LoopRecord] = field(default_factory=dict)
    ifs: set[int] = field(default_factory=set)  # the ifs the adjoint sweep takes again
    at_end: set[str] = field(default_factory=set)  # read by the adjoint sweep at f's return: saved

    def pushes(self, stmt: ast.stmt) -> set[str]:
        return self.restored.get(id(stmt), set())


@dataclass
class LoopRecord:
    counter: str  # the trip count's name
    target_pushed: bool = False  # the target's value of each trip, pushed at its end
    target_restored: bool = False  # the target's value before the loop, pushed before it
    counter_restored: bool = False  # the trip count of an earlier run of this loop, pushed
    runs: bool = False  # the adjoint sweep runs the loop (else it only pops the target back)
    trip_pushed: list[str] = field(default_factory=list)  # a trip's own values, pushed at its end


def record(
    body: list[ast.stmt],
    reads: Callable[[ast.stmt], tuple[set[str], set[str], set[str]]],
    has_adjoint: Callable[[ast.stmt], bool],
    counter: Callable[[ast.stmt], str],
    entry: set[str],
) -> Record:
    """The forward sweep's record for `body`. reads(stmt) of a simple statement: (names it assigns,
    names its adjoint reads before it ran, names its adjoint reads after it ran); `entry`: what the
    adjoint sweep reads at f's entry (the active parameters, for their adjoints' shapes)."""
    rec = Record()
    flow = _Flow(rec, reads, has_adjoint, counter)
    rec.at_end = flow.block(body, set(entry))
    return rec


class _Flow:
    def __init__(self, rec: Record, reads: Any, has_adjoint: Any, counter: Any) -> None:
        self.rec, self.reads, self.has_adjoint, self.counter = rec, reads, has_adjoint, counter

    def block(self, stmts: list[ast.stmt], pending: set[str]) -> set[str]:
        for stmt in stmts:
            pending = self.statement(stmt, pending)
        return pending

    def statement(self, stmt: ast.stmt, pending: set[str]) -> set[str]:
        if isinstance(stmt, ast.If):
            return self.if_(stmt, pending)
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, pending)
        if isinstance(stmt, (ast.Return, ast.Break, ast.Continue, ast.Pass)):
            return pending
        defines, before, after = self.reads(stmt)
        if _in_place_target(stmt) is not None:  # x[i] = v, x.append(v): a partial write
            x = _in_place_target(stmt)
            if x in pending or x in before:
                self.rec.written.add(id(stmt))
            return pending | before | after
        pushed = defines & (pending | before)
        if pushed:
            self.rec.restored.setdefault(id(stmt), set()).update(pushed)
        return ((pending | before) - defines) | after

    def if_(self, stmt: ast.If, pending: set[str]) -> set[str]:
        then = self.block(stmt.body, set(pending))
        orelse = self.block(stmt.orelse, set(pending))
        out = then | orelse
        if self.needed(stmt.body) or self.needed(stmt.orelse):
            self.rec.ifs.add(id(stmt))
            out.add(stmt.test.id)  # the adjoint sweep reads the flag where the if ends
        return out

    def loop(self, stmt: ast.For | ast.While, pending: set[str]) -> set[str]:
        target = stmt.target.id if isinstance(stmt, ast.For) else None
        _, iterated, _ = self.reads(stmt)  # an active array looped over: its adjoint gets each trip's
        head = set(pending) | iterated
        while True:  # the head's pending names: a fixpoint over the trips
            inside = head - {target} if target else set(head)
            end = self.block(stmt.body, inside)
            new = head | end
            if new == head:
                break
            head = new
        if not self.needed(stmt.body) and not iterated and not (target is not None and target in pending):
            return head
        n = self.counter(stmt)
        loop = self.rec.loops.setdefault(id(stmt), LoopRecord(n))
        loop.runs = (
            loop.runs or self.needed(stmt.body) or bool(iterated) or (target is not None and target in end)
        )
        loop.target_pushed = loop.target_pushed or (target is not None and target in end)
        loop.target_restored = loop.target_restored or (target is not None and target in pending)
        loop.counter_restored = loop.counter_restored or n in pending
        # names local to a trip (assigned once in it before any read; their value before the loop
        # never read): pushed at the trip's end and popped as its adjoint starts, like the target,
        # instead of pushed before each assignment (no value of an earlier trip, or None, kept)
        exposed, counts, defined = self.trip_scan(stmt.body, set(), set(), {})
        trip = {v for v, k in counts.items() if k == 1 and v in end and v in defined} - exposed - pending
        trip.discard(target)
        if trip:
            loop.trip_pushed = sorted(set(loop.trip_pushed) | trip)
            for inner in _direct(stmt.body):
                if id(inner) in self.rec.restored:
                    self.rec.restored[id(inner)] -= trip
        # the target and those: popped by each trip's adjoint and, if read before the loop, popped
        # after it (pushed before it); their values after the loop are read by later statements only
        return (head - {target} - set(loop.trip_pushed)) | ({n} if loop.runs else set())

    def trip_scan(self, stmts: list[ast.stmt], defined: set[str], exposed: set[str], counts: dict) -> tuple:
        """(names the adjoints in these statements read before they assign them, how many times each
        name is assigned (2: more than once or in place), the names assigned on every path)."""
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                then = self.trip_scan(stmt.body, set(defined), exposed, counts)[2]
                orelse = self.trip_scan(stmt.orelse, set(defined), exposed, counts)[2]
                defined = then & orelse
            elif isinstance(stmt, (ast.For, ast.While)):
                inner = set(defined) | ({stmt.target.id} if isinstance(stmt, ast.For) else set())
                self.trip_scan(stmt.body, inner, exposed, counts)
                for name in {n for s in stmt.body for n in assigned_names(s)} | (inner - defined):
                    counts[name] = 2
            elif _in_place_target(stmt) is not None:
                counts[_in_place_target(stmt)] = 2
                exposed |= self.reads(stmt)[1] - defined
            elif not isinstance(stmt, (ast.Return, ast.Break, ast.Continue, ast.Pass)):
                defines, before, _ = self.reads(stmt)
                exposed |= before - defined
                for name in defines | assigned_names(stmt):
                    counts[name] = counts.get(name, 0) + 1
                defined = defined | defines | assigned_names(stmt)
        return exposed, counts, defined

    def needed(self, stmts: list[ast.stmt]) -> bool:
        """Whether the adjoint sweep must go through these statements: an adjoint or a pop in them."""
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                if id(stmt) in self.rec.ifs or self.needed(stmt.body) or self.needed(stmt.orelse):
                    return True
            elif isinstance(stmt, (ast.For, ast.While)):
                if id(stmt) in self.rec.loops or self.needed(stmt.body):
                    return True
            elif self.has_adjoint(stmt) or id(stmt) in self.rec.restored or id(stmt) in self.rec.written:
                return True
        return False


def _in_place_target(stmt: ast.stmt) -> str | None:
    """x of `x[i] = v` (S2) or `x.append(v)` / `x.extend(v)` (S3)."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript):
        return stmt.targets[0].value.id
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id
    return None


in_place_target = _in_place_target


def _direct(stmts: list[ast.stmt]):
    """The statements of a loop's body, into its ifs but not into its loops."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _direct(stmt.body)
            yield from _direct(stmt.orelse)


# --- names assigned on every path ------------------------------------------------------------------


def undefined_reads(
    body: list[ast.stmt], params: list[str], rec: Record, defines: Callable[[ast.stmt], set[str]]
) -> set[str]:
    """The names a push or the saved tuple reads where f may not have assigned them yet: the forward
    sweep sets them to None first."""
    missing: set[str] = set()

    def block(stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        for stmt in stmts:
            defined = one(stmt, defined)
        return defined

    def one(stmt: ast.stmt, defined: set[str]) -> set[str]:
        missing.update(rec.pushes(stmt) - defined)
        if isinstance(stmt, ast.If):
            return block(stmt.body, set(defined)) & block(stmt.orelse, set(defined))
        if isinstance(stmt, (ast.For, ast.While)):
            loop = rec.loops.get(id(stmt))
            if loop is not None and loop.target_restored and stmt.target.id not in defined:
                missing.add(stmt.target.id)
            if loop is not None and loop.counter_restored and loop.counter not in defined:
                missing.add(loop.counter)
            inner = set(defined) | ({stmt.target.id} if isinstance(stmt, ast.For) else set())
            block(stmt.body, inner)
            return defined | ({loop.counter} if loop is not None and loop.runs else set())
        return defined | defines(stmt)

    end = block(body, set(params))
    return missing | (rec.at_end - end)


def assigned_names(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# --- names that may share memory with an argument --------------------------------------------------


def aliases(
    body: list[ast.stmt], params: list[str], fresh: Callable[[ast.expr], bool]
) -> dict[str, set[str]]:
    """name -> the parameters whose memory it may share (a view, the same list, an element): a
    value that reaches the saved tuple or a stack from one of them is copied by the forward sweep,
    so what the adjoint sweep reads cannot change under it. `fresh(value)`: the expression makes a
    new value (arithmetic, an elementwise op)."""
    out: dict[str, set[str]] = {p: {p} for p in params}
    stmts = [n for s in body for n in ast.walk(s) if isinstance(n, (ast.Assign, ast.For, ast.Expr))]
    changed = True
    while changed:
        changed = False
        for stmt in stmts:
            if isinstance(stmt, ast.For):
                target, sources = stmt.target.id, {stmt.iter.id} if isinstance(stmt.iter, ast.Name) else set()
            elif isinstance(stmt, ast.Expr):
                x = _in_place_target(stmt)
                if x is None:
                    continue
                target, sources = x, _names(stmt.value)
            elif isinstance(stmt.targets[0], ast.Name):
                if fresh(stmt.value):
                    continue
                target, sources = stmt.targets[0].id, _names(stmt.value)
            else:
                target, sources = stmt.targets[0].value.id, _names(stmt.value)
            new = set().union(*(out.get(s, set()) for s in sources)) if sources else set()
            if not new <= out.get(target, set()):
                out.setdefault(target, set()).update(new)
                changed = True
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
