"""Random programs for `adcore conformance --fuzz N`: small expression DAGs over the registered ops.

A program calls ops on 1-3 input arrays and returns its last value; every backend must
differentiate it as the engine's reference does. The catalogue of what a program may call is
read off the ops themselves, not a list of names: each op's samples give the ways it may be
called (a Signature: each input's shape, the non-float or non-differentiable inputs as the
sample's constants, the params), each input's domain (their values' range and, for ops sampled
away from zero, the gap around 0 they keep clear of) and its structure (square matrices; symmetric
positive definite ones). Elementwise ops take earlier values as they are (broadcasting between
them); any other op's operand is first mixed into the sample's shape by a constant random matrix
(reshape, matmul). The builder evaluates each value as it goes (with the ops' impls) and, where a
value falls outside the next op's domain, squashes it in with core ops: `lo + (hi - lo) *
sigmoid(v)`, or `lo + softplus(v)` below a positive domain (the log of a softplus); a square
matrix becomes I + tanh(B) / (2 n) (singular values in [1/2, 3/2]), a symmetric positive
definite one tanh(B) tanh(B)^T / n + I (so inv, solve, cholesky, eigh see well-conditioned
matrices). An op is skipped where its inputs come near a kink (OpSpec.kink_distance).
hypothesis draws the structure (ops, which earlier values feed them, signatures) and a seed for
the input values and mixing matrices, and shrinks a failing program; `Program.source` can be
pasted into a test.
"""

from __future__ import annotations

import functools
import math
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from adcore import ops as core_ops
from adcore.conformance.calls import Call
from adcore.conformance.checks import check_subject, op_support
from adcore.conformance.results import Cell, Subject, merge
from adcore.errors import MissingDependencyError
from adcore.plugins import get_registry
from adcore.spec import OpSpec, Sample

SUBJECT = "fuzz"
SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 1), (2, 3))  # inputs' shapes; they broadcast
INPUT_RANGE = (-3.0, 3.0)  # inputs are drawn wider than the ops' samples, so squashing is exercised
MAX_ELEMENTS = 9  # per value (a 3 x 3 matrix): keeps the symbolic backend's compile and numeric's steps cheap
MAX_STEPS = 5  # ops drawn per program (squashes come on top)
LARGE = 10.0  # no op input is larger than this in magnitude, whatever its samples
MAX_VALUE = LARGE**2  # nor any value a program computes
WHOLE_LINE = 1.5  # an input sampled beyond +-this is taken to be real-valued, to +-WIDE:
WIDE = 4.0  # past it tanh and sigmoid saturate, and float32 derivatives of the form 1 - y*y are noise
SAMPLE_DRAWS = 20  # rng seeds an op's samples are drawn with to read its domain off them
GAP_EVIDENCE = 0.05  # samples that all keep |v| above this avoid zero on purpose
EDGE_MARGIN = 0.02  # of a domain's width, kept clear of its ends by a squash
KINK_MARGIN = 0.05  # least distance of an op's inputs from its kinks
SHRINK_SECONDS = 20.0  # how long hypothesis may shrink a failing program
SQUARE, SPD = "square matrix", "symmetric positive definite"  # matrix inputs' structures
OPERAND_DRAWS = 4  # how far back operands are drawn, cycled for ops of more operands


def _hypothesis() -> Any:
    try:
        import hypothesis
    except ImportError as e:
        raise MissingDependencyError(
            "adcore conformance --fuzz draws its random programs with hypothesis, which is not "
            "installed: pip install 'adcore[fuzz]'"
        ) from e
    return hypothesis


# --- where an op may be called --------------------------------------------------------


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
class Signature:
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
    signatures: tuple[Signature, ...] = (Signature((None,)),)


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
            if _is_float(a) and op.is_differentiable(i):
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


