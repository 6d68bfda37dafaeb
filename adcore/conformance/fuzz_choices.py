"""Where a random program may call each op (`adcore conformance --fuzz`): its inputs' domains and
structures and the ways its samples call it, read off the op's samples, not a list of names."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from adcore.conformance.random_program import is_float, is_value, writable
from adcore.plugins import get_registry
from adcore.spec import OpSpec, Sample

MAX_ELEMENTS = 9  # per value (a 3 x 3 matrix): keeps the symbolic backend's compile and numeric's steps cheap
LARGE = 10.0  # no op input is larger than this in magnitude, whatever its samples
MAX_VALUE = LARGE**2  # nor any value a program computes
WHOLE_LINE = 1.5  # an input sampled beyond +-this is taken to be real-valued, to +-WIDE:
WIDE = 4.0  # past it tanh and sigmoid saturate, and float32 derivatives of the form 1 - y*y are noise
SAMPLE_DRAWS = 20  # rng seeds an op's samples are drawn with to read its domain off them
GAP_EVIDENCE = 0.05  # samples that all keep |v| above this avoid zero on purpose
EDGE_MARGIN = 0.02  # of a domain's width, kept clear of its ends by a squash
SQUARE, SPD = "square matrix", "symmetric positive definite"  # matrix inputs' structures


@dataclass(frozen=True)
class InputDomain:
    """Where an op input's values may lie: [low, high], and |v| >= gap; and the structure its
    matrices have in every sample ("" none, SQUARE, SPD)."""

    low: float
    high: float
    gap: float = 0.0
    structure: str = ""

    def holds(self, values: np.ndarray) -> bool:
        """All of `values` are finite and in the domain."""
        v = np.asarray(values, dtype=np.float64)
        return bool(
            np.all(np.isfinite(v))
            and np.all((v >= max(self.low, -LARGE)) & (v <= min(self.high, LARGE)))
            and np.all(np.abs(v) >= self.gap)
        )

    def widened(self) -> InputDomain:
        """The real line (to +-WIDE), but the gap, if the samples span zero widely (REAL)."""
        if self.low <= -WHOLE_LINE and self.high >= WHOLE_LINE:
            return replace(self, low=min(self.low, -WIDE), high=max(self.high, WIDE))
        return self

    def target(self, positive: bool) -> tuple[float, float]:
        """The interval a squash maps onto: inside the domain, clear of its ends, on one side of
        the gap (the positive one if `positive`)."""
        low, high = max(self.low, -LARGE), min(self.high, LARGE)
        margin = EDGE_MARGIN * (high - low)
        if self.gap and positive:
            low = self.gap
        elif self.gap:
            high = -self.gap
        return math.ceil((low + margin) * 100) / 100, math.floor((high - margin) * 100) / 100


@dataclass(frozen=True, eq=False)
class OpSignature:
    """One way to call an op, from one of its samples: the shape of each input a program value
    feeds (None: as the value is, for elementwise ops), the other inputs as the sample's constants
    (by position), and the params."""

    shapes: tuple[tuple[int, ...] | None, ...]
    constants: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    @property
    def operands(self) -> list[int]:
        """The positions program values feed."""
        return [i for i in range(len(self.shapes)) if i not in self.constants]


@dataclass(frozen=True, eq=False)
class Choice:
    """An op a program may call: its input domains (by position) and the ways it may be called."""

    op: str
    domains: tuple[InputDomain, ...]
    signatures: tuple[OpSignature, ...] = (OpSignature((None,)),)


_samples: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _drawn(op: OpSpec) -> list[Sample]:
    """The op's float64 samples over SAMPLE_DRAWS seeds (the first seed's first)."""
    if op not in _samples:
        _samples[op] = [
            s
            for seed in range(SAMPLE_DRAWS)
            for s in op.samples(np.random.default_rng(seed), np.dtype(np.float64))
        ]
    return _samples[op]


def sampled_domains(op: OpSpec) -> tuple[InputDomain, ...] | None:
    """Each input's domain as the op's samples show it (None if no input is ever a float)."""
    drawn: dict[int, list[np.ndarray]] = {}
    for sample in _drawn(op):
        for i, a in enumerate(sample.args):
            if is_float(a) and op.is_differentiable(i):
                drawn.setdefault(i, []).append(np.asarray(a))
    if not drawn:
        return None
    width = max(drawn) + 1
    return tuple(_domain_of(drawn[i]) if i in drawn else InputDomain(-LARGE, LARGE) for i in range(width))


def _domain_of(arrays: list[np.ndarray]) -> InputDomain:
    v = np.concatenate([a.ravel() for a in arrays])
    if v.size == 0:
        return InputDomain(-LARGE, LARGE)
    low, high, nearest = float(v.min()), float(v.max()), float(np.abs(v).min())
    gap = nearest if low < 0 < high and nearest >= GAP_EVIDENCE else 0.0
    return InputDomain(low, high, gap, _structure(arrays))


def _structure(arrays: list[np.ndarray]) -> str:
    """SPD if every sampled array is a stack of symmetric positive definite matrices, SQUARE if
    of square ones (some 2 x 2 or larger), else ""."""
    square = [a for a in arrays if a.ndim >= 2 and a.shape[-1] == a.shape[-2]]
    if not arrays or len(square) < len(arrays) or all(a.shape[-1] < 2 for a in square):
        return ""
    symmetric = all(np.allclose(a, np.swapaxes(a, -1, -2)) for a in square)
    if symmetric and all(np.all(np.linalg.eigvalsh(a) > 0) for a in square):
        return SPD
    return SQUARE


def _signatures(op: OpSpec) -> tuple[OpSignature, ...]:
    """The ways a program may call `op`, one per distinct sample (shapes and params) whose fed
    inputs are non-empty and at most MAX_ELEMENTS each, and whose params and constant inputs a
    program's source can write (not an object with no source, as an ODE's dynamics)."""
    found: dict[str, OpSignature] = {}
    for sample in op.samples(np.random.default_rng(0), np.dtype(np.float64)):
        fed = [i for i, a in enumerate(sample.args) if is_float(a) and op.is_differentiable(i)]
        if not fed or any(not 0 < np.size(sample.args[i]) <= MAX_ELEMENTS for i in fed):
            continue
        # a Python int among a line's args is the index of a value: a constant int goes as np.int64
        constants = {i: np.int64(a) if is_value(a) else a for i, a in enumerate(sample.args) if i not in fed}
        if not all(map(writable, [*constants.values(), *sample.params.values()])):
            continue
        shapes = tuple(None if op.elementwise else np.shape(a) for a in sample.args)
        key = repr(
            (shapes, sorted(sample.params.items(), key=str), [(i, repr(a)) for i, a in constants.items()])
        )
        found.setdefault(key, OpSignature(shapes, constants, dict(sample.params)))
    return tuple(found.values())


@dataclass(frozen=True)
class _Unfit:
    op: str
    why: str


def choices(ops: Sequence[str] | None = None) -> tuple[Choice, ...]:
    """What programs are built from (`ops`, or every registered op that fits): an op with samples
    in which some float input is differentiable and of at most MAX_ELEMENTS elements, called as
    its samples call it."""
    registry = get_registry()
    names = sorted(registry.ops) if ops is None else [registry.op(name).name for name in ops]
    found = [_choice(registry.op(name)) for name in names]
    unfit = [c for c in found if isinstance(c, _Unfit)]
    if ops is not None and unfit:
        raise ValueError(
            "random programs cannot call "
            + "; ".join(f"{u.op} ({u.why})" for u in unfit)
            + ": they call ops with samples whose differentiable float inputs have at most "
            f"{MAX_ELEMENTS} elements"
        )
    return tuple(c for c in found if isinstance(c, Choice))


_choices: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _choice(op: OpSpec) -> Choice | _Unfit:
    if op not in _choices:
        _choices[op] = _make_choice(op)
    return _choices[op]


def _make_choice(op: OpSpec) -> Choice | _Unfit:
    if op.samples is None:
        return _Unfit(op.name, "no samples")
    if not op.variadic and op.differentiable == ():
        return _Unfit(op.name, "no differentiable input")
    domains = sampled_domains(op)
    signatures = _signatures(op)
    if domains is None or not signatures:
        return _Unfit(
            op.name, "no sample with a small differentiable float input and params written as source"
        )
    return Choice(op.name, domains, signatures)
