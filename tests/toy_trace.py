"""A toy transformation for testing dispatch and tracers: it records the ops it sees and boxes results."""

from __future__ import annotations

from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, bind


class BoxTrace(Trace):
    """Records each op it processes (name and params) and boxes the result."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    @property
    def op_names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def process(self, op, args, params):
        self.calls.append((op.name, params))
        values = [a.value if isinstance(a, Box) and a._trace is self else a for a in args]
        return Box(self, bind(op, *values, **params))


class Box(ArrayTracer):
    def __init__(self, trace: Trace, value) -> None:
        self._trace = trace
        self.value = value
