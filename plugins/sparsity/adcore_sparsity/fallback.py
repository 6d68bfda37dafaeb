"""Which sparsity rule an op gets: its registered one, else a fallback, with the warning that says so.

An op without a `sparsity` rule: elementwise by its OpSpec -> the elementwise pattern (nonlinear,
exact); traceable -> None (the tracer runs its body); otherwise every input it differentiates is
DENSE, with a SparsityWarning naming the op and its plugin, once per op per process.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from adcore.plugins import get_registry
from adcore_sparsity.extend import SparsityRule, dense, elementwise


class SparsityWarning(UserWarning):
    """An op has no `sparsity` rule, so its pattern is taken as dense (a superset: still right,
    only less sparse than it could be)."""


_ELEMENTWISE = elementwise("nonlinear")
_warned: set[str] = set()
_lock = threading.Lock()


def rule_for(op: Any) -> SparsityRule | None:
    """The op's sparsity rule, or None when its body should be traced instead."""
    rule = get_registry().rules["sparsity"].get(op.name)
    if rule is not None:
        return rule
    if op.elementwise:
        return _ELEMENTWISE
    if op.traceable:
        return None
    _warn_dense(op)
    inputs = None if op.differentiable is None else tuple(op.differentiable)
    return dense("nonlinear", inputs, exact=False)


def exact(op_name: str) -> bool:
    """Whether the op's pattern claims to be exact: its rule's claim; by the elementwise flag, yes;
    a traced body or the dense fallback, no."""
    registry = get_registry()
    rule = registry.rules["sparsity"].get(op_name)
    if rule is not None:
        return bool(rule.exact)
    op = registry.ops.get(op_name)
    return bool(op is not None and op.elementwise)


def plugin_of(op_name: str) -> str:
    """The plugin that registered the op (for messages), or '?'."""
    for name, record in get_registry().plugins.items():
        if op_name in getattr(record, "ops", ()):
            return name
    return "?"


def _warn_dense(op: Any) -> None:
    with _lock:
        if op.name in _warned:
            return
        _warned.add(op.name)
    warnings.warn(
        f"op {op.name!r} (plugin {plugin_of(op.name)!r}) has no 'sparsity' rule, so the sparsity backend "
        "takes every output element to depend on every element of its inputs (a dense block: right, "
        "but less sparse than it could be). Its plugin can register one with "
        f"register('sparsity', {op.name!r}, rule) (adcore_sparsity.extend has the builders).",
        SparsityWarning,
        stacklevel=4,
    )
