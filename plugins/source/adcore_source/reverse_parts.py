"""The reverse emitter's rule per assignment `y = E` of f's A-normal form: what the forward sweep
runs (f's statement itself, or `y, y_pullback = call_vjp(...)`, or `y, y_saved = g_fwd(...)`) and
what flows back from y's adjoint to the names E reads (a template's expression, a pullback's
cotangent, a user function's adjoint sweep, an adjoint added into x's at x[i]).

Expressions here read y's adjoint as the name G and y's value as ANS; the emitter substitutes the
adjoint variable, and y or a copy of it made before y is popped back.
"""

from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass, field
from typing import Any

from adcore_source import resolve, runtime, templates
from adcore_source.errors import refuse

G, ANS = "g__", "ans__"  # placeholders: y's adjoint, y's value
LINEAR_ATTRIBUTES = {"T": "T", "mT": "mT"}  # the adjoint of x.T is the adjoint's .T
INACTIVE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides"})
VALUE_ATTRIBUTES = frozenset({"real", "imag", "flat"})  # values, through the tape (call_vjp)


@dataclass
class Contribution:
    """What `to`'s adjoint receives: `expr` (reads G), which may be None at run time (`maybe_none`),
    is a new value no other name holds (`fresh`), may carry structural zeros (`masked`), is an
    array or a number (`numeric`: added with +)."""

    to: str
    expr: ast.expr
    maybe_none: bool = False
    fresh: bool = False
    masked: bool = False
    numeric: bool = False  # an array or number (an elementwise op's cotangent), never a container


@dataclass
class Parts:
    fwd: list[ast.stmt]
    defines: set[str]
    contribs: list[Contribution] = field(default_factory=list)
    prelude: list[ast.stmt] = field(default_factory=list)  # adjoint statements before the contributions
    at: tuple[str, ast.expr] | None = None  # y = x[index]: (x, index), added into x's adjoint in place


def assignment_parts(em: Any, stmt: ast.Assign, seed_masked: bool) -> Parts:
    """The parts of `y = E` for an active y (E reads an active name)."""
    y, value = stmt.targets[0].id, stmt.value
    plain = Parts([copy.deepcopy(stmt)], {y})
    if isinstance(value, ast.Name):
        if em.is_active(value.id):
            plain.contribs.append(Contribution(value.id, _g(), masked=seed_masked))
        return plain
    if isinstance(value, (ast.Constant, ast.Compare)):
        return plain
    if isinstance(value, ast.Subscript):
        if em.is_active(value.value.id):
            plain.at = (value.value.id, _index(value.slice))
        return plain
    if isinstance(value, ast.Attribute):
        return _attribute(em, y, value, plain, seed_masked)
    if isinstance(value, (ast.Tuple, ast.List, ast.Dict)):
        return _display(em, value, plain, seed_masked)
    if isinstance(value, (ast.BinOp, ast.UnaryOp)):
        operand = [value.left, value.right] if isinstance(value, ast.BinOp) else [value.operand]
        if isinstance(value.op, ast.UAdd):
            if em.is_active(value.operand.id if isinstance(value.operand, ast.Name) else ""):
                plain.contribs.append(Contribution(value.operand.id, _g(), masked=seed_masked))
            return plain
        if isinstance(value.op, ast.Add) and any(
            isinstance(a, ast.Name) and a.id in em.sequences for a in operand
        ):
            return _concatenation(em, value, plain, seed_masked)
        callee = resolve.operator_callee(value.op, len(operand))
        return _operation(em, y, stmt, callee, operand, plain, seed_masked)
    if isinstance(value, ast.Call):
        return _call(em, y, stmt, value, plain, seed_masked)
    refuse(
        stmt,
        f"the expression {type(value).__name__}",
        "the reverse emitter takes f's A-normal form only",
        em.norm,
    )
    raise AssertionError("refuse raises")  # pragma: no cover