def _signatures(op: OpSpec) -> tuple[Signature, ...]:
    """The ways a program may call `op`, one per distinct sample (shapes and params) whose fed
    inputs are non-empty and at most MAX_ELEMENTS each, and whose params and constant inputs a
    program's source can write (not an object with no source, as an ODE's dynamics)."""
    found: dict[str, Signature] = {}
    for sample in op.samples(np.random.default_rng(0), np.dtype(np.float64)):
        fed = [i for i, a in enumerate(sample.args) if _is_float(a) and op.is_differentiable(i)]
        if not fed or any(not 0 < np.size(sample.args[i]) <= MAX_ELEMENTS for i in fed):
            continue
        # a Python int among a line's args is the index of a value: a constant int goes as np.int64
        constants = {i: np.int64(a) if _is_value(a) else a for i, a in enumerate(sample.args) if i not in fed}
        if not all(map(_writable, [*constants.values(), *sample.params.values()])):
            continue
        shapes = tuple(None if op.elementwise else np.shape(a) for a in sample.args)
        key = repr(
            (shapes, sorted(sample.params.items(), key=str), [(i, repr(a)) for i, a in constants.items()])
        )
        found.setdefault(key, Signature(shapes, constants, dict(sample.params)))
    return tuple(found.values())


@dataclass(frozen=True)
class _Unfit:
    op: str
    why: str


def catalogue(ops: Sequence[str] | None = None) -> tuple[Choice, ...]:
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


def _is_float(a: Any) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "f"


# --- programs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One op call: each arg an earlier value's index (ints; the inputs come first) or a constant
    (a float, or an array: a mixing matrix, an identity, an op's non-float input)."""

    op: str
    args: tuple[Any, ...]
    params: tuple[tuple[str, Any], ...] = ()


def _is_value(a: Any) -> bool:
    return isinstance(a, int) and not isinstance(a, bool)


@dataclass(eq=False)  # the symbolic backend caches per function object, so identity matters
class Program:
    """A random function of its inputs, with the input values to differentiate it at."""

    inputs: tuple[np.ndarray, ...]
    lines: tuple[Line, ...]

    def __call__(self, *xs: Any) -> Any:
        values = list(xs)
        for j, line in enumerate(self.lines):
            args = [values[a] if _is_value(a) else a for a in line.args]
            op, params = core_ops[line.op], dict(line.params)
            value = op(*args, **params)
            if op.gauge is not None:  # LAPACK's signs on the branch of the program's own inputs
                value = op.gauge(value, self._centres[j], *args, **params)
            values.append(value)
        return values[-1]

    @functools.cached_property
    def _centres(self) -> list:
        """Each line's value at the program's inputs, which an op's gauge aligns to (OpSpec.gauge):
        a finite difference of the program then follows one branch of LAPACK's signs."""
        values = list(self.inputs)
        for line in self.lines:
            args = [values[a] if _is_value(a) else a for a in line.args]
            values.append(core_ops[line.op](*args, **dict(line.params)))
        return values[len(self.inputs) :]

    @property
    def ops(self) -> set[str]:
        return {line.op for line in self.lines}

    def astype(self, dtype: str) -> Program:
        """The same program at its input values (and float constants) rounded to `dtype`."""
        lines = tuple(
            replace(
                line,
                args=tuple(a.astype(dtype) if _is_float(a) else a for a in line.args),
                params=_in_dtype(line.params, dtype),
            )
            for line in self.lines
        )
        return Program(tuple(x.astype(dtype) for x in self.inputs), lines)

    @property
    def source(self) -> str:
        """Python source defining `f` and its inputs, to paste into a test."""
        k = len(self.inputs)
        names = [f"x{i}" for i in range(k)] + [f"v{j}" for j in range(len(self.lines))]
        xs = ", ".join(names[:k])
        body = "".join(f"    {names[k + j]} = {_call(line, names)}\n" for j, line in enumerate(self.lines))
        inputs = "".join(f"x{i} = {_array_source(x)}\n" for i, x in enumerate(self.inputs))
        check = f"adcore.jacobian(f, argnums={tuple(range(k))}, backend=name)({xs})"
        return (
            f"import numpy as np\n\nimport adcore\n\n\ndef f({xs}):\n{body}    return {names[-1]}\n\n\n"
            f"{inputs}# every backend must agree:\n# for name in adcore.backends(): {check}\n"
        )

    def __repr__(self) -> str:
        inputs = ", ".join(f"x{i}: {x.dtype} {x.shape}" for i, x in enumerate(self.inputs))
        return f"<Program of {inputs}: {', '.join(line.op for line in self.lines)}>"


def _array_source(a: np.ndarray) -> str:
    return f"np.array({_source(a.tolist())}, dtype=np.{a.dtype})"


def _source(value: Any) -> str:
    """Python source for a constant or param: arrays and dtypes as NumPy expressions."""
    if isinstance(value, np.ndarray):
        return _array_source(value)
    if _is_dtype(value):
        return f"np.{np.dtype(value).name}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(map(_source, value)) + ("," if isinstance(value, tuple) and len(value) == 1 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):  # nan_to_num's samples
        return "np.nan" if np.isnan(value) else "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def _writable(value: Any) -> bool:
    """Whether _source(value) is a Python expression."""
    try:
        compile(_source(value), "<param>", "eval")
    except SyntaxError:
        return False
    return True


def _is_dtype(value: Any) -> bool:
    return isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic))


