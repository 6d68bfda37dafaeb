"""The forward emitter's calls and operators: a template (tier 1), call_jvp (tier 2: other ops,
dynamic callees, methods of values), or a user function's own generated jvp."""

from __future__ import annotations

import ast
import copy
import inspect
from typing import Any

from adcore_source import resolve, templates
from adcore_source.errors import refuse
from adcore_source.forward_state import State


def tangent_of_operation(em: Any, y: str, value: ast.expr, state: State) -> tuple[Any, bool]:
    """The tangent of `y = value` for a BinOp, UnaryOp or Call, and whether it is a fresh value: an
    expression (after the primal statement), a statement `y, dy = ...` computing both, or None (no
    tangent reaches y)."""
    if isinstance(value, ast.BinOp):
        callee = resolve.operator_callee(value.op, 2)
        return _operator(em, y, value, [value.left, value.right], callee, state)
    if isinstance(value, ast.UnaryOp):
        if isinstance(value.op, ast.UAdd):  # +x is x
            return em.tangent_of(value.operand, state), False
        return _operator(em, y, value, [value.operand], resolve.operator_callee(value.op, 1), state)
    return _call(em, y, value, state)


def _operator(em: Any, y: str, node: ast.expr, atoms: list[ast.expr], callee: Any, state: State):
    tangents = [em.tangent_of(a, state) for a in atoms]
    if all(t is None for t in tangents):
        return None, False
    if callee.kind == "template":
        return _template(em, y, callee.value, atoms, tangents)
    if callee.kind == "inactive":
        _refuse_active(em, node, callee)
        return None, False
    return _statement(em, y, _bound(em, callee.fn), atoms, tangents, []), False


def _call(em: Any, y: str, call: ast.Call, state: State) -> tuple[Any, bool]:
    c = call.func.id
    lifted = em.norm.lifted.get(c)
    if lifted is not None:
        return _user(em, y, _positionally(em, call, lifted.params), lifted, state)
    tangents = [em.tangent_of(a.value if isinstance(a, ast.Starred) else a, state) for a in call.args]
    keyword_tangents = [em.tangent_of(k.value, state) for k in call.keywords]
    receiver = em.methods.get(c)
    receiver_tangent = em.tangent_of(ast.Name(receiver[0], ast.Load()), state) if receiver else None
    callee_tangent = em.tangent_of(call.func, state) if c in em.locals and not receiver else None
    if callee_tangent is not None:  # a callee with a derivative (a Module): its leaves are inputs too
        args = [call.func, *call.args]
        return _statement(
            em,
            y,
            _runtime(em, "called"),
            args,
            [callee_tangent, *_starred(em, call, tangents)],
            call.keywords,
        ), False
    if all(t is None for t in [*tangents, *keyword_tangents, receiver_tangent]):
        return None, False
    if c not in em.locals and not _has_starred(call):
        user = resolve.callee_kind(em.norm.namespace[c])
        bound = _bound_call(em, user.value, call) if user.kind == "user" else None
        if bound is not None:
            return _user(em, y, bound, user.value, state)
    if any(t is not None for t in keyword_tangents):
        refuse(call, f"a value with a derivative passed to {c}() by keyword", "pass it positionally", em.norm)
    if c in em.locals:  # a dynamic callee, resolved at run time by call_jvp
        if receiver is not None:  # m = x.attr: x.attr(...) with x as the first argument
            return _method(em, y, call, receiver, receiver_tangent, tangents), False
        return _statement(em, y, call.func, call.args, _starred(em, call, tangents), call.keywords), False
    static = em.norm.namespace[c]
    if _has_starred(call):
        callee = resolve.callee_kind(static)
    else:
        callee = resolve.callee_kind(static, len(call.args), [k.arg for k in call.keywords])
    if callee.kind == "template" and not call.keywords and not _has_starred(call):
        return _template(em, y, callee.value, call.args, tangents)
    if callee.kind == "user" and _binds_positionally(callee.value, call):
        return _user(em, y, call, callee.value, state)
    if callee.kind == "inactive":
        _refuse_active(em, call, callee)
        return None, False
    fn = (
        call.func
        if callee.kind == "user" or callee.fn is None or callee.fn is static
        else _bound(em, callee.fn)
    )
    return _statement(em, y, fn, call.args, _starred(em, call, tangents), call.keywords), False


def _user(em: Any, y: str, call: ast.Call, target: Any, state: State) -> tuple[Any, bool]:
    """`y, dy = g_jvp(args, tangents of the active ones)`: g's own generated jvp (a lifted function
    always: it exists only there; `y = g_jvp(args)[0]` when no tangent flows)."""
    tangents = [em.tangent_of(a, state) for a in call.args]
    active = tuple(i for i, t in enumerate(tangents) if t is not None)
    jvp = ast.Name(em.ctx.transformed(target, "forward", active), ast.Load())
    value = ast.Call(jvp, [copy.deepcopy(a) for a in call.args] + [t for t in tangents if t is not None], [])
    if not active:
        return ast.Assign(
            [ast.Name(y, ast.Store())], ast.Subscript(value, ast.Constant(0), ast.Load())
        ), False
    return _pair(y, em.d(y), value), False


