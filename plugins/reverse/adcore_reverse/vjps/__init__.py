"""VJP rules of the core ops: the "vjp" rule table the reverse backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(g, ans, *inputs, **params) -> the cotangent of that input

`g` is the cotangent of the output, `ans` the output, `inputs` the op's inputs and
`params` its static params as passed (so every param has NumPy's default here). The
returned cotangent has the input's shape: binary ops `unbroadcast` it (seed 001,
张量广播规律). `None` means no derivative flows to that input (zero-derivative ops,
conditions). Variadic ops (einsum, multi_dot) have one rule taking the input's
position first; concatenate and stack one Joint rule (g, ans, *inputs) -> every input's
cotangent at once (adcore.hookspecs.Joint). Rules are written with adcore ops, never raw NumPy on values that
might be traced, so the backward pass can itself be differentiated (reverse over
reverse). Masks (comparisons) are computed on concrete values: they have no derivative.
Conventions at kinks (abs'(0)=0, ties split equally, ...): docs/conventions.md.
"""

from __future__ import annotations

# each module fills the one table with the rules of its part of the core catalogue
from adcore_reverse.vjps import (  # noqa: F401
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
from adcore_reverse.vjps.table import VJPS

__all__ = ["VJPS"]