def _attribute(em: Any, y: str, value: ast.Attribute, plain: Parts, seed_masked: bool) -> Parts:
    x, attr = value.value.id, value.attr
    if attr in INACTIVE_ATTRIBUTES or not em.is_active(x):
        return plain
    if attr in LINEAR_ATTRIBUTES:
        g = ast.Call(ast.Name(em.ctx.runtime("plain"), ast.Load()), [_g()], []) if seed_masked else _g()
        plain.contribs.append(Contribution(x, ast.Attribute(g, attr, ast.Load())))  # (its zeros dropped)
        return plain
    if y in em.methods:
        return plain  # a method: its call goes through call_vjp with x first (em.methods)
    # a value (x.real, a named tuple's field): read through the tape
    getter = ast.Name(em.ctx.bind(f"attribute_{attr}", _attribute_getter(attr)), ast.Load())
    return _tier_two(em, y, getter, [ast.Name(x, ast.Load())], [], plain, masked=False)


def _concatenation(em: Any, value: ast.BinOp, plain: Parts, seed_masked: bool) -> Parts:
    """`y = a + b` of lists or tuples: a's adjoint is the first len(a) entries of y's, b's the rest."""
    left, right = value.left, value.right
    cut = ast.Call(ast.Name("len", ast.Load()), [copy.deepcopy(left)], [])
    for atom, part in ((left, ast.Slice(None, cut)), (right, ast.Slice(copy.deepcopy(cut), None))):
        if isinstance(atom, ast.Name) and em.is_active(atom.id):
            entries = ast.Subscript(_g(), part, ast.Load())
            plain.contribs.append(Contribution(atom.id, entries, masked=seed_masked))
    return plain


def _display(em: Any, value: ast.Tuple | ast.List | ast.Dict, plain: Parts, seed_masked: bool) -> Parts:
    if isinstance(value, ast.Dict):
        pairs = list(zip(value.keys, value.values))
    else:
        pairs = [(ast.Constant(k), a) for k, a in enumerate(value.elts)]
    for key, atom in pairs:
        if key is None:
            refuse(value, "a dict display with **", "build the dict entry by entry", em.norm)
        if isinstance(atom, ast.Name) and em.is_active(atom.id):
            entry = ast.Subscript(_g(), copy.deepcopy(key), ast.Load())
            plain.contribs.append(Contribution(atom.id, entry, maybe_none=True, masked=seed_masked))
    return plain


def _operation(em, y, stmt, callee, atoms, plain: Parts, seed_masked: bool) -> Parts:
    active = [isinstance(a, ast.Name) and em.is_active(a.id) for a in atoms]
    if callee.kind == "inactive":
        if any(active) and not callee.takes_active:
            refuse(stmt, f"a value with a derivative given to {callee.why or callee.value}", "", em.norm)
        return plain
    if callee.kind == "template":
        inputs = [ast.unparse(a) for a in atoms]
        for i, atom in enumerate(atoms):
            if not active[i]:
                continue
            found = templates.vjp_expression(
                callee.value, i, g=G, ans=ANS, inputs=inputs, taken=em.taken, masked=seed_masked
            )
            if found is None:
                continue
            text, names = found
            expr = _renamed(
                ast.parse(text, mode="eval").body, {n: em.ctx.bind(n, o) for n, o in names.items()}
            )
            fresh = isinstance(expr, (ast.BinOp, ast.UnaryOp))
            plain.contribs.append(Contribution(atom.id, expr, fresh=fresh, masked=seed_masked, numeric=True))
        return plain
    fn = ast.Name(em.ctx.bind(_callee_name(callee.fn), callee.fn), ast.Load())
    return _tier_two(em, y, fn, atoms, [], plain, masked=callee.masks or seed_masked)


