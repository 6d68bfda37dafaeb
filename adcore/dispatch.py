"""One `bind` for every op call, and the per-thread stack of active transformations."""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()


class Trace:
    """One active transformation. Its level orders it among the transformations nested now.

    A backend subclasses this and overrides `process`: given an op, the call's
    arguments (some of them this trace's tracers, the rest constants or tracers of
    outer levels) and the op's static params, it returns the op's result as a value
    of this trace.
    """

    level: int = 0

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not process ops")


def bind(op: Any, *args: Any, **params: Any) -> Any:
    """Run `op` on `args`: the impl for plain values, else the innermost trace's `process`.

    Every op call comes here (`OpSpec.__call__` is this function). A NumPy-style call,
    with params given positionally after the inputs or a variadic op's inputs as one
    list, is first put in the canonical form: the inputs, then the params by name.
    """
    if len(args) != op.nin:
        args, params = op.canonical_call(args, params)
    top = None
    for arg in args:
        if isinstance(arg, Tracer):
            trace = arg._trace
            if top is None or trace.level > top.level:
                top = trace
    if top is None:
        return op.impl(*args, **params)
    return top.process(op, args, params)


def bind_below(op: Any, primals: list, params: dict) -> Any:
    """Run `op` on a trace's primals, values one level down: through the transformation
    outside it if one of them is its tracer, else the impl (what a trace's `process` does
    to compute the op's value)."""
    for p in primals:
        if isinstance(p, Tracer):
            return bind(op, *primals, **params)
    return op.impl(*primals, **params)


def _stack() -> list[Trace]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class new_trace:
    """`with new_trace(TraceType) as trace`: open a transformation one level inside the
    current ones; it is closed even if the traced function raises."""

    __slots__ = ("trace", "stack")

    def __init__(self, trace_type: type[Trace], **kwargs: Any) -> None:
        self.trace = trace_type(**kwargs)
        self.stack = _stack()

    def __enter__(self) -> Trace:
        # Level 0 belongs to eager values (such as reverse-mode Tensors made by hand),
        # so every transformation opened here sits above them.
        self.trace.level = len(self.stack) + 1
        self.stack.append(self.trace)
        return self.trace

    def __exit__(self, *exc: object) -> None:
        self.stack.pop()


# Imported last: the tracer pulls in the op catalogue, whose OpSpec class takes `bind`
# above as its __call__.
from adcore.tracer import Tracer  # noqa: E402
