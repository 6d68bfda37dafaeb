"""What f did, op by op: the symbolic cache reuses a compiled derivative only when f, run
again, does exactly what it did when it was traced.

A compiled derivative is a function of the ops f called, in order: each op, its params,
its inputs (a traced value by its place in the sequence, any other value by its bytes),
and f's output. While the symbolic backend traces f, a `RecordingTrace` one level above
the sympy trace writes that sequence down (a `Recording`) and hands each op on to the
trace below. On a later call f runs once more under a `RecordingTrace` that only checks:
each op must be the next one of the recording, with the same params and constants, and
takes its output's shape and dtype from there; nothing is computed. A traced value has no
number under either trace, so f's path can depend only on what the recording holds:
anything else that changed (a global, a closure, an attribute, an argument object, an
array mutated in place, 0.0 against -0.0, np.random) shows up as another constant or
another op, and the backend derives anew.

While tracing, every constant array handed down is a private, read-only copy taken when
the op read it, so a derivative never sees the array change afterwards (class 5 of issue 15).
Constants also reach it as NumPy would use them (a list of numbers as an array, booleans an
op computes with as 0 and 1). NaN constants are refused: sympy's nan absorbs derivatives
(d(x·nan)/dx comes out 0, not nan) and cannot be compared (maximum, where).

The one way around the check is f looking at the tracer itself (type(x), x.value), which
differs between the two traces; ordinary code does not.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, Tracer, bind_below, new_trace
from adcore.errors import InvalidValueError
from adcore_symbolic.errors import OTHER_BACKENDS, SymbolicControlFlowError


class Unkeyable(Exception):
    """A value a recording cannot compare by content (an object of unknown type)."""


class Mismatch(Exception):
    """While verifying, f did something other than what the recording holds."""


class Recording:
    """One run of f: `inputs` (argument position, shape, dtype of each traced argument),
    `steps` (one per op: op id, params, inputs, output shape, output dtype), `output`.
    `verifiable` is False when f used a value the recording cannot compare."""

    __slots__ = ("inputs", "steps", "output", "ops", "verifiable", "complete")

    def __init__(self, inputs: tuple) -> None:
        self.inputs = inputs
        self.steps: list[tuple] = []
        self.output: Any = None
        self.ops: list = []  # keeps each op alive, so that its id stays its own
        self.verifiable = True
        self.complete = False

    def same_run(self, other: Recording) -> bool:
        return (self.inputs, self.steps, self.output) == (other.inputs, other.steps, other.output)

    def replays(self, f: Callable[..., Any], args: tuple) -> bool:
        """Whether f, called on args now, does exactly what this recording holds (f runs once,
        on shape-only tracers; nothing is computed)."""
        try:
            with new_trace(RecordingTrace, reference=self) as trace:
                inputs = list(args)
                for i, shape, dtype in self.inputs:
                    if np.shape(args[i]) != shape or args[i].dtype != dtype:
                        return False
                    inputs[i] = Recorded(None, shape, dtype, trace, ("arg", i))
                out = f(*inputs)
                trace.finish(out)
        except Exception:  # whatever f raised, deriving anew raises it again or answers right
            return False
        return trace.recording.complete and not trace.failed


def recorded(f: Callable[..., Any], runs: list[Recording]) -> Callable[..., Any]:
    """f for the symbolic trace, each run recorded into `runs`: Syms in, a Sym out."""

    @functools.wraps(f)  # derive names the symbols after f's parameters
    def run(*args: Any) -> Any:
        with new_trace(RecordingTrace, reference=None) as trace:
            inputs = list(args)
            for i, a in enumerate(args):
                if isinstance(a, Tracer):
                    inputs[i] = Recorded(a, tuple(a.shape), np.dtype(a.dtype), trace, ("arg", i))
            trace.recording.inputs = tuple(
                (i, tuple(a.shape), np.dtype(a.dtype)) for i, a in enumerate(args) if isinstance(a, Tracer)
            )
            runs.append(trace.recording)
            out = trace.finish(f(*inputs))
        return out

    return run


class Recorded(ArrayTracer):
    """A traced value of f as the recording sees it: `index` ("arg", i) or ("op", k), shape
    and dtype; `value` is the Sym one level below while tracing, None while verifying."""

    __slots__ = ("_shape", "_dtype", "index")

    def __init__(
        self, value: Any, shape: tuple, dtype: np.dtype, trace: RecordingTrace, index: tuple
    ) -> None:
        self.value = value
        self._shape = shape
        self._dtype = dtype
        self._trace = trace
        self.index = index

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def _concrete_value(self) -> Any:
        if self.value is None:
            raise SymbolicControlFlowError()
        return self.value  # the Sym below, which refuses in its own words

    __hash__ = Tracer.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc in _RELATION_UFUNCS and method == "__call__" and not kwargs:
            return self._trace.relate(ufunc.__name__, lambda *xs: ufunc(*xs), inputs)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


# Python's comparison and logic methods, by the NumPy names errors show
_RELATION_NAMES = {
    "__lt__": "less",
    "__le__": "less_equal",
    "__gt__": "greater",
    "__ge__": "greater_equal",
    "__eq__": "equal",
    "__ne__": "not_equal",
    "__and__": "logical_and",
    "__rand__": "logical_and",
    "__or__": "logical_or",
    "__ror__": "logical_or",
    "__invert__": "logical_not",
}


def _relation(name: str) -> Callable[..., Any]:
    """Recorded.<name>: the symbolic trace's comparisons and logic, recorded like ops."""

    shown = _RELATION_NAMES[name]

    def method(self, *other):
        return self._trace.relate(shown, lambda x, *rest: getattr(x, name)(*rest), (self, *other))

    method.__name__ = name
    return method


