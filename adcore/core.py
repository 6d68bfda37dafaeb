"""The tracing core: `Trace`, a minimal `Tracer`, `bind`, `bind_below`, `new_trace`, levels.

Every op call goes through `bind`; with a tracer among its arguments the innermost
transformation's `Trace.process` handles it. This is the bottom layer of adcore
(docs/architecture.md): it imports nothing of adcore but `adcore.errors`, and nothing above
fills anything in. A traced value's NumPy surface (operators, methods, NumPy's protocols) is
`adcore.array_tracer.ArrayTracer`, above the ops it calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.errors import AdcoreError, ComplexValueError, InvalidInputError, TracerConversionError

_local = threading.local()
_SEQUENCES = (list, tuple)  # built once: bind tests every plain argument's class against it


class Trace:
    """One active transformation. Its level orders it among the transformations nested now.

    A backend subclasses this and overrides `process`: given an op, the call's
    arguments (some of them this trace's tracers, the rest constants or tracers of
    outer levels) and the op's static params, it returns the op's result as a value
    of this trace.
    """

    level: int = 0
    backend: str | None = None  # the backend's name, for error messages (else the class name)
    # `bind` hands `process` copies of the arrays and lists among an op's params (frozen_params), so
    # a trace that reads them after the op ran (a tape, a recording, a plan) reads what the op used;
    # a trace that reads them only inside `process`, and wants the caller's own objects, sets False
    copies_params: bool = True

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
    if params:
        for value in params.values():  # inline: bind is the hot path
            if isinstance(value, Tracer) and value.dtype.kind != "b":  # a traced mask has no derivative
                return _with_traced_params(op, args, params)
    top = None
    for arg in args:
        if isinstance(arg, Tracer):
            trace = arg._trace
            if top is None or trace.level > top.level:
                top = trace  # the value of another transformation is a constant to the inner one
        elif arg.__class__ in _SEQUENCES and holds_tracer(arg):
            # anp.mean([a, b]): an input given as a list holding traced values is their stack
            return bind(op, *(_stacked(a) for a in args), **params)
    if top is None:
        return op.impl(*args, **params)
    if not op.accepts_complex:
        _refuse_complex(op, args, top)
    if params and top.copies_params:
        params = frozen_params(params)
    return top.process(op, args, params)


# Ops whose params may be traced values, each with the function over ops that computes such a call
# (clip's bounds, differentiable in them too as JAX's clip): the op's layer registers it with
# `def_traced_params`. Any other op refuses a traced param: a param is static, its derivative 0.
_traced_params: dict[str, Callable[..., Any]] = {}


def def_traced_params(op_name: str, function: Callable[..., Any]) -> None:
    """Let op `op_name` take traced params: a call with one is `function(*inputs, **params)`."""
    _traced_params[op_name] = function


def _with_traced_params(op: Any, args: tuple, params: dict) -> Any:
    """A call whose params hold traced values: the op's function over ops for them, or the refusal
    (an impl handed a tracer calls NumPy, which handed it back to the op: a RecursionError)."""
    for value in params.values():
        if isinstance(value, Tracer) and value.concrete_itself:
            # the function reads the param's plain value, which a vmap's batch has one of per
            # example: its conversion error (vmap runs f once per example instead)
            value._concrete_value()
    function = _traced_params.get(op.name)
    if function is not None:
        return function(*args, **params)
    name, value = next((k, v) for k, v in params.items() if isinstance(v, Tracer) and v.dtype.kind != "b")
    raise InvalidInputError(
        f"op {op.name!r}: its param {name!r} is a traced value ({traced_by(value)}), but params are static, "
        f"with no derivative: pass a plain value ({name}=adcore.concrete(...) to use its number as a "
        "constant), or compute the call from ops whose inputs it is"
    )


# Param values nothing can change in place: the common case passes them by their class alone.
_FIXED = frozenset(
    (int, float, bool, str, complex, type(None), type(Ellipsis), np.dtype, np.float64, np.float32, np.int64)
)


def frozen_params(params: dict) -> dict:
    """params with every array, list and dict in them (in tuples and slices too) copied; the dict
    itself when there is none, the common case. A trace's later passes (a backward sweep, a recorded
    program, a plan) read an op's params after the op ran, when the caller may have written into its
    own index array or mask (`idx[:] = 0`): they must read what the op used (issue 32)."""
    out = None
    for name, value in params.items():
        if value.__class__ in _FIXED:
            continue
        kept = frozen_value(value)
        if kept is not value:
            if out is None:
                out = dict(params)
            out[name] = kept
    return params if out is None else out


def frozen_value(value: Any) -> Any:
    """value, or a copy of it where it holds something mutable (itself when it holds nothing)."""
    cls = value.__class__
    if cls in _FIXED:
        return value
    if isinstance(value, np.ndarray):
        return value.copy(order="K")
    if isinstance(value, tuple):
        for item in value:
            if item.__class__ not in _FIXED:
                break
        else:
            return value  # a shape, axes, a tuple of numbers: the common case, no call per item
        items = tuple(map(frozen_value, value))
        if all(a is b for a, b in zip(items, value)):
            return value
        return items if cls is tuple else cls._make(items) if hasattr(cls, "_make") else value
    if cls is slice:
        ends = (frozen_value(value.start), frozen_value(value.stop), frozen_value(value.step))
        same = ends[0] is value.start and ends[1] is value.stop and ends[2] is value.step
        return value if same else slice(*ends)
    if isinstance(value, list):
        return [frozen_value(v) for v in value]
    if isinstance(value, dict):
        return {k: frozen_value(v) for k, v in value.items()}
    return value  # numpy scalars, functions, dtypes, objects a trace does not look into


def shape_of(value: Any) -> tuple[int, ...]:
    """np.shape(value), read off the value's own shape where it has one: np.shape of a tracer goes
    through its __array_function__ and builds a stand-in array, several microseconds a call."""
    shape = getattr(value, "shape", None)
    if shape.__class__ is tuple:
        return shape
    return np.shape(value) if shape is None else tuple(shape)


def holds_tracer(value: Any) -> bool:
    return isinstance(value, Tracer) or (value.__class__ in _SEQUENCES and any(map(holds_tracer, value)))


def _stacked(value: Any) -> Any:
    """A list or tuple holding traced values as one traced array (np.asarray's, for tracers): the
    first tracer in it stacks it (its NumPy surface, adcore.array_tracer, knows the stack op)."""
    if value.__class__ in _SEQUENCES and holds_tracer(value):
        first = value
        while not isinstance(first, Tracer):
            first = next(v for v in first if holds_tracer(v))
        return first.stacked(value)
    return value


def _refuse_complex(op: Any, args: tuple, top: Trace) -> None:
    """An op whose rules are for real inputs refuses a complex argument, traced or constant:
    its derivative would drop the imaginary part's (ComplexWarning) and give a wrong number."""
    for arg in args:
        if isinstance(arg, Tracer):
            if arg.dtype.kind == "c":
                owner = "" if arg._trace is top else f" of {backend_of(arg._trace)}"
                raise complex_value_error(op.name, top, f"a complex value ({arg.dtype}){owner}")
        elif arg.__class__ is float or arg.__class__ is int:
            continue  # the common, real constants
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
        f"op {op_name!r} on {backend_of(trace)} got {what}: its rules are for real inputs only "
        "(its OpSpec does not set accepts_complex), and differentiating it on a complex value would "
        "drop the imaginary part's derivative and give a wrong number. Take the value apart with "
        "anp.real/anp.imag (or anp.abs) before this op, or write the op's complex rules (JAX's "
        "convention, docs/complex.md) and set accepts_complex=True."
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
                raise cause from error  # itself: vmap tells its own conversions by their class


def traced_by(tracer: Tracer) -> str:
    """'Tensor, backend 'reverse'': which traced value, and which backend traces it."""
    trace = getattr(tracer, "_trace", None)
    return type(tracer).__name__ if trace is None else f"{type(tracer).__name__}, {backend_of(trace)}"


def stand_in(value: Any) -> Any:
    """An array with a tracer's shape and dtype and no data, for NumPy's shape and *_like
    functions: they need no value, and some tracers (symbolic) have no number to give."""
    if isinstance(value, Tracer):
        return np.broadcast_to(np.empty((), dtype=value.dtype), value.shape)
    return value


def differentiated(value: Any) -> bool:
    """Whether a transformation that may differentiate traces `value`: a rule asks this to know it
    runs under an outer derivative (second order). A vmap's batch (concrete_itself) only batches:
    what it holds decides."""
    while isinstance(value, Tracer):
        if not value.concrete_itself:
            return True
        value = value.value
    return False


def concrete(value: Any) -> Any:
    """The plain value under any number of tracer levels (for comparisons, shapes and `bool`)."""
    while isinstance(value, Tracer):
        if value.concrete_itself:
            return value  # a vmap's batch of plain values, standing for one example's
        value = value._concrete_value()
    return value


def plain_numbers(value: Any) -> np.ndarray:
    """The plain numbers under every tracer level, as an array; for a vmap's batch, every example's
    (its whole batch): for checks that hold for each example if they hold for all at once."""
    while isinstance(value, Tracer):
        value = value.value if value.concrete_itself else value._concrete_value()
    return np.asarray(value)


class Tracer:
    """A value one transformation is tracing (`adcore.Tracer`).

    Subclasses keep `value` (the primal, one level down; it may itself be a tracer), set `_trace`,
    and may override `_concrete_value`. A backend's tracer subclasses `adcore.array_tracer.ArrayTracer`.
    """

    __slots__ = ("_trace", "value")
    # True for a tracer that is itself a plain value as far as `concrete` is concerned: a vmap's
    # BatchTracer, one example's value holding the whole batch (its comparisons are batched)
    concrete_itself = False

    def _concrete_value(self) -> Any:
        return self.value

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.value)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self.value)

    def stacked(self, values: list | tuple) -> Tracer:
        """`values`, a (nested) list holding this tracer, as one traced array (bind's `f([a, b])`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot stack traced values")
