"""The "vjp" rule table itself, which the modules of this package fill, one module per
module of the core catalogue (adcore/ops/): the rule forms are in the package's docstring."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import Tracer
from adcore.extend import RuleTable, kept_shape
from adcore.hookspecs import Joint

VJPS = RuleTable("VJP", "adcore_reverse.vjps")


def defvjp(op: str, *rules: Any) -> None:
    """One rule per input of `op` (None: no derivative flows to that input)."""
    VJPS.add(op, rules)


def defvjp_steps(op: str, *rules: Any) -> None:
    """defvjp for an op whose rules may return Masked (zeros.step_cotangent: a step's zero
    derivative), a cotangent the backward pass carries with its structural zeros below the op."""
    defvjp(op, *rules)


def defvjp_variadic(op: str, rule: Any) -> None:
    """One rule for every input of a variadic op, taking the input's position first."""
    VJPS.add(op, rule)


def defvjp_joint(op: str, rule: Any) -> None:
    """One rule for all inputs of `op` at once, (g, ans, *inputs) -> a cotangent per input (Joint)."""
    VJPS.add(op, Joint(rule))


def expand(g: Any, x: Any, axis: Any) -> Any:
    """A reduction's cotangent, broadcast back over the input x."""
    if isinstance(g, Tracer):  # a traced cotangent (create_graph, an outer transformation): recorded
        return anp.broadcast_to(anp.reshape(g, kept_shape(x, axis)), x.shape)
    return np.broadcast_to(np.reshape(g, kept_shape(x, axis)), x.shape)  # the same, without two binds