def _escape(name: str) -> Callable[..., Any]:
    """Recorded.<name>, a way out of the trace (float(x), x.item(), ...): while tracing, what
    the Sym below does (it refuses in its own words); while verifying, a refusal too."""

    def method(self, *args, **kwargs):
        if self.value is None:
            raise SymbolicControlFlowError()
        return getattr(self.value, name)(*args, **kwargs)

    method.__name__ = name
    return method


_ESCAPES = ("__float__", "__int__", "__index__", "__complex__", "__floor__", "__ceil__", "__trunc__")
for _name in _ESCAPES + ("item", "tolist", "__array__"):
    setattr(Recorded, _name, _escape(_name))

# the comparisons and logic the symbolic trace turns into sympy booleans (trace.Sym)
for _name in _RELATION_NAMES:
    setattr(Recorded, _name, _relation(_name))

_RELATION_UFUNCS = {
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.equal,
    np.not_equal,
    np.logical_and,
    np.logical_or,
    np.logical_not,
    np.bitwise_and,
    np.bitwise_or,
    np.invert,
}


class RecordingTrace(Trace):
    """Records f's ops while the symbolic trace below builds them (`reference` None), or
    checks them against `reference`, step by step, computing nothing."""

    backend = "symbolic"  # how errors name it

    def __init__(self, reference: Recording | None) -> None:
        self.reference = reference
        self.recording = Recording(reference.inputs if reference is not None else ())
        self.failed = False
        self._copies: dict[int, tuple[Any, bytes, np.ndarray]] = {}

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        key = (
            id(op),
            self._key(params, op.name) if params else (),
            tuple([self._key(a, op.name) for a in args]),
        )
        if self.reference is not None:
            return self._step(key, None)
        self.recording.ops.append(op)
        lowered = {k: self._lower((v,))[0] if isinstance(v, Recorded) else v for k, v in params.items()}
        return self._step(key, lambda: bind_below(op, self._lower(args, op), lowered))

    def relate(self, name: str, apply: Callable[..., Any], args: tuple) -> Recorded:
        """A comparison or logical op on traced values, recorded like an op."""
        key = (name, (), tuple([self._key(a, name) for a in args]))
        below = None if self.reference is not None else (lambda: apply(*self._lower(args)))
        return self._step(key, below)

    def finish(self, out: Any) -> Any:
        """Record f's output; return it as the trace below knows it."""
        self.recording.output = self._key(out, "the output", refuse_nan=False)
        reference = self.reference
        if reference is not None and (
            len(self.recording.steps) != len(reference.steps) or self.recording.output != reference.output
        ):
            self._fail()
        self.recording.complete = True
        return out.value if isinstance(out, Recorded) and out._trace is self else out

    def _step(self, key: tuple, below: Callable[[], Any] | None) -> Recorded:
        steps = self.recording.steps
        index = ("op", len(steps))
        if below is None:
            expected = self.reference.steps[len(steps)] if len(steps) < len(self.reference.steps) else None
            if self.failed or expected is None or expected[:3] != key:
                self._fail()
            steps.append(expected)
            return Recorded(None, expected[3], expected[4], self, index)
        value = below()
        dtype = np.dtype(value.dtype if hasattr(value, "dtype") else np.result_type(value))
        shape = tuple(np.shape(value))
        steps.append(key + (shape, dtype))
        return Recorded(value, shape, dtype, self, index)

    def _fail(self) -> None:
        self.failed = True
        raise Mismatch()  # f may catch it; `failed` stays set

    def _key(self, value: Any, where: str, refuse_nan: bool = True) -> Any:
        """A value as the recording compares it: a traced value by its place, anything else
        by content; a value that cannot be compared makes the recording unverifiable."""
        if value.__class__ is Recorded and value._trace is self:
            return value.index  # ("arg", i) or ("op", k): no value key starts so
        try:
            key = value_key(value)
        except Unkeyable:
            if self.reference is not None:
                self._fail()
            self.recording.verifiable = False
            return ("unverifiable", id(value))
        if refuse_nan and self.reference is None and _has_nan(value):
            raise InvalidValueError(
                f"backend 'symbolic': op {where!r} got a NaN constant. sympy's nan absorbs derivatives "
                "(d(x*nan)/dx would come out 0, not nan) and cannot be compared (maximum, where), so "
                f"the symbolic backend refuses it. Use another backend ({OTHER_BACKENDS}), or replace "
                "NaN before f (np.nan_to_num) and mask with adcore.numpy.where."
            )
        return key

    def _lower(self, args: tuple, op: Any = None) -> list:
        """The inputs as the trace below takes them: its Syms, and private read-only copies of
        constant arrays as they are now (the compiled derivative keeps constants it reads).

        Constants also take the form NumPy would give them: a list or tuple of numbers is an
        array, and booleans where the op computes with numbers (x * mask) are 0 and 1 (uint8:
        it keeps the result's float dtype), since sympy reads them as logic (where's condition).
        """
        out = []
        for i, a in enumerate(args):
            if isinstance(a, Recorded) and a._trace is self:
                out.append(a.value)
                continue
            if isinstance(a, (list, tuple)):
                a = _as_array(a)
            is_bool = a.__class__ is bool or (isinstance(a, (np.ndarray, np.generic)) and a.dtype == np.bool_)
            if is_bool and op is not None and op.is_differentiable(i):
                a = np.asarray(a, dtype=np.uint8) if isinstance(a, np.ndarray) else np.uint8(a)
            out.append(self._copy(a) if isinstance(a, np.ndarray) else a)
        return out

    def _copy(self, array: np.ndarray) -> np.ndarray:
        # one copy per array and content, so that the trace below can still tell a constant
        # used twice; `array` stays referenced, so its id is not reused during the trace
        content = array.tobytes()
        known = self._copies.get(id(array))
        if known is not None and known[1] == content:
            return known[2]
        copy = np.array(array, copy=True)
        copy.flags.writeable = False
        self._copies[id(array)] = (array, content, copy)
        return copy