def _template(em: Any, y: str, op: str, atoms: list[ast.expr], tangents: list[ast.expr | None]):
    found = templates.jvp_expression(
        op,
        tangents=[None if t is None else ast.unparse(t) for t in tangents],
        ans=y,
        inputs=[ast.unparse(a) for a in atoms],
        taken=em.taken,
    )
    if found is None:
        return None, False
    text, names = found
    expr = ast.parse(text, mode="eval").body
    renamed = {name: em.ctx.bind(name, obj) for name, obj in names.items()}
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in renamed:
            node.id = renamed[node.id]
    return expr, isinstance(expr, (ast.BinOp, ast.UnaryOp))  # arithmetic makes a fresh value


def _method(
    em: Any, y: str, call: ast.Call, receiver: tuple[str, str], receiver_tangent: Any, tangents: list
):
    """`y = m(a)` with `m = x.attr`: `y, dy = call_jvp(method(attr), (x, a), (dx, da), kwargs)`."""
    x, attr = receiver
    method = ast.Call(ast.Name(em.ctx.runtime("method"), ast.Load()), [ast.Constant(attr)], [])
    args = [ast.Name(x, ast.Load()), *call.args]
    return _statement(em, y, method, args, [receiver_tangent, *_starred(em, call, tangents)], call.keywords)


def _bound(em: Any, fn: Any) -> ast.Name:
    """A name for `fn` in the generated module (a stand-in, an operator's function)."""
    name = getattr(fn, "__name__", None) or "callee"
    return ast.Name(em.ctx.bind(name if name.isidentifier() else "callee", fn), ast.Load())


def _refuse_active(em: Any, node: ast.AST, callee: Any) -> None:
    if not callee.takes_active:
        refuse(node, f"a value with a derivative given to {callee.why or callee.value}", "", em.norm)


def _starred(em: Any, call: ast.Call, tangents: list[ast.expr | None]) -> list[ast.expr | None]:
    """The tangents lined up with call.args: a starred argument's tangents starred, or as many
    Nones as it has items."""
    out: list[ast.expr | None] = []
    for a, t in zip(call.args, tangents):
        if not isinstance(a, ast.Starred):
            out.append(t)
        elif t is not None:
            out.append(ast.Starred(t, ast.Load()))
        else:
            count = ast.Call(ast.Name("len", ast.Load()), [copy.deepcopy(a.value)], [])
            nones = ast.BinOp(ast.List([ast.Constant(None)], ast.Load()), ast.Mult(), count)
            out.append(ast.Starred(nones, ast.Load()))
    return out


def _statement(em: Any, y: str, func: ast.expr, args: list, tangents: list, keywords: list) -> ast.stmt:
    """`y, dy = call_jvp(func, (args), (tangents), {keywords})`."""
    kwargs = ast.Dict(
        [None if k.arg is None else ast.Constant(k.arg) for k in keywords],
        [copy.deepcopy(k.value) for k in keywords],
    )
    call = ast.Call(
        ast.Name(em.ctx.runtime("call_jvp"), ast.Load()),
        [
            copy.deepcopy(func),
            ast.Tuple([copy.deepcopy(a) for a in args], ast.Load()),
            ast.Tuple([ast.Constant(None) if t is None else t for t in tangents], ast.Load()),
            kwargs,
        ],
        [],
    )
    return _pair(y, em.d(y), call)


def _pair(y: str, dy: str, value: ast.expr) -> ast.stmt:
    target = ast.Tuple([ast.Name(y, ast.Store()), ast.Name(dy, ast.Store())], ast.Store())
    return ast.Assign([target], value)


def _has_starred(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args)


def _positionally(em: Any, call: ast.Call, params: list[str]) -> ast.Call:
    """A call of a lifted function with its keyword arguments put in their parameters' places."""
    if not call.keywords and not _has_starred(call) and len(call.args) == len(params):
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
    if any(a is None or isinstance(a, ast.Starred) for a in args):
        refuse(call, f"the call of {call.func.id}() with defaults or *args", "pass every argument", em.norm)
    return ast.Call(call.func, args, [])


def _bound_call(em: Any, fn: Any, call: ast.Call) -> ast.Call | None:
    """The call of user function fn with every parameter given positionally: keywords put in their
    places, defaults bound in the module; None if fn takes *args, keyword-only or **kwargs."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not all(p.kind in plain for p in params) or len(call.args) > len(params):
        return None
    names = [p.name for p in params]
    args: list[Any] = list(call.args) + [None] * (len(params) - len(call.args))
    for k in call.keywords:
        if k.arg is None or k.arg not in names or args[names.index(k.arg)] is not None:
            return None
        args[names.index(k.arg)] = k.value
    for i, p in enumerate(params):
        if args[i] is None:
            if p.default is inspect.Parameter.empty:
                return None
            args[i] = ast.Name(em.ctx.bind(f"{p.name}_default", p.default), ast.Load())
    return ast.Call(call.func, args, [])


def _binds_positionally(fn: Any, call: ast.Call) -> bool:
    """The call gives each of fn's parameters positionally (the generated jvp takes them so)."""
    if call.keywords or _has_starred(call):
        return False
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return all(p.kind in plain for p in params) and len(params) == len(call.args)


def _runtime(em: Any, name: str) -> ast.Name:
    return ast.Name(em.ctx.runtime(name), ast.Load())