def _call(em: Any, y: str, stmt: ast.Assign, call: ast.Call, plain: Parts, seed_masked: bool) -> Parts:
    c = call.func.id
    if c in em.methods:  # m = x.attr; y = m(...): x.attr(...) through the tape, x first
        x, attr = em.methods[c]
        fn = ast.Call(ast.Name(em.ctx.runtime("method"), ast.Load()), [ast.Constant(attr)], [])
        masks = attr in resolve.MASKING_OPS or seed_masked
        return _tier_two(em, y, fn, [ast.Name(x, ast.Load()), *call.args], call.keywords, plain, masked=masks)
    if c in getattr(em.norm, "lifted", {}):
        lifted = em.norm.lifted[c]
        return _user(em, y, _positionally(em, call, lifted.params), lifted, plain)
    if c in em.locals and em.is_active(c):  # a callee with a derivative (a Module): its leaves are inputs too
        called = ast.Name(em.ctx.runtime("called"), ast.Load())
        return _tier_two(em, y, called, [call.func, *call.args], call.keywords, plain, masked=seed_masked)
    if c in em.locals:  # a dynamic callee: resolved at run time
        return _tier_two(em, y, call.func, call.args, call.keywords, plain, masked=seed_masked)
    obj = em.norm.namespace[c]
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    if starred:
        callee = resolve.callee_kind(obj)
    else:
        callee = resolve.callee_kind(obj, len(call.args), [k.arg for k in call.keywords])
    if callee.kind == "user" and _positional(call) and _takes_positionally(callee.value, len(call.args)):
        return _user(em, y, call, callee.value, plain)
    if callee.kind == "template" and not call.keywords and not starred:
        return _operation(em, y, stmt, callee, call.args, plain, seed_masked)
    if callee.kind == "inactive":
        return _operation(em, y, stmt, callee, [*call.args, *(k.value for k in call.keywords)], plain, False)
    fn = (
        call.func
        if callee.fn is None or callee.fn is obj
        else ast.Name(em.ctx.bind(_callee_name(callee.fn), callee.fn), ast.Load())
    )
    return _tier_two(em, y, fn, call.args, call.keywords, plain, masked=callee.masks or seed_masked)


def _tier_two(em, y, fn: ast.expr, args: list, keywords: list, plain: Parts, masked: bool) -> Parts:
    """`y, y_pullback = call_vjp(fn, (args), {kwargs})`; the pullback's cotangent k to argument k."""
    pullback = em.temp(f"{y}_pullback")
    kwargs = ast.Dict(
        [None if k.arg is None else ast.Constant(k.arg) for k in keywords],
        [copy.deepcopy(k.value) for k in keywords],
    )
    atoms = [a.value if isinstance(a, ast.Starred) else a for a in args] + [k.value for k in keywords]
    wanted = [(k, a.id) for k, a in enumerate(atoms) if isinstance(a, ast.Name) and em.is_active(a.id)]
    call_args = [copy.deepcopy(fn), ast.Tuple([_kept(em, a) for a in args], ast.Load()), kwargs]
    if len(wanted) < len(atoms) and not any(isinstance(a, ast.Starred) for a in args):
        # the others are constants to the tape (a Python float among them must not become a float64 input)
        flags = [ast.Constant(any(k == j for j, _ in wanted)) for k in range(len(atoms))]
        call_args.append(ast.Tuple(flags, ast.Load()))
    value = ast.Call(ast.Name(em.ctx.runtime("call_vjp"), ast.Load()), call_args, [])
    fwd = _pair(y, pullback, value)
    parts = Parts([fwd], {y, pullback})
    if any(isinstance(a, ast.Starred) and em.is_active(a.value.id) for a in args):
        refuse(plain.fwd[0], "a starred active argument of an op", "pass the values one by one", em.norm)
    _cotangents(em, y, parts, ast.Call(ast.Name(pullback, ast.Load()), [_g()], []), wanted, masked)
    return parts


def _kept(em: Any, arg: ast.expr) -> ast.expr:
    """An argument of a tier-2 call, copied if f writes into it later: the pullback keeps what it
    was given, and must see the values the call saw."""
    if isinstance(arg, ast.Name) and arg.id in em.written:
        from adcore_source.reverse_runtime import snapshot

        return ast.Call(ast.Name(em.ctx.bind("snapshot", snapshot), ast.Load()), [copy.deepcopy(arg)], [])
    return copy.deepcopy(arg)


