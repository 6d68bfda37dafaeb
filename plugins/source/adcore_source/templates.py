"""Tier-1 derivatives as expression text, read from adcore.extend.elementwise_partials.PARTIALS
(the one statement of each elementwise op's partials, which the reverse and forward rules are
built from): `vjp_expression("sin", 0, "by", "y", ["x"])` is `("by * cos(x)", {"cos": <op cos>})`.

A partial's lambda is inlined by substituting the call's names for its parameters in its syntax
tree, so the text is the rule's own line (`g * d(ans, x)`, `g / f(ans, x)`, summed back over
broadcast axes for an op of two inputs) with the names of f: it computes what the registered rule
computes, operation for operation. The functions and constants the partials use (cos, sqrt,
power_by_base, LN2, ...) are returned by name, to be bound in the generated module, renamed
where a name is taken by something else (`cos_`).
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore.extend.elementwise_partials as elementwise_partials
from adcore.extend.partials import over
from adcore.spec import OpSpec
from adcore_source.runtime import broadcast_like, keep_zeros, plain, unbroadcast

PARTIALS = elementwise_partials.PARTIALS


@dataclass(frozen=True)
class _Partial:
    """One partial: `times` (d op / d input = body), `over` (1 / body) or a constant slope."""

    form: str  # "times" | "over" | "constant"
    constant: Any = None
    params: tuple[str, ...] = ()  # the lambda's parameters: ans, then the inputs
    body: ast.expr | None = None


@functools.cache
def _partial_nodes() -> dict[str, tuple[ast.expr, ...]]:
    """PARTIALS' entries as written in elementwise_partials.py: op -> the syntax of each partial."""
    tree = ast.parse(inspect.getsource(elementwise_partials))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "PARTIALS" and isinstance(node.value, ast.Dict):
            return {
                key.value: tuple(value.elts)
                for key, value in zip(node.value.keys, node.value.values)
                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple)
            }
    return {}


@functools.cache
def _partial(op: str, i: int) -> _Partial | None:
    """Input i's partial of op, or None where no derivative flows; KeyError if it cannot be read."""
    value = PARTIALS[op][i]
    if value is None:
        return None
    if not callable(value) and not isinstance(value, over):
        return _Partial("constant", constant=value)
    node = _partial_nodes()[op][i]
    form = "times"
    if isinstance(value, over):
        value, form = value.f, "over"
        node = node.args[0] if isinstance(node, ast.Call) and node.args else node
    if not isinstance(node, ast.Lambda) or getattr(value, "__code__", None) is None:
        raise KeyError(op)
    if node.lineno != value.__code__.co_firstlineno:  # the source changed since import
        raise KeyError(op)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or len(args.args) != 1 + len(PARTIALS[op]):
        raise KeyError(op)  # a partial taking params: not inlined
    return _Partial(form, params=tuple(a.arg for a in args.args), body=node.body)


def template_op(op: str) -> bool:
    """Whether op is tier 1: its partials are in PARTIALS, at least one flows, all can be inlined."""
    partials = PARTIALS.get(op)
    if partials is None or all(p is None for p in partials):
        return False
    try:
        for i in range(len(partials)):
            _partial(op, i)
    except KeyError:
        return False
    return True


def vjp_expression(
    op: str,
    i: int,
    g: str = "by",
    ans: str = "y",
    inputs: Sequence[str] = ("x",),
    taken: Mapping[str, Any] | Collection[str] = (),
    masked: bool = False,
) -> tuple[str, dict[str, Any]] | None:
    """The cotangent of input i of `op` as expression text, and the names it needs bound; None where
    no derivative flows. `g`, `ans` and `inputs` are expression texts (names or constants). With
    `masked`, g may be a runtime.Masked cotangent: the text keeps its structural zeros
    (`keep_zeros(by, plain(by) * cos(x))`)."""
    p = _partial(op, i)
    if p is None:
        return None
    names = _Names(taken)
    g_node = _expr(g)
    if masked:
        g_node = ast.Call(ast.Name(names.bind("plain", plain)), [g_node], [])
    expr = _applied(p, g_node, _expr(ans), [_expr(x) for x in inputs], names)
    if len(PARTIALS[op]) > 1:
        expr = ast.Call(ast.Name(names.bind("unbroadcast", unbroadcast)), [expr, _expr(inputs[i])], [])
    if masked:
        expr = ast.Call(ast.Name(names.bind("keep_zeros", keep_zeros)), [_expr(g), expr], [])
    return ast.unparse(expr), names.bound


