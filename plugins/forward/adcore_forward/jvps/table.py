"""The "jvp" rule table itself, which the modules of this package fill, one module per
module of the core catalogue (adcore/ops/), and the helpers several of them use: the rule
forms are in the package's docstring."""

from __future__ import annotations

from typing import Any

import adcore.numpy as anp
from adcore.extend import RuleTable, batched_axis
from adcore.hookspecs import Joint

JVPS = RuleTable("JVP", "adcore_forward.jvps")


def defjvp(op: str, *rules: Any) -> None:
    """One rule per input of `op` (None: that input sends no tangent)."""
    JVPS.add(op, rules)


def defjvp_variadic(op: str, rule: Any) -> None:
    """One rule for every input of a variadic op, taking the input's position first."""
    JVPS.add(op, rule)


def defjvp_joint(op: str, rule: Any) -> None:
    """One rule for all inputs of `op` at once, (ts, ans, *inputs) -> the output's tangent (Joint)."""
    JVPS.add(op, Joint(rule))


def batch(t: Any, ans: Any) -> tuple[int, ...]:
    """The shape of the output's batched tangent: (B,) + ans.shape."""
    return t.shape[:1] + ans.shape


def reduce(t: Any, x: Any, axis: Any, keepdims: bool, weights: Any = None) -> Any:
    """sum over `axis` of the tangent (times per-element weights): a reduction's JVP."""
    if weights is not None:
        t = t * weights
    return anp.sum(t, axis=batched_axis(axis, x.ndim), keepdims=keepdims)


def lift_to(t: Any, ndim: int) -> Any:
    """The batched tangent with axes of length 1 after the batch axis, up to 1 + ndim axes."""
    missing = ndim - (t.ndim - 1)
    return t if missing <= 0 else anp.reshape(t, t.shape[:1] + (1,) * missing + t.shape[1:])


def move_axis(t: Any, source: int, destination: int) -> Any:
    order = [a for a in range(t.ndim) if a != source]
    order.insert(destination, source)
    return anp.transpose(t, tuple(order))
