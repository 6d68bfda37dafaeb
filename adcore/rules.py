"""What rules of each kind receive, and the building blocks rule authors share (unbroadcast)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adcore.ops import reductions, shapes


@dataclass(frozen=True)
class RuleKind:
    """What a rule of one kind receives: `leading` arguments, then the op's inputs, then its
    params as keywords. A `per_input` kind has one rule per input (a tuple, None where no
    derivative flows); otherwise one callable computes the whole result."""

    leading: tuple[str, ...]
    per_input: bool


RULE_KINDS: dict[str, RuleKind] = {
    # cotangent of the output, the output -> the cotangent of this input
    "vjp": RuleKind(("g", "ans"), per_input=True),
    # tangent of this input, the output -> this input's share of the output's tangent
    "jvp": RuleKind(("t", "ans"), per_input=True),
    # sympy expressions for the inputs -> the output's expression
    "sympy": RuleKind((), per_input=False),
}


def unbroadcast(g: Any, target: Any) -> Any:
    """Sum `g` back to the shape of `target`, undoing NumPy broadcasting (seed 001, 张量广播规律)."""
    shape = getattr(target, "shape", ())
    g_shape = getattr(g, "shape", ())
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    if extra > 0:
        g = reductions.sum(g, axis=tuple(range(extra)))
    kept = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if kept:
        g = reductions.sum(g, axis=kept, keepdims=True)
    if g.shape != shape:
        g = shapes.reshape(g, shape=shape)
    return g
