"""Sympy rules of the core ops: the "sympy" rule table the symbolic backend needs.

Each entry maps an op name to one rule:

    rule(*inputs, **params) -> the op's output

Each input is a NumPy object array of sympy expressions with the input's shape (an input
that is a constant comes as it is: a number or a NumPy array); `params` are the op's
static params as passed. The rule returns the output the same way: an object array of
the output's shape, or one expression for a 0-d output. NumPy does arithmetic on object
arrays element by element with sympy's own operators, and its shape functions
(transpose, reshape, indexing, concatenate) move the expressions about unchanged, so
most rules are one NumPy call. `each(fn, *inputs)` applies a sympy function elementwise,
with broadcasting; `reduce_with(fn, x, axis, keepdims)` calls fn(*slice) per reduced
slice. Sympy is imported when a rule first runs, not when the table is registered.

Kinks follow docs/conventions.md: abs' = sign (0 at 0); sign' = floor' = round' = 0
(sympy's DiracDelta is read as 0); maximum/minimum through Max/Min, whose derivative
Heaviside(0) = 1/2 splits a tie; max/min reductions through amax/amin, which split
among k ties; relu and clip as Piecewise, so relu'(0) = 0 and clip' = 1 on the bounds;
where as Piecewise, whose condition has no derivative. Ops sympy has no stable or exact
form of call the adcore op from the compiled code (adcore_symbolic.functions).
"""

from __future__ import annotations

# each module fills the one table with the rules of its part of the core catalogue
from adcore_symbolic.sympy_rules import (  # noqa: F401
    complex_values,
    contractions,
    convolution,
    cumulative,
    decompositions,
    elementwise,
    linalg,
    nn,
    reductions,
    shapes,
)
from adcore_symbolic.sympy_rules.table import NO_SYMPY_FORM, SYMPY_RULES

__all__ = ["NO_SYMPY_FORM", "SYMPY_RULES"]
