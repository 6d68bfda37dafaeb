"""What rules of each kind receive, and the building blocks rule authors share (unbroadcast)."""

from __future__ import annotations

from typing import Any

from adcore.ops import reductions, shapes

# kind -> the names of the arguments a rule of that kind receives before the op's inputs.
# Every kind's rules then receive the op's static params as keyword arguments.
RULE_KINDS: dict[str, tuple[str, ...]] = {
    "vjp": ("g", "ans"),  # cotangent of the output, the output; returns this input's cotangent
    "jvp": ("t", "ans"),  # tangent of this input, the output; returns the output's tangent
    "sympy": (),  # sympy expressions for the inputs; returns the output expression
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
