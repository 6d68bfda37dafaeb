"""Lower Python expressions to A-normal form: one operation on atoms per statement (normalize.Normalized)."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import types
from collections.abc import Iterator
from typing import Any

from adcore_source.errors import Origin, refuse
from adcore_source.naming import ATOMS, Names, describe

# builtins that run code, read frames or do I/O: the transformation cannot see through them
REFUSED_CALLEES = tuple(
    getattr(builtins, n)
    for n in ("eval", "exec", "compile", "globals", "locals", "vars", "open", "input", "breakpoint", "__import__",
              "setattr", "delattr")
)  # fmt: skip
APPEND_METHODS = frozenset({"append", "extend"})
# methods that change the value they are called on (list, dict, set, ndarray): not taken
MUTATING_METHODS = frozenset(
    {"pop", "insert", "remove", "sort", "reverse", "clear", "update", "setdefault", "popitem", "add", "discard",
     "fill", "resize", "put", "itemset", "setfield", "partition", "byteswap", "setflags"}
)  # fmt: skip


def located(node: ast.AST, line: int) -> ast.AST:
    """node and its expressions placed on `line` of f (columns are not kept); the statements nested in
    it keep their own lines, unless they have none yet."""
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.stmt) and sub is not node and hasattr(sub, "lineno"):
            continue
        if isinstance(sub, ast.stmt | ast.expr | ast.excepthandler | ast.arg | ast.keyword):
            sub.lineno = sub.end_lineno = line
            sub.col_offset = sub.end_col_offset = 0
        todo.extend(ast.iter_child_nodes(sub))
    return node


class ExpressionLowerer:
    """Lowers one function's expressions to A-normal form; see normalize.Normalized for the grammar.

    `locals` are the names bound in the function; `namespace` the objects of the names it reads from
    outside (hoisted attribute chains of modules are added to it); `lifted` maps a nested function's
    name to its extra trailing parameters (its free locals), for calls of it.
    """

    def __init__(
        self,
        origin: Origin,
        locals_: set[str],
        namespace: dict[str, Any],
        names: Names,
        lifted: dict[str, list[str]],
    ):
        self.origin = origin
        self.locals = set(locals_)
        self.namespace = namespace
        self.names = names
        self.lifted = lifted
        self.method_of: dict[str, tuple[str, str]] = {}
        self.renamed: dict[str, str] = {}
        self.augmented: list[ast.Assign] = []  # the `x = x + v` of each `x += v` (in place, for an array)
        self.exempt: set[str] = set()  # temporaries that cannot alias: read once, before any write
        self.temporaries: set[str] = set()  # the locals normalize made up
        self.into: str | None = None  # where an expression built in pieces writes its value
        self.out: list[ast.stmt] = []
        self.line = origin.first_line

    # ---- output ----

    def emit(self, stmt: ast.stmt) -> None:
        self.out.append(located(stmt, self.line))

    @contextlib.contextmanager
    def block(self) -> Iterator[list[ast.stmt]]:
        """Statements emitted inside the `with` go to the yielded list, not the current block."""
        outer, self.out = self.out, []
        try:
            yield self.out
        finally:
            self.out = outer

    def temp(self, hint: str) -> str:
        name = self.names.fresh(hint)
        self.locals.add(name)
        self.temporaries.add(name)
        return name

    def result_name(self, default: str) -> str:
        """Where an expression computed in pieces (if/else, and/or, a comprehension) puts its value."""
        name, self.into = self.into, None
        return name or self.temp(default)

    def bind(self, e: ast.expr, hint: str | None = None) -> ast.Name:
        """A fresh local holding the one-operation expression e."""
        name = self.temp(hint or describe(e, self.method_of))
        self.emit(ast.Assign(targets=[ast.Name(name, ast.Store())], value=e))
        return ast.Name(name, ast.Load())

    def builtin(self, name: str) -> ast.Name:
        """A namespace name bound to the builtin `name` (the builtin's own name unless f uses it otherwise)."""
        obj = getattr(builtins, name)
        if self.namespace.get(name) is obj and name not in self.locals:
            return ast.Name(name, ast.Load())
        for key, value in self.namespace.items():
            if value is obj and key not in self.locals:
                return ast.Name(key, ast.Load())
        key = name if name not in self.names.taken else self.names.fresh(name)
        self.names.taken.add(key)
        self.namespace[key] = obj
        return ast.Name(key, ast.Load())

    def refuse(self, node: ast.AST | None, what: str, fix: str = "") -> None:
        refuse(node, what, fix, self.origin)

    # ---- expressions ----

    def atom(self, e: ast.expr, hint: str | None = None) -> ast.Name | ast.Constant:
        """e as an atom (a Name or a Constant), computing it into a temporary first if needed."""
        simple = self.expr(e, hint)
        return simple if isinstance(simple, ATOMS) else self.bind(simple, hint)

    def name_atom(self, e: ast.expr, hint: str | None = None) -> ast.Name:
        """e as a Name (a constant is bound to a temporary)."""
        a = self.atom(e, hint)
        return a if isinstance(a, ast.Name) else self.bind(a, hint or describe(a, self.method_of))

    def expr(self, e: ast.expr, hint: str | None = None) -> ast.expr:
        """e as one operation on atoms (the right-hand side of an S1 statement), its operands computed first."""
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            self.refuse(e, _construct(e), _fix(e))
        return method(e, hint)

    def expr_Constant(self, e: ast.Constant, hint: str | None) -> ast.expr:
        return ast.Constant(e.value)

    def expr_Name(self, e: ast.Name, hint: str | None) -> ast.expr:
        name = self.renamed.get(e.id, e.id)
        if name in self.lifted:
            self.refuse(e, f"the nested function {name!r} used as a value", "only call nested functions")
        if name not in self.locals and name not in self.namespace:
            self.refuse(e, f"the name {name!r}, which is not defined", "define it before f is transformed")
        return ast.Name(name, ast.Load())

    def expr_UnaryOp(self, e: ast.UnaryOp, hint: str | None) -> ast.expr:
        if isinstance(e.op, ast.USub | ast.UAdd) and isinstance(e.operand, ast.Constant):
            value = e.operand.value
            if isinstance(value, int | float | complex) and not isinstance(value, bool):
                return ast.Constant(-value if isinstance(e.op, ast.USub) else +value)
        return ast.UnaryOp(e.op, self.atom(e.operand))

    def expr_BinOp(self, e: ast.BinOp, hint: str | None) -> ast.expr:
        left = self.atom(e.left)
        return ast.BinOp(left, e.op, self.atom(e.right))

    def expr_Compare(self, e: ast.Compare, hint: str | None) -> ast.expr:
        if len(e.ops) == 1:
            left = self.atom(e.left)
            return ast.Compare(left, e.ops, [self.atom(e.comparators[0])])
        # a < b < c: b evaluated once, c only when a < b holds
        result = self.result_name("test")
        left = self.atom(e.left)
        self._chain(left, list(zip(e.ops, e.comparators, strict=True)), result)
        return ast.Name(result, ast.Load())

    def _chain(self, left: ast.expr, rest: list[tuple[ast.cmpop, ast.expr]], result: str) -> None:
        (op, right), rest = rest[0], rest[1:]
        right_atom = self.atom(right)
        self.emit(_assign(result, ast.Compare(left, [op], [right_atom])))
        if rest:
            with self.block() as body:
                self._chain(right_atom, rest, result)
            self.emit(ast.If(ast.Name(result, ast.Load()), body, []))

    def expr_BoolOp(self, e: ast.BoolOp, hint: str | None) -> ast.expr:
        # a and b: r = a; if r: r = b.  a or b: r = a; if not r: r = b (each operand evaluated only if needed)
        result = self.result_name("both" if isinstance(e.op, ast.And) else "either")
        self._short_circuit(e.op, e.values, result)
        return ast.Name(result, ast.Load())

    def _short_circuit(self, op: ast.boolop, values: list[ast.expr], result: str) -> None:
        self.emit(_assign(result, self.expr(values[0])))
        if len(values) == 1:
            return
        test = ast.Name(result, ast.Load())
        if isinstance(op, ast.Or):
            test = self.bind(ast.UnaryOp(ast.Not(), test), f"not_{result}")
        with self.block() as body:
            self._short_circuit(op, values[1:], result)
        self.emit(ast.If(test, body, []))

    def expr_IfExp(self, e: ast.IfExp, hint: str | None) -> ast.expr:
        result = self.result_name("choice")
        test = self.name_atom(e.test)
        with self.block() as body:
            self.emit(_assign(result, self.expr(e.body)))
        with self.block() as orelse:
            self.emit(_assign(result, self.expr(e.orelse)))
        self.emit(ast.If(test, body, orelse))
        return ast.Name(result, ast.Load())

    def expr_Tuple(self, e: ast.Tuple, hint: str | None) -> ast.expr:
        return ast.Tuple(self._elements(e.elts), ast.Load())

    def expr_List(self, e: ast.List, hint: str | None) -> ast.expr:
        return ast.List(self._elements(e.elts), ast.Load())

    def _elements(self, elts: list[ast.expr]) -> list[ast.expr]:
        for elt in elts:
            if isinstance(elt, ast.Starred):
                self.refuse(elt, "a starred element in a display", "build it with + or np.concatenate")
        return [self.atom(elt) for elt in elts]

    def expr_Dict(self, e: ast.Dict, hint: str | None) -> ast.expr:
        keys, values = [], []
        for k, v in zip(e.keys, e.values, strict=True):
            if k is None:
                self.refuse(e, "a ** entry in a dict display", "build the dict with dict(a, **b)")
            keys.append(self.atom(k))
            values.append(self.atom(v))
        return ast.Dict(keys, values)

    def expr_Attribute(self, e: ast.Attribute, hint: str | None) -> ast.expr:
        hoisted = self.hoisted(e)
        if hoisted is not None:
            return hoisted
        return ast.Attribute(self.name_atom(e.value), e.attr, ast.Load())

    def hoisted(self, e: ast.expr) -> ast.Name | None:
        """`np.linalg.norm`: a namespace name (`np_linalg_norm`) bound to the object now, when the chain
        starts at a module that is not a local; None for attributes of values."""
        chain: list[str] = []
        while isinstance(e, ast.Attribute):
            chain.insert(0, e.attr)
            e = e.value
        if not isinstance(e, ast.Name):
            return None
        root = self.renamed.get(e.id, e.id)
        if root in self.locals or root not in self.namespace:
            return None
        obj, taken = self.namespace[root], [root]
        for attr in chain:
            if not isinstance(obj, types.ModuleType):
                break
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                self.refuse(e, f"the attribute {'.'.join([*taken, attr])}, which does not exist")
            taken.append(attr)
        if len(taken) == 1:
            return None
        found = next(
            (k for k, v in self.namespace.items() if v is obj and k.startswith(taken[0] + "_")), None
        )
        key = found or self.names.fresh("_".join(taken))
        self.namespace[key] = obj
        result: ast.expr = ast.Name(key, ast.Load())
        for attr in chain[len(taken) - 1 :]:
            result = ast.Name(self.bind(ast.Attribute(result, attr, ast.Load())).id, ast.Load())
        return result

    def expr_Subscript(self, e: ast.Subscript, hint: str | None) -> ast.expr:
        value = self.name_atom(e.value)
        return ast.Subscript(value, self.index(e.slice), ast.Load())

    def index(self, s: ast.expr) -> ast.expr:
        """A subscript's index: an atom, a slice of atoms, or a tuple of those."""
        if isinstance(s, ast.Slice):
            parts = [None if p is None else self.atom(p) for p in (s.lower, s.upper, s.step)]
            return ast.Slice(*parts)
        if isinstance(s, ast.Tuple) and any(isinstance(elt, ast.Slice) for elt in s.elts):
            return ast.Tuple([self.index(elt) for elt in s.elts], ast.Load())
        if isinstance(s, ast.Tuple):
            return ast.Tuple([self.atom(elt) for elt in s.elts], ast.Load())
        return self.atom(s)

    def expr_Call(self, e: ast.Call, hint: str | None) -> ast.expr:
        func = self.callee(e)
        args: list[ast.expr] = []
        for a in e.args:
            args.append(
                ast.Starred(self.name_atom(a.value), ast.Load())
                if isinstance(a, ast.Starred)
                else self.atom(a)
            )
        keywords = [
            ast.keyword(k.arg, self.atom(k.value) if k.arg is not None else self.name_atom(k.value))
            for k in e.keywords
        ]
        extra = self.lifted.get(func.id, [])
        return ast.Call(func, args + [ast.Name(n, ast.Load()) for n in extra], keywords)

    def callee(self, e: ast.Call) -> ast.Name:
        """The called thing as a Name: a namespace name (static), a lifted function or a local (dynamic)."""
        f = e.func
        if isinstance(f, ast.Name):
            name = self.renamed.get(f.id, f.id)
            if name in self.lifted:
                return ast.Name(name, ast.Load())
            if name not in self.locals and any(self.namespace.get(name) is r for r in REFUSED_CALLEES):
                self.refuse(
                    e,
                    f"a call of {name}()",
                    "generated code runs f's operations only: no eval, I/O or frames",
                )
            return self.expr_Name(f, None)
        if isinstance(f, ast.Attribute):
            hoisted = self.hoisted(f)
            if hoisted is not None:
                return hoisted
            if f.attr in MUTATING_METHODS:
                self.refuse(
                    e, f"the method .{f.attr}(), which changes its value in place", "compute a new value"
                )
            if f.attr in APPEND_METHODS:
                self.refuse(e, f"the value of .{f.attr}() (None)", f"call .{f.attr}() as a statement")
            value = self.name_atom(f.value)
            method = self.bind(ast.Attribute(value, f.attr, ast.Load()), f"{value.id}_{f.attr}")
            self.method_of[method.id] = (value.id, f.attr)
            return method
        return self.name_atom(f, "function")

    # comprehensions, lambdas and f-strings are lowered by the statement lowerer (it owns loops)


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


_CONSTRUCTS = {
    "NamedExpr": ("an assignment expression (:=)", "assign on a line of its own"),
    "Await": ("await", "transform a plain function"),
    "Yield": ("yield (a generator)", "return a list or an array"),
    "YieldFrom": ("yield from (a generator)", "return a list or an array"),
    "Set": ("a set display", "use a list or a tuple"),
    "SetComp": ("a set comprehension", "use a list comprehension"),
    "Starred": ("a starred expression here", "unpack into named values"),
    "Slice": ("a slice outside a subscript", ""),
}


def _construct(e: ast.expr) -> str:
    return _CONSTRUCTS.get(type(e).__name__, (f"the expression {type(e).__name__}",))[0]


def _fix(e: ast.expr) -> str:
    entry = _CONSTRUCTS.get(type(e).__name__)
    return entry[1] if entry and len(entry) > 1 else ""


def copied(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A deep copy (the same statements again, e.g. a while loop's test at the end of its body)."""
    return copy.deepcopy(stmts)