def _user(em: Any, y: str, call: ast.Call, target: Any, plain: Parts) -> Parts:
    """`y, y_saved = g_fwd(args)`; `g_bwd(y_saved, by)` gives the active arguments' adjoints."""
    wanted = [(k, a.id) for k, a in enumerate(call.args) if isinstance(a, ast.Name) and em.is_active(a.id)]
    if not wanted:
        return plain
    g_fwd, g_bwd = em.ctx.transformed(target, "reverse", tuple(k for k, _ in wanted))
    saved = em.temp(f"{y}_saved")
    fwd = _pair(y, saved, ast.Call(ast.Name(g_fwd, ast.Load()), [copy.deepcopy(a) for a in call.args], []))
    parts = Parts([fwd], {y, saved})
    adjoints = ast.Call(ast.Name(g_bwd, ast.Load()), [ast.Name(saved, ast.Load()), _g()], [])
    _cotangents(em, y, parts, adjoints, [(j, name) for j, (_, name) in enumerate(wanted)], False)
    return parts


def _cotangents(em, y: str, parts: Parts, tuple_expr: ast.expr, wanted: list, masked: bool) -> None:
    """The contributions of a tuple of cotangents: entry k to the name it belongs to."""
    if len(wanted) > 1:
        held = em.temp(f"{y}_cotangents")
        parts.prelude.append(ast.Assign([ast.Name(held, ast.Store())], tuple_expr))
        tuple_expr = ast.Name(held, ast.Load())
    for k, name in wanted:
        entry = ast.Subscript(copy.deepcopy(tuple_expr), ast.Constant(k), ast.Load())
        # an active argument's cotangent is never None (the tape gives zeros where nothing reached)
        parts.contribs.append(Contribution(name, entry, masked=masked))


def _attribute_getter(attr: str) -> Any:
    return _GETTERS.setdefault(attr, _getter(attr))


def _getter(attr: str) -> Any:
    def get(x: Any) -> Any:
        return getattr(x, attr)

    get.__name__ = get.__qualname__ = f"attribute_{attr}"
    return get


_GETTERS: dict[str, Any] = {}


def _callee_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None) or getattr(fn, "name", None) or "callee"
    return name if isinstance(name, str) and name.isidentifier() else "callee"


def _positionally(em: Any, call: ast.Call, params: list[str]) -> ast.Call:
    """A call of a lifted function with its keyword arguments put in their parameters' places."""
    if not call.keywords:
        return call
    args: list[Any] = list(call.args) + [None] * (len(params) - len(call.args))
    for k in call.keywords:
        if k.arg is None or k.arg not in params or args[params.index(k.arg)] is not None:
            refuse(
                call,
                f"the call of {call.func.id}() with these keywords",
                "pass its arguments positionally",
                em.norm,
            )
        args[params.index(k.arg)] = k.value
    if any(a is None for a in args) or any(isinstance(a, ast.Starred) for a in args):
        refuse(call, f"the call of {call.func.id}() with defaults or *args", "pass every argument", em.norm)
    return ast.Call(call.func, args, [])


def _positional(call: ast.Call) -> bool:
    return not call.keywords and not any(isinstance(a, ast.Starred) for a in call.args)


def _takes_positionally(fn: Any, n: int) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return all(p.kind in plain for p in params) and len(params) == n


def _g() -> ast.Name:
    return ast.Name(G, ast.Load())


def _index(node: ast.expr) -> ast.expr:
    """A subscript's index as an expression (slices as slice(...) calls)."""
    if isinstance(node, ast.Slice):
        parts = [node.lower, node.upper, node.step]
        return ast.Call(ast.Name("slice", ast.Load()), [p or ast.Constant(None) for p in parts], [])
    if isinstance(node, ast.Tuple):
        return ast.Tuple([_index(e) for e in node.elts], ast.Load())
    return copy.deepcopy(node)


def _pair(a: str, b: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Tuple([ast.Name(a, ast.Store()), ast.Name(b, ast.Store())], ast.Store())], value)


def _renamed(expr: ast.expr, names: dict[str, str]) -> ast.expr:
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return expr


__all__ = ["ANS", "G", "Contribution", "Parts", "assignment_parts", "runtime"]
