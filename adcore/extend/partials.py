"""An elementwise op's derivative stated once, as its partial derivatives, and the `jvp` and `vjp`
rules built from them (re-exported by `adcore.extend`).

A partial is one of: `None` (no derivative flows to that input), a number (a constant slope:
1 and -1 pass the tangent or cotangent through, negated for -1), a function
`(ans, *inputs, **params) -> d op / d input` written with adcore ops (so the rules nest for
higher orders), or `over(f)`: the partial 1 / f, which the rules apply by dividing (`g / f`), as
a formula like log's (`1 / x`) is written and rounded. The JVP of an op is the sum over its inputs
of `lift(t, ans) * partial`; the VJP of input i is `unbroadcast(g * partial, input_i)`. A unary
op's tangent is already shaped like its output, so its rules skip lift and unbroadcast.
The rules are built once, when a table is filled: a call costs one call of the partial.
Layer 3 (docs/architecture.md): it imports core and ops only.
"""

from __future__ import annotations

from typing import Any

from adcore.extend.rules import lift, unbroadcast


class over:  # noqa: N801 (used in tables of partials, lower case as the partials are)
    """The partial 1 / f(ans, *inputs, **params): the rules divide by f."""

    __slots__ = ("f",)

    def __init__(self, f: Any) -> None:
        self.f = f


def jvp_rules(*partials: Any) -> tuple[Any, ...]:
    """One `jvp` rule per input, (t, ans, *inputs, **params) -> that input's share of the tangent."""
    return tuple(_jvp(p, len(partials)) for p in partials)


def vjp_rules(*partials: Any) -> tuple[Any, ...]:
    """One `vjp` rule per input, (g, ans, *inputs, **params) -> that input's cotangent."""
    return tuple(_vjp(p, i, len(partials)) for i, p in enumerate(partials))


def _jvp(p: Any, nin: int) -> Any:  # noqa: PLR0911 (one return per form of partial)
    if p is None:
        return None
    if nin == 1:
        if isinstance(p, over):
            f = p.f
            return lambda t, ans, x: t / f(ans, x)
        if callable(p):
            return lambda t, ans, x: t * p(ans, x)
        return _scaled(p)
    if isinstance(p, over):
        f = p.f
        return lambda t, ans, *inputs, **params: lift(t, ans) / f(ans, *inputs, **params)
    if callable(p):
        return lambda t, ans, *inputs, **params: lift(t, ans) * p(ans, *inputs, **params)
    if p == 1:
        return lambda t, ans, *inputs, **params: lift(t, ans)
    if p == -1:
        return lambda t, ans, *inputs, **params: -lift(t, ans)
    return lambda t, ans, *inputs, **params: lift(t, ans) * p


def _vjp(p: Any, i: int, nin: int) -> Any:  # noqa: PLR0911 (one return per form of partial)
    if p is None:
        return None
    if nin == 1:
        if isinstance(p, over):
            f = p.f
            return lambda g, ans, x: g / f(ans, x)
        if callable(p):
            return lambda g, ans, x: g * p(ans, x)
        return _scaled(p)
    if isinstance(p, over):
        f = p.f
        return lambda g, ans, *inputs, **params: unbroadcast(g / f(ans, *inputs, **params), inputs[i])
    if callable(p):
        return lambda g, ans, *inputs, **params: unbroadcast(g * p(ans, *inputs, **params), inputs[i])
    if p == 1:
        return lambda g, ans, *inputs, **params: unbroadcast(g, inputs[i])
    if p == -1:
        return lambda g, ans, *inputs, **params: unbroadcast(-g, inputs[i])
    return lambda g, ans, *inputs, **params: unbroadcast(g * p, inputs[i])


def _scaled(c: Any) -> Any:
    """A unary op's rule for the constant partial c (the same in both modes: v is t or g)."""
    if c == 1:
        return lambda v, ans, x: v
    if c == -1:
        return lambda v, ans, x: -v
    return lambda v, ans, x: v * c
