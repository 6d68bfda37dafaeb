"""OpSpec: what an op computes (a NumPy reference impl) and where its inputs may be drawn from."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcore.core import bind
from adcore.errors import InvalidInputError


@dataclass(frozen=True)
class Sample:
    """One call of an op for checking: its inputs and its static params."""

    args: tuple
    params: dict = field(default_factory=dict)


# A string so that importing the catalogue does not import numpy.random (only sampling needs it).
SampleFn = Callable[["np.random.Generator", np.dtype], list[Sample]]


@dataclass(frozen=True)
class Kink:
    """A point where an op is not differentiable and the value every rule-based backend must give
    there (docs/conventions.md): op(*inputs, **params) and d op / d input for each input, in order."""

    inputs: tuple
    jacobians: tuple
    params: dict = field(default_factory=dict)
    why: str = ""


@dataclass(eq=False)
class OpSpec:
    """An op: a name, a NumPy reference implementation, and how to draw inputs to check it.

    - `impl(*inputs, **params)` computes the op on plain NumPy values.
    - `nin` inputs are arrays; `variadic` ops (concatenate, stack) take any number (nin 0).
    - `differentiable` lists the inputs a derivative flows through (None: all);
      the others (a `where` condition) are treated as constants by every backend.
    - `params` name the static keyword params (axis, keepdims, shape, index, ...).
    - `numpy` are the NumPy functions this op stands for when called on a tracer, each as the
      function or by its dotted name ("scipy.special.erf"), which imports nothing: the name is
      looked up once user code has imported its module.
    - `elementwise`: each output element depends only on the inputs' elements at the same
      (broadcast) position, as for sin or add; the symbolic backend then traces one scalar
      for a whole array.
    - `traceable`: impl is Python over adcore ops, so it runs on tracers too; a backend with no
      rule of its kind for the op then differentiates impl's body instead of refusing.
    - `samples(rng, dtype)` draws the inputs the conformance checks use.
    - `aliases`: more names of the op in `adcore.numpy` (NumPy's: remainder for mod, ...).
    - `kinks`: the op's non-differentiable points and the derivative rules must give there.
    - `kink_distance(*inputs, **params)`: elementwise, how far the inputs are from a kink or jump
      (0 on one), so random programs keep clear of them; None for an op without any.
    - `gauge(value, centre, *inputs, **params)`: for an op whose NumPy result is fixed only up to
      a choice LAPACK makes (the signs of eigen- and singular vectors), `value` with that choice
      made as in `centre`, the op's value at a point nearby: finite differences of the op compare
      aligned values (conformance aligns to the sample's value), since its derivative holds
      LAPACK's choice fixed. Written with adcore ops, so it traces; None for other ops.
    - `accepts_complex`: the op's rules hold for complex inputs, in JAX's convention
      (docs/complex.md); conformance then checks it on complex128/complex64 too. Off, a complex
      value reaching the op inside a traced function is a ComplexValueError naming the op.
    """

    name: str
    impl: Callable[..., Any]
    nin: int = 1
    differentiable: tuple[int, ...] | None = None
    params: tuple[str, ...] = ()
    numpy: tuple[Callable[..., Any] | str, ...] = ()
    samples: SampleFn | None = None
    variadic: bool = False
    elementwise: bool = False
    doc: str = ""
    traceable: bool = False
    aliases: tuple[str, ...] = ()
    kinks: tuple[Kink, ...] = ()
    kink_distance: Callable[..., Any] | None = None
    gauge: Callable[..., Any] | None = None
    accepts_complex: bool = False

    def __post_init__(self) -> None:
        if self.variadic:
            self.nin = 0  # no fixed number: every call goes through canonical_call
        if not self.name.isidentifier():
            raise ValueError(f"op name {self.name!r} must be a Python identifier")
        if not callable(self.impl):
            raise TypeError(f"op {self.name!r}: impl must be callable, got {self.impl!r}")
        if self.differentiable is not None and not self.variadic:
            bad = [i for i in self.differentiable if not 0 <= i < self.nin]
            if bad:
                raise ValueError(f"op {self.name!r}: differentiable indices {bad} not below nin={self.nin}")
        # what help(), pydoc, inspect.signature and IPython's `?` read: the op's own name, doc and call
        self.__name__ = self.name
        self.__doc__ = _docstring(self)
        self.__signature__ = _call_signature(self)

    __call__ = bind  # op(*inputs, **params) is bind(op, *inputs, **params)

    def __get__(self, instance: Any, owner: type | None = None) -> OpSpec:
        # An op stored on a class stays the op, never a bound method (as a builtin function). Having
        # __get__ makes inspect.isroutine(op) true, so pydoc documents an op as a function (its
        # signature and doc) instead of documenting the OpSpec class.
        return self

    def canonical_call(self, args: tuple, params: dict) -> tuple[tuple, dict]:
        """(inputs, params) of a NumPy-style call: params may follow the inputs positionally,
        and a variadic op's inputs may come as one list."""
        extra: tuple = ()
        if self.variadic:
            if args and isinstance(args[0], (list, tuple)):
                args, extra = tuple(args[0]), args[1:]
        elif len(args) > self.nin:
            args, extra = args[: self.nin], args[self.nin :]
        else:
            raise InvalidInputError(f"op {self.name!r} takes {self.nin} input(s), got {len(args)}")
        if len(extra) > len(self.params):
            raise InvalidInputError(
                f"op {self.name!r} takes {self.nin} input(s) and params {list(self.params)}"
            )
        return args, {**dict(zip(self.params, extra)), **params}

    def is_differentiable(self, argnum: int) -> bool:
        return self.differentiable is None or argnum in self.differentiable

    def __repr__(self) -> str:
        return f"<op {self.name}>"


class _ImplDefault:
    """The default of a param the impl does not name (it takes **params): whatever the impl does."""

    def __repr__(self) -> str:
        return "<impl's default>"


_IMPL_DEFAULT = _ImplDefault()
_P = inspect.Parameter


def _call_signature(op: OpSpec) -> inspect.Signature:
    """How an op is called: its inputs positional-only, named as its impl names them (else x, or
    x1, x2, ...; a variadic op's *arrays), then its params (positional too, as NumPy's) with the
    impl's defaults; `(*inputs, **params)` if the impl's names cannot make a valid signature."""
    try:
        impl = dict(inspect.signature(op.impl).parameters)
    except (TypeError, ValueError):  # a builtin without a text signature
        impl = {}
    if op.variadic:
        star = next((p.name for p in impl.values() if p.kind is _P.VAR_POSITIONAL), "arrays")
        inputs = [_P(star, _P.VAR_POSITIONAL)]
    else:
        plain = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
        names = [n for n, p in impl.items() if p.kind in plain and n not in op.params][: op.nin]
        if len(names) < op.nin:
            names = ["x"] if op.nin == 1 else [f"x{i + 1}" for i in range(op.nin)]
        inputs = [_P(n, _P.POSITIONAL_ONLY) for n in names]
    params: list[inspect.Parameter] = []
    kind = _P.KEYWORD_ONLY if op.variadic else _P.POSITIONAL_OR_KEYWORD
    for name in op.params:
        default = impl[name].default if name in impl else _IMPL_DEFAULT
        if default is _P.empty and params and params[-1].default is not _P.empty:
            kind = _P.KEYWORD_ONLY  # a required param after a defaulted one: by keyword only
        params.append(_P(name, kind, default=default))
    try:
        return inspect.Signature([*inputs, *params])
    except ValueError:  # names the impl shares between an input and a param
        return inspect.Signature([_P("inputs", _P.VAR_POSITIONAL), _P("params", _P.VAR_KEYWORD)])


def _function_name(function: Callable[..., Any] | str) -> str:
    if isinstance(function, str):
        return function
    module = getattr(function, "__module__", None) or ("numpy" if isinstance(function, np.ufunc) else "")
    name = getattr(function, "__name__", repr(function))
    return f"{module}.{name}" if module else name


def _docstring(op: OpSpec) -> str:
    """The op's doc for help(): its own doc, then the NumPy functions it stands for, its other
    names, what its derivative flows through, its kinks (docs/ops.md lists the same per op)."""
    numpy_names = ", ".join(dict.fromkeys(_function_name(f) for f in op.numpy))
    first = op.doc.strip() or f"The adcore op {op.name}" + (
        f": {numpy_names}, differentiable" if numpy_names else ""
    )
    lines = [first, ""]
    if numpy_names:
        lines.append(f"NumPy: {numpy_names} (called on a traced value, it runs this op).")
    if op.aliases:
        lines.append(f"Also named: {', '.join(op.aliases)} (in adcore.numpy).")
    if op.differentiable is not None:
        lines.append(
            f"Derivatives flow through inputs {list(op.differentiable)} only; the others are constants."
        )
    for kink in op.kinks:
        lines.append(f"Kink: {kink.why or kink.inputs} (docs/conventions.md).")
    if op.accepts_complex:
        lines.append("Complex inputs: differentiated in JAX's convention (docs/complex.md).")
    lines.append(
        f"An adcore op (OpSpec {op.name!r}): on arrays it computes its NumPy reference; on traced "
        "values every backend differentiates it (docs/ops.md: its rules per backend)."
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class Case:
    """A composite function the conformance suite checks like an op (an MLP loss, a chain of
    ops): every backend's derivative of `fn` with respect to `argnums`, at each sample.

    `samples(rng, dtype)` draws the calls: each Sample's args are fn's positional
    arguments, its params fn's keyword arguments (held fixed).
    """

    name: str
    fn: Callable[..., Any]
    samples: SampleFn
    argnums: tuple[int, ...] = (0,)
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"case name {self.name!r} must be a Python identifier")
        if not callable(self.fn) or not callable(self.samples):
            raise TypeError(f"case {self.name!r}: fn and samples must be callable")


# --- sample domains ---------------------------------------------------------------


@dataclass(frozen=True)
class Domain:
    """Where an input's values are drawn from: uniform in [low, high], optionally away from zero,
    optionally `distinct`: no two within (high - low) / (2 n) of each other (no near-ties for
    max and min, which a finite difference would straddle)."""

    low: float = -2.0
    high: float = 2.0
    away_from_zero: float = 0.0
    distinct: bool = False

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """Values of `dtype`; a complex dtype draws its real and imaginary parts from the domain."""
        dtype = np.dtype(dtype)
        if dtype.kind == "c":
            part = np.finfo(dtype).dtype
            return (self.draw(rng, shape, part) + 1j * self.draw(rng, shape, part)).astype(dtype)
        values = rng.uniform(self.low, self.high, size=shape)
        if self.distinct:  # one value in each of n equal slots, jittered within the middle half
            n = values.size
            slots = rng.permutation(n) + 0.5 + rng.uniform(-0.25, 0.25, n)
            values = (self.low + (self.high - self.low) * slots / max(n, 1)).reshape(shape)
        if self.away_from_zero:
            # push values out of (-gap, gap), keeping their sign, so kinks are not sampled
            gap = self.away_from_zero
            values = np.where(values >= 0, np.maximum(values, gap), np.minimum(values, -gap))
        return np.asarray(values, dtype=dtype)


REAL = Domain()
WIDE = Domain(-3.0, 3.0)  # out into the tails: sinc, arcsinh, a plugin's erf
POSITIVE = Domain(0.5, 3.0)
UNIT_OPEN = Domain(-0.9, 0.9)  # arcsin, arccos
NONZERO = Domain(-2.0, 2.0, away_from_zero=0.3)  # abs, divide's denominator, kinks at 0

UNARY_SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 3), (0,))
# elementwise broadcasting pairs, including the seeds' 2x1 with 2x2
BROADCAST_SHAPES: tuple[tuple[tuple[int, ...], ...], ...] = (
    ((), ()),
    ((3,), (3,)),
    ((2, 1), (2, 2)),
    ((2, 3), ()),
    ((3,), (2, 3)),
    ((4, 1, 3), (2, 1)),
)


def elementwise_samples(
    *domains: Domain,
    shapes: Sequence[tuple[tuple[int, ...], ...]] | None = None,
    params: Sequence[dict] = ({},),
) -> SampleFn:
    """Samples for an elementwise op: one domain per input, unary shapes or broadcasting pairs."""
    if shapes is None:
        shapes = [(s,) * len(domains) for s in UNARY_SHAPES] if len(domains) == 1 else BROADCAST_SHAPES

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [
            Sample(tuple(d.draw(rng, s, dtype) for d, s in zip(domains, shape_set)), dict(p))
            for shape_set, p in itertools.product(shapes, params)
        ]

    return draw


def fixed_samples(*calls: tuple[tuple, dict], domain: Domain = REAL) -> SampleFn:
    """Samples from explicit (input shapes, params) pairs, values drawn from `domain`."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample(tuple(domain.draw(rng, s, dtype) for s in shapes), dict(p)) for shapes, p in calls]

    return draw
