"""f's body in A-normal form: the one grammar the forward and reverse emitters read."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Any

from adcore_source.aliases import check_aliases, copy_written_params, walk_statements, written_in_place
from adcore_source.errors import refuse
from adcore_source.jumps import without_jumps
from adcore_source.lowering import located
from adcore_source.naming import Names
from adcore_source.parse import Parsed, local_names, parsed
from adcore_source.statements import StatementLowerer


@dataclass
class Normalized:
    """A function in A-normal form. Atoms A are `Name` | `Constant`; the body holds only:

    S1 `v = E` (one Name target), E one of: A; `Call(Name c, [A | Starred(Name)], [keyword(k, A) |
       keyword(None, Name)])`; `BinOp(A, op, A)`; `UnaryOp(op, A)`; `Compare(A, [op], [A])`;
       `Subscript(Name, I)`, I = A | Slice(A|None, A|None, A|None) | Tuple of those; `Attribute(Name, attr)`;
       `Tuple([A])`, `List([A])`, `Dict([A], [A])`.
    S2 `x[I] = A` (x a local no other name aliases; a parameter written so is first copied, `x = np_array(x)`).
    S3 `Expr(Call(Attribute(Name xs, 'append' | 'extend'), [A]))`.
    S4 `If(Name c, body, orelse)`.  S5 `For(Name i, Name s, body, [])`.
    S6 `While(Name c, body, [])`: the statements computing c come before the loop and again at the end of body.
    S7 `If(Name flag, [Break()], [])`, only as the last statement of a `for` body.
    S8 `Return(A)`, the last statement of the body, and only there (a function without return: `return None`).
    `Pass()` appears only as the sole statement of an otherwise empty loop body.

    Names: a Name is a local of the function (a parameter, an assignment or loop target, a temporary)
    or a key of `namespace` (never both). A called Name `c` is static when it is a `namespace` key
    (the object resolved now; module attribute chains are hoisted: `np.sin` -> `np_sin`,
    `np.linalg.norm` -> `np_linalg_norm`, bound to the object), a lifted function when it is a key of
    `lifted` (the call passes that function's extra trailing parameters), else a local (dynamic, resolved
    at run time). A method call `x.sum(axis=0)` is `sum_ = x.sum` (S1 Attribute) then the call of that local.
    Every statement's `lineno` is the line of f (in `filename`) it comes from; temporaries are named
    after what they hold (`sin_x`, `x_times_a`, deduplicated `_2`, `_3`).
    `lifted` holds every nested def / lambda of f and of its nested functions (one flat dict, names
    unique): each a Normalized whose `params` end with `extra_params`, the locals of the function
    defining it that it reads. `defaults` maps a parameter to its default value (the object).
    `copied_params` are the parameters written in place, copied first: a caller never sees the write
    (Python's f would: a caller passing a name it reads afterwards must refuse, as normalize does for
    calls of lifted functions).
    """

    name: str
    params: list[str]
    vararg: str | None
    kwonly: list[str]
    defaults: dict[str, Any]
    body: list[ast.stmt]
    namespace: dict[str, Any]
    filename: str
    first_line: int
    lifted: dict[str, Normalized] = field(default_factory=dict)
    extra_params: list[str] = field(default_factory=list)
    copied_params: list[str] = field(default_factory=list)

    def function_def(self) -> ast.FunctionDef:
        """The normalized function as a def (defaults left out: they are objects, in `defaults`)."""
        args = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(p) for p in self.params],
            vararg=ast.arg(self.vararg) if self.vararg else None,
            kwonlyargs=[ast.arg(k) for k in self.kwonly],
            kw_defaults=[None for _ in self.kwonly],
            kwarg=None,
            defaults=[],
        )
        return ast.FunctionDef(self.name, args, self.body, [], None, type_params=[], lineno=self.first_line)

    def source(self) -> str:
        """The lifted functions, then this one, as Python source (for reading and tests)."""
        defs = [n.function_def() for n in self.lifted.values()] + [self.function_def()]
        return "\n\n".join(ast.unparse(d) for d in defs)


def normalized(fn: Any) -> Normalized:
    """fn in A-normal form, or SourceTransformError naming the construct, fn and file:line it cannot take."""
    p = parsed(fn)
    signature = inspect.signature(fn)
    defaults = {
        name: param.default
        for name, param in signature.parameters.items()
        if param.default is not inspect.Parameter.empty
    }
    return _normalize(p, p.node, dict(p.namespace), defaults, [], {}, {})


def _normalize(
    origin: Parsed,
    node: ast.FunctionDef | ast.Lambda,
    namespace: dict[str, Any],
    defaults: dict[str, Any],
    extra: list[str],
    lifted: dict[str, Normalized],
    outer_extras: dict[str, list[str]],
    enclosing: str = "",
) -> Normalized:
    fn_name = node.name if isinstance(node, ast.FunctionDef) else "<lambda>"
    where = _Origin(f"{enclosing}.{fn_name}" if enclosing else fn_name, origin.filename, node.lineno)
    args = node.args
    if args.kwarg is not None:
        refuse(node, f"a **{args.kwarg.arg} parameter", "name the keyword parameters", where)
    body = node.body if isinstance(node, ast.FunctionDef) else [located(ast.Return(node.body), node.lineno)]
    nested = _nested_functions(body, where)
    own = local_names(node) | set(extra)
    names = Names(
        _names_outside_comprehensions(node)
        | set(namespace)
        | own
        | set(nested)
        | set(lifted)
        | set(outer_extras)
    )
    extras = _free_locals(nested, own)
    params = [a.arg for a in args.posonlyargs + args.args] + extra
    for name, fn_node in nested.items():
        if name in lifted or name in outer_extras:
            refuse(fn_node, f"two nested functions named {name!r}", "rename one", where)
    visible = {**outer_extras, **extras}
    for name, fn_node in nested.items():
        reads = {n.id for n in ast.walk(fn_node) if isinstance(n, ast.Name)}
        inner_namespace = {k: v for k, v in namespace.items() if k in reads}
        lifted[name] = _normalize(
            origin, fn_node, inner_namespace, {}, extras[name], lifted, visible, where.name
        )
    lowerer = StatementLowerer(where, own, namespace, names, visible)
    lowered = lowerer.statements(without_jumps(body, names, node.lineno))
    if not lowered or not isinstance(lowered[-1], ast.Return):
        lowered.append(
            located(ast.Return(ast.Constant(None)), lowered[-1].lineno if lowered else node.lineno)
        )
    _refuse_writes_into_enclosing_locals(lowered, extra, where)
    _refuse_lifted_calls_that_would_lose_a_write(lowered, lifted, lowerer.temporaries, where)
    copied = [p for p in params if p in written_in_place(lowered)]
    lowered = copy_written_params(lowered, params, lowerer, node.lineno)
    check_aliases(lowered, lowerer, where)
    return Normalized(
        name=fn_name,
        params=params,
        vararg=args.vararg.arg if args.vararg else None,
        kwonly=[a.arg for a in args.kwonlyargs],
        defaults=defaults,
        body=lowered,
        namespace=namespace,
        filename=origin.filename,
        first_line=node.lineno,
        lifted=lifted,
        extra_params=list(extra),
        copied_params=copied,
    )


def _refuse_writes_into_enclosing_locals(body: list[ast.stmt], extra: list[str], where: _Origin) -> None:
    """A nested function writing x[i] = v or xs.append(v) into a local of the function around it."""
    for s in walk_statements(body):
        owner = None
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript):
            owner = s.targets[0].value.id
        elif isinstance(s, ast.Expr):
            owner = s.value.func.value.id
        if owner in extra:
            what = f"the nested function {where.name!r} changing {owner!r} of the function around it in place"
            refuse(s, what, "return the new value from the nested function instead", where)


def _refuse_lifted_calls_that_would_lose_a_write(
    body: list[ast.stmt], lifted: dict[str, Normalized], temporaries: set[str], where: _Origin
) -> None:
    """g(x) where g writes into its parameter in place: g works on a copy, so f must not read x again."""
    for s in walk_statements(body):
        call = s.value if isinstance(s, ast.Assign) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in lifted):
            continue
        g = lifted[call.func.id]
        passed = list(zip(g.params, call.args, strict=False)) + [(k.arg, k.value) for k in call.keywords]
        for param, arg in passed:
            if param in g.copied_params and isinstance(arg, ast.Name) and arg.id not in temporaries:
                what = f"{g.name}({arg.id}), which writes into its parameter {param!r} in place"
                refuse(s, what, f"return the changed value from {g.name} and assign it", where)


@dataclass
class _Origin:
    name: str
    filename: str
    first_line: int


def _nested_functions(body: list[ast.stmt], where: _Origin) -> dict[str, ast.FunctionDef]:
    """The defs (and `name = lambda ...`) in the function's own scope, by name; assignments of lambdas
    are turned into defs in place."""
    found: dict[str, ast.FunctionDef] = {}

    def visit(stmts: list[ast.stmt]) -> None:
        for k, s in enumerate(stmts):
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Lambda) and len(s.targets) == 1:
                if isinstance(s.targets[0], ast.Name):
                    lam = s.value
                    s = stmts[k] = ast.FunctionDef(
                        s.targets[0].id, lam.args, [ast.Return(lam.body)], [], None
                    )
                    located(s, lam.lineno)
            if isinstance(s, ast.FunctionDef):
                if s.decorator_list:
                    refuse(s, f"a decorated nested function {s.name!r}", "define it at module level", where)
                if s.args.defaults or any(d is not None for d in s.args.kw_defaults):
                    refuse(s, f"default values of the nested function {s.name!r}", "pass the values", where)
                if s.name in found:
                    refuse(s, f"a second definition of the nested function {s.name!r}", "rename one", where)
                found[s.name] = s
                continue
            for attr in ("body", "orelse"):
                if isinstance(getattr(s, attr, None), list) and not isinstance(s, ast.ClassDef):
                    visit(getattr(s, attr))

    visit(body)
    return found


def _free_locals(nested: dict[str, ast.FunctionDef], own: set[str]) -> dict[str, list[str]]:
    """For each nested function: the enclosing function's locals it reads, its own calls' included."""
    reads = {
        name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - local_names(node)
        for name, node in nested.items()
    }
    free = {name: (r & own) - set(nested) for name, r in reads.items()}
    changed = True
    while changed:
        changed = False
        for name, r in reads.items():
            for callee in r & set(nested):
                if not free[callee] <= free[name]:
                    free[name] |= free[callee]
                    changed = True
    return {name: sorted(f) for name, f in free.items()}


def _names_outside_comprehensions(node: ast.AST) -> set[str]:
    """Every name f uses, except names used only as comprehension variables (those are renamed)."""
    comprehension_vars: set[str] = set()
    outside: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            for gen in n.generators:
                comprehension_vars.update(x.id for x in ast.walk(gen.target) if isinstance(x, ast.Name))
            visit(n.generators[0].iter)
            return
        if isinstance(n, ast.Name):
            outside.add(n.id)
        elif isinstance(n, ast.arg):
            outside.add(n.arg)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return outside | (used - comprehension_vars)
