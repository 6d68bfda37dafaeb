"""One `bind` for every op call, and the per-thread stack of active transformations."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from adcore.errors import AdcoreError, ComplexValueError, TracerConversionError

_local = threading.local()


class Trace:
    """One active transformation. Its level orders it among the transformations nested now.

    A backend subclasses this and overrides `process`: given an op, the call's
    arguments (some of them this trace's tracers, the rest constants or tracers of
    outer levels) and the op's static params, it returns the op's result as a value
    of this trace.
    """

    level: int = 0
    backend: str | None = None  # the backend's name, for error messages (else the class name)

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
    constants = False  # whether some argument may be complex: checked once a trace is found
    for arg in args:
        if isinstance(arg, Tracer):
            trace = arg._trace
            if top is None:
                top = trace
            elif trace is not top:
                constants = True  # the value of another transformation is a constant to the inner one
                if trace.level > top.level:
                    top = trace
        elif arg.__class__ is not float and arg.__class__ is not int:  # the common, real constants
            constants = True
    if top is None:
        return op.impl(*args, **params)
    if constants:
        _refuse_complex_constants(op, args, top)
    out = top.process(op, args, params)
    if op in REAL_OPS:
        return out
    # Another plugin's op may make a complex result of real inputs (an fft).
    dtype = getattr(out, "dtype", None)
    if dtype is not None and dtype.kind == "c":
        raise complex_value_error(op.name, top, f"a complex result ({dtype})")
    return out


# Ops known to give real results for real inputs: the core catalogue (NumPy gives nan, not a
# complex number, for sqrt(-1)), added by adcore.tracer. Since the arguments of a traced op
# are checked, their results need no check: that keeps the per-op cost to a set lookup.
REAL_OPS: set[Any] = set()


def _refuse_complex_constants(op: Any, args: tuple, top: Trace) -> None:
    """A rule backend differentiates real functions: a complex constant (or a complex value
    of an outer transformation) in a traced op is refused."""
    for arg in args:
        if isinstance(arg, Tracer):
            if arg._trace is not top and arg.dtype.kind == "c":
                raise complex_value_error(
                    op.name, top, f"a complex value ({arg.dtype}) of {backend_of(arg._trace)}"
                )
        elif _is_complex(arg):
            raise complex_value_error(op.name, top, f"a complex constant, {_describe(arg)}")


def _is_complex(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return dtype.kind == "c"
    return isinstance(value, complex) or (isinstance(value, (list, tuple)) and np.iscomplexobj(value))


def _describe(value: Any) -> str:
    return f"a {np.asarray(value).dtype} array" if np.ndim(value) else repr(value)


def backend_of(trace: Trace) -> str:
    """How an error names a trace: "backend 'reverse'", else by its class."""
    name = trace.backend
    if name is None:
        # a first-party plugin's package is adcore_<backend> (adcore_reverse.tensor.ReverseTrace)
        package = type(trace).__module__.partition(".")[0]
        name = package[len("adcore_") :] if package.startswith("adcore_") else None
    return f"backend {name!r}" if name else f"the {type(trace).__name__} transformation"


def complex_value_error(op_name: str, trace: Trace, what: str) -> ComplexValueError:
    return ComplexValueError(
        f"op {op_name!r} on {backend_of(trace)} got {what}: rule backends differentiate real "
        "functions only, and a complex value inside f would lose its imaginary part's derivative "
        "(ComplexWarning) and give a wrong number. Write the computation with real arrays (real and "
        "imaginary parts apart: |a + ib| = anp.sqrt(a**2 + b**2)), or use backend='numeric', which "
        "runs f on numbers."
    )


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

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        self.stack.pop()
        # NumPy storing a traced value into a plain array (z[0] = x) calls float(x), and
        # when that raises it reports "setting an array element with a sequence" instead
        # (a ValueError): give back the typed error that says what happened.
        if isinstance(error, (ValueError, TypeError)) and not isinstance(error, AdcoreError):
            cause = error.__cause__ or error.__context__
            if isinstance(cause, TracerConversionError):
                raise TracerConversionError(*cause.args) from error


# Imported last: the tracer pulls in the op catalogue, whose OpSpec class takes `bind`
# above as its __call__.
from adcore.tracer import Tracer  # noqa: E402