def _in_dtype(params: tuple[tuple[str, Any], ...], dtype: Any) -> tuple[tuple[str, Any], ...]:
    """The params with each dtype among them (sum's dtype=, astype's) the program's own."""
    return tuple((key, np.dtype(dtype) if _is_dtype(value) else value) for key, value in params)


def _call(line: Line, names: list[str]) -> str:
    args = [names[a] if _is_value(a) else _source(a) for a in line.args]
    args += [f"{key}={_source(value)}" for key, value in line.params]
    return f"adcore.ops.{line.op}({', '.join(args)})"


class Builder:
    """A program under construction, with the value of everything it has computed so far."""

    def __init__(self, inputs: Sequence[np.ndarray], rng: np.random.Generator | None = None) -> None:
        self.inputs = tuple(inputs)
        self.values: list[np.ndarray] = list(self.inputs)
        self.lines: list[Line] = []
        self.rng = rng if rng is not None else np.random.default_rng(0)

    @property
    def dtype(self) -> np.dtype:
        return self.inputs[0].dtype

    def call(self, choice: Choice, operands: Sequence[int], signature: Signature, positive: bool) -> bool:
        """Append choice.op(...) as `signature` calls it, each operand fitted to its shape and
        squashed into its domain first: the widened domain if the op's values stay moderate there,
        else the sampled one. False (and nothing but squashes appended) where the call cannot be
        made safely."""
        fed = signature.operands
        fitted = [self.fit(i, signature.shapes[p]) for i, p in zip(operands, fed)]
        if None in fitted or len(fitted) < len(fed):
            return False
        domains = [choice.domains[min(p, len(choice.domains) - 1)] for p in fed]
        wide = tuple(d.widened() for d in domains)
        for these in dict.fromkeys((wide, tuple(domains))):
            args = [self.into(i, domain, positive) for i, domain in zip(fitted, these)]
            if None in args:
                continue
            full = [signature.constants.get(p) for p in range(len(signature.shapes))]
            for p, a in zip(fed, args):
                full[p] = a
            line = Line(choice.op, tuple(full), _in_dtype(tuple(signature.params.items()), self.dtype))
            if not self._near_kink(line) and self._append(line) is not None:
                return True
        return False

    def _near_kink(self, line: Line) -> bool:
        distance = get_registry().op(line.op).kink_distance
        if distance is None:
            return False
        try:
            with np.errstate(all="ignore"):
                return not np.all(distance(*self._args(line), **dict(line.params)) >= KINK_MARGIN)
        except (ValueError, TypeError, IndexError):  # shapes that do not fit: the call itself fails
            return True

    def fit(self, index: int, shape: tuple[int, ...] | None) -> int | None:
        """The index of value `index` if it has `shape` (or `shape` is None), else of a mix of
        it into that shape: reshape(M @ ravel(v), shape) with a constant random M."""
        v = self.values[index]
        if shape is None or v.shape == tuple(shape):
            return index
        size = int(np.prod(shape))
        mixing = self.rng.uniform(-1, 1, (size, v.size)) / math.sqrt(v.size)
        flat = self._append(Line(core_ops.reshape.name, (index,), (("shape", (-1,)),)))
        mixed = flat is not None and self._append(
            Line(core_ops.matmul.name, (mixing.astype(self.dtype), flat))
        )
        if not mixed:
            return None
        return self._append(Line(core_ops.reshape.name, (mixed,), (("shape", tuple(shape)),)))

    def into(self, index: int, domain: InputDomain, positive: bool) -> int | None:
        """The index of value `index` if it is in `domain`, else of a squash of it into the domain
        (a matrix into its structure)."""
        if domain.structure:
            return self._structured(index, domain.structure)
        v = self.values[index]
        if domain.holds(v):
            return index
        low, high = domain.target(positive)
        if low >= high:
            return None
        if low > 0 and np.all(np.logaddexp(0, v) + low <= high):  # the log of a softplus
            steps = [(core_ops.softplus, ()), (core_ops.add, (low,))]
        else:  # scaled into +-WIDE first, where the sigmoid does not saturate
            slope = round(WIDE / max(float(np.max(np.abs(v))), WIDE), 2)
            steps = [(core_ops.multiply, (slope,))] if slope < 1 else []
            steps += [
                (core_ops.sigmoid, ()),
                (core_ops.multiply, (round(high - low, 2),)),
                (core_ops.add, (low,)),
            ]
        for op, constants in steps:
            index = self._append(Line(op.name, constants + (index,)))
            if index is None:
                return None
        return index if domain.holds(self.values[index]) else None

    def squash(self, index: int) -> int | None:
        """tanh of value `index` (what a program computes when every op it drew was skipped)."""
        return self._append(Line(core_ops.tanh.name, (index,)))

    def _structured(self, index: int, structure: str) -> int | None:
        """A square matrix (stack) as I + tanh(B) / (2 n), or, for SPD, tanh(B) tanh(B)^T / n + I."""
        v = self.values[index]
        n = v.shape[-1]
        eye = np.eye(n, dtype=self.dtype)
        bounded = self._append(Line(core_ops.tanh.name, (index,)))
        if bounded is None:
            return None
        if structure == SPD:
            axes = (*range(v.ndim - 2), v.ndim - 1, v.ndim - 2)
            steps = [
                Line(core_ops.transpose.name, (bounded,), (("axes", axes),)),
                Line(core_ops.matmul.name, (bounded, None)),  # None: the value just appended
                Line(core_ops.multiply.name, (round(1 / n, 6), None)),
                Line(core_ops.add.name, (None, eye)),
            ]
        else:
            steps = [
                Line(core_ops.multiply.name, (round(1 / (2 * n), 6), bounded)),
                Line(core_ops.add.name, (None, eye)),
            ]
        last = bounded
        for line in steps:
            line = replace(line, args=tuple(last if a is None else a for a in line.args))
            last = self._append(line)
            if last is None:
                return None
        return last

    def _append(self, line: Line) -> int | None:
        """Evaluate `line` and append it; None (nothing appended) if it fails, is too big or is not
        one float array."""
        op = get_registry().op(line.op)
        try:
            with np.errstate(all="ignore"):
                value = op.impl(*self._args(line), **dict(line.params))
        except (
            ValueError,
            TypeError,
            IndexError,
            ArithmeticError,
            np.linalg.LinAlgError,
        ):  # shapes that do not fit
            return None
        if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind != "f":
            return None
        value = np.asarray(value)
        if value.size > MAX_ELEMENTS or not np.all(np.abs(value) <= MAX_VALUE):  # nan fails too
            return None
        self.values.append(value.astype(self.dtype, copy=False))
        self.lines.append(line)
        return len(self.values) - 1

    def _args(self, line: Line) -> list:
        return [self.values[a] if _is_value(a) else a for a in line.args]

    def program(self) -> Program:
        """The program computing the last value: only the lines it needs, renumbered."""
        k = len(self.inputs)
        needed = {len(self.values) - 1}
        for j in reversed(range(len(self.lines))):
            if k + j in needed:
                needed |= {a for a in self.lines[j].args if _is_value(a)}
        kept = [j for j in range(len(self.lines)) if k + j in needed]
        renumber = {i: i for i in range(k)} | {k + j: k + n for n, j in enumerate(kept)}
        lines = []
        for line in (self.lines[j] for j in kept):
            lines.append(replace(line, args=tuple(renumber[a] if _is_value(a) else a for a in line.args)))
        return Program(self.inputs, tuple(lines))


