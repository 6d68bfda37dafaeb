"""OpSpec: what an op computes (a NumPy reference impl) and where its inputs may be drawn from."""

from __future__ import annotations

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

    __call__ = bind  # op(*inputs, **params) is bind(op, *inputs, **params)

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
