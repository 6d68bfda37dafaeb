"""Sympy rules of the special ops: the "sympy" table the symbolic backend needs.

Each entry maps an op name to one rule:

    rule(*inputs, **params) -> the op's output

Each input is a NumPy object array of sympy expressions (a constant input comes as it
is); the rule returns the output as an object array, built here elementwise with `each`
(from adcore.extend). The rule builds the op's value, not its derivative: sympy
differentiates it, through the functions of `adcore_special.sympy_functions`, which state
their exact derivatives and compile to calls of the ops. That module imports sympy, so it
is a `LazyModule`, imported when a rule first runs: loading the plugin (and any
non-symbolic use of adcore) stays sympy-free.
"""

from __future__ import annotations

from typing import Any

from adcore.extend import LazyModule, each

fn = LazyModule("adcore_special.sympy_functions")

# fmt: off
SYMPY_RULES: dict[str, Any] = {
    "erfcx":     lambda x: each(fn.erfcx, x),
    "loggamma":  lambda x: each(fn.loggamma, x),
    "psi":       lambda x, n=0: each(lambda e: fn.psi(n, e), x),
    "powm1":     lambda x, y: each(fn.powm1, x, y),
}
# fmt: on