def programs(dtype: str = "float64", max_steps: int = MAX_STEPS, ops: Sequence[str] | None = None) -> Any:
    """A hypothesis strategy of random programs calling `ops` (default: every op that fits, see
    `catalogue`) and the core ops that fit and squash values into domains, inputs in `dtype`."""
    st = _hypothesis().strategies
    choices = catalogue(ops)

    # a step: the op (None: no op, so shrinking can delete steps), how far back each operand
    # is (mostly the newest value; each further operand counts from the one before), which of
    # its signatures, and the side of zero a squash lands on (for inputs that avoid zero)
    backs = st.lists(st.integers(0, 7), min_size=OPERAND_DRAWS, max_size=OPERAND_DRAWS)
    step = st.tuples(st.sampled_from((None, *choices)), backs, st.integers(0, 15), st.booleans())

    @st.composite
    def draw_program(draw: Callable[[Any], Any]) -> Program:
        shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        builder = Builder(
            [np.asarray(rng.uniform(*INPUT_RANGE, shape), dtype=dtype) for shape in shapes], rng
        )
        for choice, back, which, positive in draw(st.lists(step, min_size=2, max_size=max_steps)):
            if choice is None:
                continue
            signature = choice.signatures[which % len(choice.signatures)]
            last = len(builder.values) - 1
            fed = signature.operands
            operands = [last - (back[k % OPERAND_DRAWS] // 3 + k) % (last + 1) for k in range(len(fed))]
            builder.call(choice, operands, signature, positive)
        if not builder.lines:  # every op drawn was skipped: a program still computes something
            builder.squash(len(builder.values) - 1)
        return builder.program()

    return draw_program()


# --- checking programs on every backend -------------------------------------------------


def check_program(
    program: Program, backends: Sequence[str], dtype: str, label: str, seed: int = 0
) -> list[Cell]:
    """The cells of one program in one dtype, one per backend (subject "fuzz")."""
    registry = get_registry()
    supports = [op_support(registry, registry.op(name)) for name in sorted(program.ops)]

    def supported(backend: str) -> str:
        return next((reason for support in supports if (reason := support(backend))), "")

    inputs = program.astype(dtype).inputs
    # one function object (the program) for every dtype: symbolic compiles it once per shape
    call = Call(program, inputs, tuple(range(len(inputs))), label=label)
    return check_subject(SUBJECT, [call], backends, dtype, supported, seed=seed)


class _ProgramFailed(Exception):
    """Raised in hypothesis' test for a program some backend gets wrong, so that it shrinks it."""


@dataclass
class _Failure:
    program: Program
    number: int  # which program of the run
    cells: list[Cell]  # its failing cells


class FuzzRun:
    """One run: n distinct programs checked on each backend in each dtype, their cells, and the
    first failing program (shrunk by hypothesis), kept across hypothesis' calls."""

    def __init__(self, n: int, backends: Sequence[str], dtypes: Sequence[str], seed: int = 0) -> None:
        self.n, self.backends, self.dtypes, self.seed = n, list(backends), list(dtypes), seed
        self.sources: list[str] = []  # of the programs checked, in order
        self.cells: dict[tuple[str, str], list[Cell]] = {(b, d): [] for d in dtypes for b in backends}
        self.failure: _Failure | None = None  # the first failing program, then its smallest shrink
        self.outcomes: dict[str, bool] = {}  # program source -> whether it failed
        self.shrink_until = math.inf

    @property
    def checked(self) -> int:
        return len(self.sources)

    def run(self, strategy: Any) -> FuzzRun:
        """Draw programs from `strategy` until n distinct ones are checked or one fails."""
        hypothesis = _hypothesis()
        for round_ in range(10):  # hypothesis repeats itself: ask for more, and again if short
            if self.checked >= self.n or self.failure is not None:
                break

            @hypothesis.seed(self.seed * 1000 + round_)
            @hypothesis.settings(
                max_examples=2 * (self.n - self.checked) + 10,
                database=None,
                derandomize=False,
                deadline=None,
                phases=(hypothesis.Phase.generate, hypothesis.Phase.shrink),
                suppress_health_check=list(hypothesis.HealthCheck),
                report_multiple_bugs=False,
                verbosity=hypothesis.Verbosity.quiet,
                print_blob=False,
            )
            @hypothesis.given(strategy)
            def test(program: Program) -> None:
                self.examine(program)

            try:
                test()
            except _ProgramFailed:
                pass
        return self

    def examine(self, program: Program) -> None:
        """hypothesis' test: raise for a failing program, so that hypothesis shrinks it (from
        this one line: hypothesis tells failures apart by where they are raised)."""
        if self._fails(program):
            raise _ProgramFailed

    def _fails(self, program: Program) -> bool:
        """Check a program not seen before: the run's next one, or, once one failed, a smaller
        candidate of hypothesis' (while SHRINK_SECONDS last)."""
        source = program.source
        if source not in self.outcomes:
            if self.failure is None:
                if self.checked >= self.n:
                    return False
                self.outcomes[source] = self._check_next(program)
            else:
                self.outcomes[source] = time.monotonic() < self.shrink_until and self._still_fails(program)
        return self.outcomes[source]

    def _check_next(self, program: Program) -> bool:
        self.sources.append(program.source)
        label = f"program #{self.checked}"
        cells = [c for d in self.dtypes for c in check_program(program, self.backends, d, label, self.seed)]
        for cell in cells:
            self.cells[cell.backend, cell.dtype].append(cell)
        failed = [c for c in cells if c.failed]
        if failed:
            self.failure = _Failure(program, self.checked, failed)
            self.shrink_until = time.monotonic() + SHRINK_SECONDS
        return bool(failed)

    def _still_fails(self, program: Program) -> bool:
        """Whether a candidate fails where the failing program did (kept if it is smaller)."""
        failure = self.failure
        label = f"program #{failure.number}, shrunk"
        backends = list(dict.fromkeys(c.backend for c in failure.cells))
        cells = []
        for dtype in dict.fromkeys(c.dtype for c in failure.cells):
            cells += [c for c in check_program(program, backends, dtype, label, self.seed) if c.failed]
        if cells and _size(program) < _size(failure.program):
            self.failure = _Failure(program, failure.number, cells)
        return bool(cells)

    def subject_and_cells(self) -> tuple[Subject, list[Cell]]:
        """One subject for the whole run and one cell per (backend, dtype): the programs' cells
        merged, or where one failed, the failing program's verdict (its source is the subject's)."""
        source, failing = "", {}
        if self.failure is not None:
            header = (
                f"# adcore conformance --fuzz {self.n} --seed {self.seed}: program #{self.failure.number}"
            )
            program = self.failure.program.astype(self.failure.cells[0].dtype)  # the dtype it fails in
            source = f"{header}\n{program.source}"
            failing = {(c.backend, c.dtype): c for c in self.failure.cells}
        cells = []
        for (backend, dtype), found in self.cells.items():
            cell = merge(found) or Cell(SUBJECT, backend, dtype, "unsupported", message="no program checked")
            if (backend, dtype) in failing:
                bad = failing[backend, dtype]
                message = f"{bad.message}; that program is the fuzz subject's source"
                cell = replace(cell, status=bad.status, worst=bad.worst, message=message)
            elif cell.status == "agrees":
                cell = replace(cell, message=f"{len(found)} programs")
            cells.append(cell)
        return Subject(SUBJECT, "fuzz", "core", source), cells


def _size(program: Program) -> tuple[int, int]:
    return len(program.lines), len(program.source)


def run_fuzz(
    n: int, backends: Sequence[str], dtypes: Sequence[str], seed: int = 0, ops: Sequence[str] | None = None
) -> tuple[Subject, list[Cell]]:
    """Check `n` distinct random programs (drawn with `seed`, from `ops` or every op that fits)
    on each backend in each dtype: one "fuzz" subject and one cell per (backend, dtype). The
    first failing program ends the run; hypothesis shrinks it for at most SHRINK_SECONDS."""
    return FuzzRun(n, backends, dtypes, seed).run(programs("float64", ops=ops)).subject_and_cells()