def jvp_expression(
    op: str,
    tangents: Sequence[str | None],
    ans: str = "y",
    inputs: Sequence[str] = ("x",),
    taken: Mapping[str, Any] | Collection[str] = (),
) -> tuple[str, dict[str, Any]] | None:
    """The tangent of `op`'s output as expression text (the sum of each input's share, in input
    order), and the names it needs bound; None if no tangent flows (every tangent None or its
    partial None). `tangents[i]` is input i's tangent text, None for a zero tangent."""
    names = _Names(taken)
    ans_node, input_nodes = _expr(ans), [_expr(x) for x in inputs]
    total: ast.expr | None = None
    constant_only = True
    for i, t in enumerate(tangents):
        p = None if t is None else _partial(op, i)
        if p is None:
            continue
        constant_only = constant_only and p.form == "constant"
        share = _applied(p, _expr(t), ans_node, input_nodes, names)
        if total is None:
            total = share
        elif isinstance(share, ast.UnaryOp) and isinstance(share.op, ast.USub):
            total = ast.BinOp(total, ast.Sub(), share.operand)  # a + (-b) is a - b, to the bit
        else:
            total = ast.BinOp(total, ast.Add(), share)
    if total is None:
        return None
    if len(tangents) > 1 and constant_only and not all(t is not None for t in tangents):
        # dx alone of add(x, a) has x's shape, which may broadcast to the output's
        total = ast.Call(ast.Name(names.bind("broadcast_like", broadcast_like)), [total, ans_node], [])
    return ast.unparse(total), names.bound


def _applied(p: _Partial, v: ast.expr, ans: ast.expr, inputs: list[ast.expr], names: _Names) -> ast.expr:
    """v (a tangent or cotangent) times the partial p: the rule's `v * d(...)`, `v / f(...)`, `v`, `-v`."""
    if p.form == "constant":
        c = p.constant
        if c == 1:
            return v
        if c == -1:
            return ast.UnaryOp(ast.USub(), v)
        factor = ast.Constant(c) if type(c) in (int, float) else ast.Name(names.bind("slope", c))
        return ast.BinOp(v, ast.Mult(), factor)
    body = _Inline(dict(zip(p.params, [ans, *inputs])), names).visit(copy.deepcopy(p.body))
    return ast.BinOp(v, ast.Div() if p.form == "over" else ast.Mult(), body)


def _expr(text: str) -> ast.expr:
    return ast.parse(str(text).strip(), mode="eval").body


class _Names:
    """The names the text binds (name -> object), none clashing with `taken` (f's names, or a map
    of names already bound, which may be shared when they hold the same object)."""

    def __init__(self, taken: Mapping[str, Any] | Collection[str]) -> None:
        self.taken = taken
        self.bound: dict[str, Any] = {}

    def bind(self, name: str, obj: Any) -> str:
        candidate, n = name, 1
        while not self._free(candidate, obj):
            n += 1
            candidate = f"{name}_" if n == 2 else f"{name}_{n - 1}"
        self.bound[candidate] = obj
        return candidate

    def _free(self, name: str, obj: Any) -> bool:
        if name in self.bound:
            return self.bound[name] is obj
        if name in self.taken:
            return isinstance(self.taken, Mapping) and self.taken[name] is obj
        return True


class _Inline(ast.NodeTransformer):
    """A partial's body with its parameters replaced by the call's expressions and its globals
    (`cos`, `er.exp_share`, `er.LN2`) by names bound to the objects."""

    def __init__(self, arguments: dict[str, ast.expr], names: _Names) -> None:
        self.arguments = arguments
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.arguments:
            return copy.deepcopy(self.arguments[node.id])
        return ast.Name(self.names.bind(node.id, _global(node.id)))

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        path = _dotted(node)
        if path is None or path[0] in self.arguments:
            return self.generic_visit(node)  # x.real: an attribute of an input
        obj = _global(path[0])
        for attr in path[1:]:
            obj = getattr(obj, attr)
        return ast.Name(self.names.bind(path[-1], obj))


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else [*head, node.attr]
    return None


def _global(name: str) -> Any:
    """A name the partials read, as the generated code binds it: an op that is a NumPy ufunc as the
    ufunc (the same value, a third of the cost of a call through bind; a traced value still reaches
    the op through NumPy's dispatch)."""
    namespace = vars(elementwise_partials)
    obj = namespace[name] if name in namespace else getattr(builtins, name)
    if isinstance(obj, OpSpec) and isinstance(obj.impl, np.ufunc) and obj.impl in obj.numpy:
        return obj.impl
    return obj
