"""An elementwise op's derivative stated once, as its partial derivatives, and the `jvp` and `vjp`
rules built from them (re-exported by `adcore.extend`).

A partial is one of: `None` (no derivative flows to that input), a number (a constant slope:
1 and -1 pass the tangent or cotangent through, negated for -1), a function
`(ans, *inputs, **params) -> d op / d input` written with adcore ops (so the rules nest for
higher orders), or `over(f)`: the partial 1 / f, which the rules apply by dividing (`g / f`), as
a formula like log's (`1 / x`) is written and rounded. The JVP of an op is the sum over its inputs
of `lift(t, ans) * partial`; the VJP of input i is `unbroadcast(g * partial, input_i)`. A unary
op's tangent is already shaped like its output, so its rules skip lift and unbroadcast.
The rules are compiled once, when a table is filled: a call costs the hand-written line's
cost plus one call of the partial.
Layer 3 (docs/architecture.md): it imports core and ops only.
"""

from __future__ import annotations

import inspect
from typing import Any

from adcore.extend.rules import lift, unbroadcast


class over:  # noqa: N801 (used in tables of partials, lower case as the partials are)
    """The partial 1 / f(ans, *inputs, **params): the rules divide by f."""

    __slots__ = ("f",)

    def __init__(self, f: Any) -> None:
        self.f = f


def jvp_rules(*partials: Any) -> tuple[Any, ...]:
    """One `jvp` rule per input, (t, ans, *inputs, **params) -> that input's share of the tangent."""
    return tuple(_rule("jvp", p, i, len(partials)) for i, p in enumerate(partials))


def vjp_rules(*partials: Any) -> tuple[Any, ...]:
    """One `vjp` rule per input, (g, ans, *inputs, **params) -> that input's cotangent."""
    return tuple(_rule("vjp", p, i, len(partials)) for i, p in enumerate(partials))


def _rule(kind: str, p: Any, i: int, nin: int) -> Any:
    """The rule as the line one would write by hand, compiled once: a call costs what that line
    costs plus one call of the partial (no *inputs packed for one or two inputs, no params
    forwarded to a partial that takes none)."""
    if p is None:
        return None
    d = p.f if isinstance(p, over) else p
    args = ("x", "x, y")[nin - 1] if nin <= 2 else "*inputs"
    v = "t" if kind == "jvp" else "g"
    if kind == "jvp" and nin > 1:
        v = "lift(t, ans)"  # the input's axes under the output's
    if callable(d):
        call = f"d(ans, {args}, **params)" if _takes_params(d, nin) else f"d(ans, {args})"
        expr = f"{v} {'/' if isinstance(p, over) else '*'} {call}"
    else:
        expr = v if d == 1 else f"-{v}" if d == -1 else f"{v} * d"
    if kind == "vjp" and nin > 1:
        expr = f"unbroadcast({expr}, {('x', 'y')[i] if nin == 2 else f'inputs[{i}]'})"
    first = "t" if kind == "jvp" else "g"
    return eval(
        f"lambda {first}, ans, {args}, **params: {expr}", {"lift": lift, "unbroadcast": unbroadcast, "d": d}
    )  # noqa: S307 (our own text)


def _takes_params(d: Any, nin: int) -> bool:
    """Whether the partial takes the op's params (keywords, or positions past its inputs)."""
    code = getattr(d, "__code__", None)
    if code is None:
        return True
    return (
        bool(code.co_flags & inspect.CO_VARKEYWORDS)
        or code.co_kwonlyargcount > 0
        or code.co_argcount > 1 + nin
    )