def value_key(value: Any) -> Any:
    """A hashable key equal for two values exactly when they have the same content (0.0 and
    -0.0, 1 and 1.0 and True differ); Unkeyable for values of other types."""
    kind = value.__class__
    if kind is float:
        return ("float", value.hex())
    if kind is int or kind is bool or kind is str or value is None or value is Ellipsis:
        return (kind.__name__, value)
    if kind is np.ndarray or isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise Unkeyable(value)
        return ("array", array.dtype.str, array.shape, array.tobytes())
    if kind is tuple or kind is list:
        return (kind.__name__, tuple([value_key(v) for v in value]))
    if kind is dict:
        return ("dict", tuple([(value_key(k), value_key(v)) for k, v in value.items()]))
    if kind is slice:
        return ("slice", value_key(value.start), value_key(value.stop), value_key(value.step))
    if kind is complex:
        return ("complex", value.real.hex(), value.imag.hex())
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    raise Unkeyable(value)


def _as_array(value: list | tuple) -> Any:
    """A list or tuple of numbers as NumPy would make it an array; anything else as it is."""
    try:
        array = np.asarray(value)
    except Exception:  # it holds traced values, which refuse: the trace below says so
        return value
    return value if array.dtype.hasobject else array


def _has_nan(value: Any) -> bool:
    """Whether a constant (a number, an array, or a tuple/list/dict of them) holds a NaN."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value).dtype.kind in "fc" and bool(np.isnan(value).any())
    if isinstance(value, (float, complex)):
        return math.isnan(value.real) or math.isnan(value.imag)
    if isinstance(value, (tuple, list)):
        return any(_has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    return False
