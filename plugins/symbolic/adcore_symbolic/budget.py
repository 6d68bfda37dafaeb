"""The work budget of one symbolic derivative: sympy nodes built, wherever they are built.

Tracing binds each op's result to its own small definition, and the chain rule
differentiates each definition once, so the sympy work of a derivative is proportional
to the nodes it builds: the definitions' nodes when traced, each partial derivative's
nodes times the symbols it is taken by, each adjoint term. `WorkBudget` counts them as
they are built and stops the derivative, naming the op, once they pass `max_nodes`.
"""

from __future__ import annotations

from typing import Any

from adcore_symbolic.errors import ExpressionTooLargeError


def tree_size(expr: Any) -> int:
    """The nodes of expr's tree, shared subtrees counted each time (iterative: no recursion limit)."""
    size, stack = 0, [expr]
    while stack:
        e = stack.pop()
        size += 1
        stack.extend(getattr(e, "args", ()))
    return size


class WorkBudget:
    """At most `max_nodes` sympy nodes built for one derivative (tracing, chain rule, program)."""

    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.spent = 0

    def charge(self, nodes: int, op: str, stage: str) -> None:
        """Count `nodes` built for `op` at `stage` ("tracing", "differentiating"); refuse past the budget."""
        self.spent += nodes
        if self.spent > self.max_nodes:
            raise ExpressionTooLargeError(
                f"backend 'symbolic': at op {op!r} ({stage}) the work passed max_nodes={self.max_nodes} "
                f"sympy nodes (built so far: {self.spent}), more than a symbolic derivative does in a few "
                'seconds. Use another backend: backend="reverse" (or forward, numeric) has no such '
                "limit; or raise the guard with max_nodes=... (sympy builds some 10^4 nodes a second)."
            )
