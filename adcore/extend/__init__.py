"""`adcore.extend`: the building blocks for people who write rules and backends (not for users of grad).

For `vjp` and `jvp` rules, written with adcore ops so that a rule built from them can be
differentiated again (`adcore.extend.rules`): `unbroadcast` for VJP rules; `lift` and
`batched_axis` for JVP rules, whose tangents carry a leading batch axis; `reduced_axes` and
`kept_shape` for reductions; `tie_weights`, `tie_split`, `mask`, `inside_clip` for
derivatives that are steps, and `times_step` to apply one (0 where it is 0, even times inf or
nan); `prod_partials`, `power_by_base` and `power_by_exponent` for the products and powers whose
formulas break at zero. An elementwise op's derivative stated once, as its partials: `jvp_rules`
and `vjp_rules` build both kinds of rule from them (`over(f)`: the partial 1 / f), as the core's
own table `adcore.extend.elementwise_partials` does. `refuse_singular`, `ties_averaged` and
`centred` are the pieces both kinds of rule of logabsdet, the eigenvalues and var/std share;
`RuleTable` is a table of one kind of rule, each op once.

For `sympy` rules, none of them importing sympy (`adcore.extend.sympy_rules`): `LazyModule`,
`each`, `reduce_with`.

The base of a plugin's own sympy functions, `OpCall`, is in `adcore.extend.sympy_functions`,
which imports sympy and is not imported here. The helpers of a rule kind a plugin brings (the
`sparsity` patterns) come with that plugin.

What each kind of rule receives is its `adcore.hookspecs.RuleKind`, declared by the backend that brings it.
Layer 3 (docs/architecture.md): of adcore it imports core and ops only.
"""

from __future__ import annotations

from adcore.extend.partials import jvp_rules, over, vjp_rules
from adcore.extend.rule_table import RuleTable
from adcore.extend.rules import (
    batched_axis,
    inside_clip,
    kept_shape,
    lift,
    mask,
    nan_where_value_is,
    power_by_base,
    power_by_exponent,
    prod_partials,
    reduced_axes,
    tie_split,
    tie_weights,
    times_step,
    unbroadcast,
)
from adcore.extend.shared_pieces import centred, refuse_singular, ties_averaged
from adcore.extend.sympy_rules import LazyModule, each, reduce_with

__all__ = [
    "LazyModule",
    "RuleTable",
    "batched_axis",
    "centred",
    "each",
    "inside_clip",
    "jvp_rules",
    "kept_shape",
    "lift",
    "mask",
    "nan_where_value_is",
    "over",
    "power_by_base",
    "power_by_exponent",
    "prod_partials",
    "reduce_with",
    "refuse_singular",
    "reduced_axes",
    "tie_split",
    "tie_weights",
    "ties_averaged",
    "times_step",
    "unbroadcast",
    "vjp_rules",
]
