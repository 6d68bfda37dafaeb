"""JVP rules of the core ops: the "jvp" rule table the forward backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(t, ans, *inputs, **params) -> that input's share of the output's tangent

`t` is the input's tangent with a leading batch axis, shape (B,) + input.shape: B
tangent directions at once (a Jacobian is one pass with B = n, seed 001's dual
numbers with B = 1). `ans` is the output and `inputs` the op's inputs, all without
the batch axis; `params` are the op's static params as passed. The share has shape
(B,) + ans.shape, or broadcasts to it. So a rule for an input as shaped as the
output reads like the math (`t * cos(x)`); broadcasting ops `lift` the tangent to
put its axes under the output's, and axis params move past the batch axis with
`batched_axis`. The shares of all inputs are summed. `None` means the input sends
no tangent (zero-derivative ops, conditions). Variadic ops (einsum, multi_dot)
have one rule taking the input's position first; concatenate and stack one Joint rule
(tangents, ans, *inputs) -> the output's tangent (adcore.hookspecs.Joint). Rules are written with adcore ops,
never raw NumPy on values that might be traced, so they nest: forward over reverse
(Hessians), forward over forward, reverse over forward. Masks (comparisons) are
computed on concrete values: they have no derivative. Conventions at kinks
(abs'(0)=0, ties split equally, ...): docs/conventions.md, the same as the VJPs'.
"""

from __future__ import annotations

# each module fills the one table with the rules of its part of the core catalogue
from adcore_forward.jvps import (  # noqa: F401
    complex_parts,
    contractions,
    convolution,
    cumulative,
    decompositions,
    eig,
    elementwise,
    fft,
    linalg,
    nn,
    reductions,
    shapes,
)
from adcore_forward.jvps.table import JVPS

__all__ = ["JVPS"]
