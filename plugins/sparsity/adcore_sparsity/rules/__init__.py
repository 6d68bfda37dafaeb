"""Sparsity rules of the core ops: the "sparsity" rule table the sparsity backend needs.

Each entry maps an op name to an `adcore_sparsity.extend.SparsityRule`, called

    rule(ans, *inputs, **params) -> one entry per input: None, DENSE or a sparse matrix

whose entry for input i says which elements of the output may depend on which elements of
that input (a sparse (ans.size, input.size) matrix, in flat C order). In a global pattern
`ans` and the traced inputs are `Unknown` (shape and dtype only), so the pattern holds for every
input; in a local one they are values, and `where`, `maximum` or `max` keep only the branch
taken. `order` (linear, multilinear, nonlinear) says how second derivatives flow, for Hessian
patterns; `exact` claims no entry is there that the Jacobian lacks at generic points. Rules
for one op sit side by side, one line each where they fit, grouped as the core catalogue is.
"""

from __future__ import annotations

# each module fills the one table with the rules of its part of the core catalogue
from adcore_sparsity.rules import (  # noqa: F401
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
from adcore_sparsity.rules.table import RULES

__all__ = ["RULES"]
