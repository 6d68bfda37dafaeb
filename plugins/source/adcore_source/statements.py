"""Lower Python statements to A-normal form: assignments, ifs, loops, comprehensions (normalize.Normalized)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable

from adcore_source.lowering import APPEND_METHODS, ExpressionLowerer, _assign, copied

_REFUSED_STATEMENTS = {
    "Global": ("a global statement", "return the new value instead of writing a global"),
    "Nonlocal": ("a nonlocal statement", "return the new value instead of writing an outer variable"),
    "Try": ("try/except", "generated code has no exception edges: test the condition with if"),
    "TryStar": ("try/except*", "generated code has no exception edges: test the condition with if"),
    "With": ("a with block", "its __exit__ would run outside the derivative sweeps; move it out of f"),
    "AsyncWith": ("async with", "transform a plain function"),
    "AsyncFor": ("async for", "transform a plain function"),
    "AsyncFunctionDef": ("a nested async def", "transform a plain function"),
    "Delete": ("del", "let the name go out of use instead"),
    "ClassDef": ("a class defined inside the function", "define it outside f"),
    "Import": ("an import inside the function", "import at module level"),
    "ImportFrom": ("an import inside the function", "import at module level"),
    "Raise": ("raise", "generated code has no exception edges; check inputs before calling f"),
    "Assert": ("assert", "generated code has no exception edges; check inputs before calling f"),
    "Match": ("a match statement", "use if/elif"),
    "Continue": ("continue here", ""),
}


class StatementLowerer(ExpressionLowerer):
    """Lowers one function's statements (after jumps.py removed early returns, breaks and continues)."""

    def statements(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """stmts lowered, as a new block."""
        with self.block() as out:
            for stmt in stmts:
                self.line = getattr(stmt, "lineno", self.line)
                method = getattr(self, "stmt_" + type(stmt).__name__, None)
                if method is None:
                    what, fix = _REFUSED_STATEMENTS.get(
                        type(stmt).__name__, (f"the statement {type(stmt).__name__}", "")
                    )
                    self.refuse(stmt, what, fix)
                method(stmt)
        return out

    # ---- assignments ----

    def stmt_Assign(self, s: ast.Assign) -> None:
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            self.assign_name(s.targets[0], s.value)
            return
        if (
            len(s.targets) == 1
            and isinstance(s.targets[0], ast.Tuple | ast.List)
            and isinstance(s.value, ast.Tuple)
        ):
            self.unpack_display(s.targets[0], s.value)
            return
        value = self.atom(s.value, _target_hint(s.targets[0]))
        for target in s.targets:
            self.store(target, value)

    def stmt_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is not None:
            self.stmt_Assign(ast.Assign(targets=[s.target], value=s.value, lineno=s.lineno))

    def assign_name(self, target: ast.Name, value: ast.expr) -> None:
        name = self.store_name(target)
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if (
            isinstance(value, ast.BoolOp | ast.IfExp | ast.Compare | ast.ListComp | ast.GeneratorExp)
            and target.id not in reads
        ):
            self.into = name  # these write their result in pieces: straight into the target
        simple = self.expr(value, name)
        self.into = None
        if not (isinstance(simple, ast.Name) and simple.id == name):
            self.emit(_assign(name, simple))

    def unpack_display(self, target: ast.Tuple | ast.List, value: ast.Tuple) -> None:
        """a, b = b, a: every right-hand value computed before any target is written."""
        if len(target.elts) != len(value.elts) or any(isinstance(e, ast.Starred) for e in value.elts):
            self.store(target, self.atom(value))
            return
        written = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        atoms = [self.atom(v) for v in value.elts]
        atoms = [self.bind(a, a.id) if isinstance(a, ast.Name) and a.id in written else a for a in atoms]
        for t, a in zip(target.elts, atoms, strict=True):
            self.store(t, a)

    def store_name(self, target: ast.Name) -> str:
        name = self.renamed.get(target.id, target.id)
        if name in self.lifted:
            self.refuse(target, f"rebinding the nested function {name!r}", "give the value another name")
        self.locals.add(name)
        return name

    def store(self, target: ast.expr, value: ast.expr) -> None:
        """Write the atom `value` to an assignment target."""
        if isinstance(target, ast.Name):
            self.emit(_assign(self.store_name(target), value))
        elif isinstance(target, ast.Subscript):
            owner = self.written_owner(target)
            self.emit(
                ast.Assign(targets=[ast.Subscript(owner, self.index(target.slice), ast.Store())], value=value)
            )
        elif isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.refuse(target, "a starred assignment target", "index the parts you need")
            whole = value if isinstance(value, ast.Name) else self.bind(value, "items")
            for k, elt in enumerate(target.elts):
                part = ast.Subscript(whole, ast.Constant(k), ast.Load())
                if isinstance(elt, ast.Name):
                    self.emit(_assign(self.store_name(elt), part))
                else:
                    self.store(elt, self.bind(part))
        elif isinstance(target, ast.Attribute):
            self.refuse(target, f"assignment to the attribute .{target.attr}", "return the new value instead")
        else:
            self.refuse(target, f"assignment to {type(target).__name__}")

    def written_owner(self, target: ast.Subscript) -> ast.Name:
        """The local a subscript write changes (a plain local name: x[i] = v, not x[i][j] = v)."""
        if not isinstance(target.value, ast.Name):
            self.refuse(target, "a write into part of a part (x[i][j] = v)", "write x[i, j] = v")
        name = self.renamed.get(target.value.id, target.value.id)
        if name not in self.locals:
            self.refuse(target, f"a write into {name!r}, which is not a local", "copy it into a local first")
        return ast.Name(name, ast.Load())

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        if isinstance(s.target, ast.Name):
            current = self.expr_Name(ast.Name(s.target.id, ast.Load()), None)
            value = ast.BinOp(current, s.op, self.atom(s.value))
            update = _assign(self.store_name(s.target), value)
            self.emit(update)
            self.augmented.append(update)
        elif isinstance(s.target, ast.Subscript):
            owner = self.written_owner(s.target)
            index = self.index(s.target.slice)
            part = self.bind(ast.Subscript(owner, index, ast.Load()), f"{owner.id}_part")
            self.exempt.add(part.id)  # read by the next statement only, before the write
            total = self.bind(ast.BinOp(part, s.op, self.atom(s.value)))
            self.emit(
                ast.Assign(targets=[ast.Subscript(owner, copied([index])[0], ast.Store())], value=total)
            )
        else:
            self.store(s.target, ast.Constant(None))  # refuses attributes and tuples

    # ---- expression statements ----

    def stmt_Expr(self, s: ast.Expr) -> None:
        e = s.value
        if isinstance(e, ast.Constant):
            return  # a docstring or a bare constant
        f = e.func if isinstance(e, ast.Call) else None
        if isinstance(f, ast.Attribute) and f.attr in APPEND_METHODS and self.hoisted(f) is None:
            owner = self.name_atom(f.value)
            if owner.id not in self.locals or len(e.args) != 1 or e.keywords:
                self.refuse(s, f".{f.attr}() outside a local list of one argument", "build a local list")
            arg = self.atom(e.args[0])
            self.emit(ast.Expr(ast.Call(ast.Attribute(owner, f.attr, ast.Load()), [arg], [])))
            return
        simple = self.expr(e)
        if not isinstance(simple, ast.Name | ast.Constant):
            self.bind(simple)  # run for its effect (print, ...): its value is unused

    def stmt_Pass(self, s: ast.Pass) -> None:
        pass

    def stmt_Break(self, s: ast.Break) -> None:
        self.emit(ast.Break())

    def stmt_Return(self, s: ast.Return) -> None:
        self.emit(ast.Return(self.atom(s.value) if s.value is not None else ast.Constant(None)))

    def stmt_FunctionDef(self, s: ast.FunctionDef) -> None:
        if s.name not in self.lifted:
            self.refuse(s, f"the nested function {s.name!r}", "define it at module level")

    # ---- control flow ----

    def stmt_If(self, s: ast.If) -> None:
        test = self.name_atom(s.test)
        line = self.line
        body, orelse = self.statements(s.body), self.statements(s.orelse)
        self.line = line
        if not body and not orelse:
            return
        if not body:
            test, body, orelse = self.bind(ast.UnaryOp(ast.Not(), test), f"not_{test.id}"), orelse, []
        self.emit(ast.If(test, body, orelse))

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            self.refuse(s, "while ... else", "test a flag after the loop")
        with self.block() as test_stmts:
            test = self.name_atom(s.test, "going")
        for stmt in test_stmts:
            self.out.append(stmt)
        line = self.line
        body = self.statements(s.body)
        self.line = line
        body += copied(test_stmts)
        self.emit(ast.While(test, body or [ast.Pass()], []))

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            self.refuse(s, "for ... else", "test a flag after the loop")
        stored = {
            n.id
            for n in ast.walk(ast.Module(s.body, []))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        plan = self.iteration(s.iter, s.target, stored)

        def body() -> None:
            self.out.extend(self.statements(s.body))
            self.line = s.lineno

        self.loop(s.target, plan, body)

    def iteration(self, it: ast.expr, target: ast.expr, stored: set[str]) -> tuple:
        """What a loop iterates, computed before it: ("items", xs) or ("index", kind, sequences, start)."""
        zipped = self.zipped(it, target)
        if zipped is None:
            return ("items", self.name_atom(it))
        kind, sequences, start = zipped
        seqs = [self.name_atom(a, "items") for a in sequences]
        # a sequence the body rebinds is read through a copy of the name (the loop sees the old object)
        seqs = [self.bind(s, s.id) if s.id in stored else s for s in seqs]
        return ("index", kind, seqs, None if start is None else self.atom(start))

    def loop(self, target: ast.expr, plan: tuple, body: Callable[[], None]) -> None:
        """for target in <plan>: body(), as S5 (enumerate and zip become loops over range(len(...)))."""
        if plan[0] == "index":
            self.index_loop(target, *plan[1:], body)
            return
        source = plan[1]
        if isinstance(target, ast.Name):
            var = self.store_name(target)
            with self.block() as inner:
                body()
            self.emit(ast.For(ast.Name(var, ast.Store()), source, inner or [ast.Pass()], []))
            return
        item = self.temp("item")
        with self.block() as inner:
            self.store(target, ast.Name(item, ast.Load()))
            body()
        self.emit(ast.For(ast.Name(item, ast.Store()), source, inner, []))

    def zipped(self, it: ast.expr, target: ast.expr) -> tuple[str, list[ast.expr], ast.expr | None] | None:
        """('enumerate', [xs], start) or ('zip', [a, b, ...], None) for loops to lower by index."""
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
            return None
        if any(isinstance(a, ast.Call) and not isinstance(a.func, ast.Attribute) for a in it.args):
            return None  # zip(a, zip(b, c)), enumerate(map(...)): not sequences, iterate them as they are
        name = self.renamed.get(it.func.id, it.func.id)
        obj = None if name in self.locals else self.namespace.get(name)
        if any(isinstance(a, ast.Starred) for a in it.args) or not isinstance(target, ast.Tuple | ast.List):
            return None
        if obj is builtins.enumerate and len(it.args) == 1 and len(target.elts) == 2:
            start = it.keywords[0].value if len(it.keywords) == 1 and it.keywords[0].arg == "start" else None
            if it.keywords and start is None:
                return None
            return ("enumerate", it.args, start)
        if obj is builtins.enumerate and len(it.args) == 2 and not it.keywords and len(target.elts) == 2:
            return ("enumerate", it.args[:1], it.args[1])
        if obj is builtins.zip and it.args and not it.keywords and len(target.elts) == len(it.args):
            return ("zip", it.args, None)
        return None

    def index_loop(self, target, kind: str, seqs: list[ast.Name], start, body: Callable[[], None]) -> None:
        lengths = [self.bind(ast.Call(self.builtin("len"), [s], []), f"len_{s.id}") for s in seqs]
        count = (
            lengths[0]
            if len(lengths) == 1
            else self.bind(ast.Call(self.builtin("min"), lengths, []), "count")
        )
        indices = self.bind(ast.Call(self.builtin("range"), [count], []), "indices")
        parts = target.elts[1:] if kind == "enumerate" else target.elts
        first = target.elts[0]
        by_own_name = kind == "enumerate" and start is None and isinstance(first, ast.Name)
        k = self.store_name(first) if by_own_name else self.temp("k")
        with self.block() as inner:
            if kind == "enumerate" and not by_own_name:
                position: ast.expr = ast.Name(k, ast.Load())
                if start is not None:
                    position = self.bind(ast.BinOp(position, ast.Add(), start), "position")
                self.store(first, position)
            for seq, part in zip(seqs, parts, strict=True):
                element = ast.Subscript(seq, ast.Name(k, ast.Load()), ast.Load())
                if isinstance(part, ast.Name):
                    self.emit(_assign(self.store_name(part), element))
                else:
                    self.store(part, self.bind(element))
            body()
        self.emit(ast.For(ast.Name(k, ast.Store()), indices, inner, []))

    # ---- comprehensions and f-strings (they need loops) ----

    def expr_ListComp(self, e: ast.ListComp | ast.GeneratorExp, hint: str | None) -> ast.expr:
        result = self.result_name("items")
        self.emit(_assign(result, ast.List([], ast.Load())))

        def element() -> None:
            value = self.atom(e.elt)
            self.emit(
                ast.Expr(
                    ast.Call(ast.Attribute(ast.Name(result, ast.Load()), "append", ast.Load()), [value], [])
                )
            )

        self.comprehension(e.generators, element)
        return ast.Name(result, ast.Load())

    # a generator expression is consumed as the list of its elements (the same elements, in order)
    expr_GeneratorExp = expr_ListComp

    def expr_DictComp(self, e: ast.DictComp, hint: str | None) -> ast.expr:
        pairs = ast.ListComp(ast.Tuple([e.key, e.value], ast.Load()), e.generators)
        ast.copy_location(pairs, e)
        pairs_name = self.expr_ListComp(pairs, "pairs")
        return ast.Call(self.builtin("dict"), [pairs_name], [])

    def comprehension(self, generators: list[ast.comprehension], element: Callable[[], None]) -> None:
        saved = dict(self.renamed)
        try:
            self._generators(generators, element)
        finally:
            self.renamed = saved

    def _generators(self, generators: list[ast.comprehension], element: Callable[[], None]) -> None:
        gen, rest = generators[0], generators[1:]
        if gen.is_async:
            self.refuse(gen.iter, "an async comprehension", "transform a plain function")
        plan = self.iteration(gen.iter, gen.target, set())
        for n in ast.walk(gen.target):  # the comprehension's variables: fresh names, f's are not clobbered
            if isinstance(n, ast.Name):
                self.renamed[n.id] = self.temp(n.id)

        def body() -> None:
            self._conditions(gen.ifs, rest, element)

        self.loop(gen.target, plan, body)

    def _conditions(
        self, ifs: list[ast.expr], rest: list[ast.comprehension], element: Callable[[], None]
    ) -> None:
        if ifs:
            test = self.name_atom(ifs[0], "keep")
            with self.block() as inner:
                self._conditions(ifs[1:], rest, element)
            self.emit(ast.If(test, inner, []))
        elif rest:
            self._generators(rest, element)
        else:
            element()

    def expr_JoinedStr(self, e: ast.JoinedStr, hint: str | None) -> ast.expr:
        pieces: list[ast.expr] = []
        for part in e.values:
            if isinstance(part, ast.Constant):
                pieces.append(ast.Constant(part.value))
                continue
            value = self.atom(part.value)
            if part.conversion != -1:
                convert = {ord("s"): "str", ord("r"): "repr", ord("a"): "ascii"}[part.conversion]
                value = self.bind(ast.Call(self.builtin(convert), [value], []), f"{convert}_value")
            spec = part.format_spec
            if spec is None or all(isinstance(p, ast.Constant) for p in spec.values):
                spec = ast.Constant("".join(p.value for p in spec.values) if spec else "")
            spec = self.atom(spec)
            pieces.append(self.bind(ast.Call(self.builtin("format"), [value, spec], []), "text"))
        listed = self.bind(ast.List(pieces, ast.Load()), "pieces")
        join = self.bind(ast.Attribute(self.bind(ast.Constant(""), "empty"), "join", ast.Load()), "join")
        return ast.Call(join, [listed], [])


def _target_hint(target: ast.expr) -> str | None:
    return target.id if isinstance(target, ast.Name) else None
