"""Random programs for `adcore conformance --fuzz N`: small expression DAGs over the registered ops.

A program calls ops on 1-3 input arrays and returns its last value; every backend must
differentiate it as the engine's reference does. What a program may call (`fuzz_choices`)
is read off the ops themselves, not a list of names: each op's samples give the ways it may be
called (a OpSignature: each input's shape, the non-float or non-differentiable inputs as the
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
the input values and mixing matrices, and shrinks a failing program; `RandomProgram.source` can be
pasted into a test.

A run is cut into chunks of CHUNK programs, each checked by a FuzzRun, each a task of the engine's
map, merged in chunk order: see fuzz_chunks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from adcore import ops as core_ops
from adcore.conformance.abilities import columns
from adcore.conformance.calls import CheckedCall
from adcore.conformance.checks import check_subject, op_support
from adcore.conformance.fuzz_choices import (
    MAX_ELEMENTS,
    MAX_VALUE,
    SPD,
    WIDE,
    Choice,
    InputDomain,
    OpSignature,
    choices,
)
from adcore.conformance.random_program import Line, RandomProgram, in_dtype, is_value
from adcore.conformance.results import Cell
from adcore.errors import MissingDependencyError
from adcore.plugins import get_registry

SUBJECT = "fuzz"
SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 1), (2, 3))  # inputs' shapes; they broadcast
INPUT_RANGE = (-3.0, 3.0)  # inputs are drawn wider than the ops' samples, so squashing is exercised
MAX_STEPS = 5  # ops drawn per program (squashes come on top)
KINK_MARGIN = 0.05  # least distance of an op's inputs from its kinks
CHUNK = 25  # programs a task checks
SHRINK_CANDIDATES = 200  # smaller programs a failing one's chunk may check while hypothesis shrinks it
OPERAND_DRAWS = 4  # how far back operands are drawn, cycled for ops of more operands


def import_hypothesis() -> Any:
    try:
        import hypothesis
    except ImportError as e:
        raise MissingDependencyError(
            "adcore conformance --fuzz draws its random programs with hypothesis, which is not "
            "installed: pip install 'adcore[fuzz]'"
        ) from e
    return hypothesis


# --- building programs ---------------------------------------------------------------


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

    def call(self, choice: Choice, operands: Sequence[int], signature: OpSignature, positive: bool) -> bool:
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
            line = Line(choice.op, tuple(full), in_dtype(tuple(signature.params.items()), self.dtype))
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
        return [self.values[a] if is_value(a) else a for a in line.args]

    def program(self) -> RandomProgram:
        """The program computing the last value: only the lines it needs, renumbered."""
        k = len(self.inputs)
        needed = {len(self.values) - 1}
        for j in reversed(range(len(self.lines))):
            if k + j in needed:
                needed |= {a for a in self.lines[j].args if is_value(a)}
        kept = [j for j in range(len(self.lines)) if k + j in needed]
        renumber = {i: i for i in range(k)} | {k + j: k + n for n, j in enumerate(kept)}
        lines = []
        for line in (self.lines[j] for j in kept):
            lines.append(replace(line, args=tuple(renumber[a] if is_value(a) else a for a in line.args)))
        return RandomProgram(self.inputs, tuple(lines))


def programs(
    dtype: str = "float64", max_steps: int = MAX_STEPS, ops: Sequence[str] | None = None, salt: int = 0
) -> Any:
    """A hypothesis strategy of random programs calling `ops` (default: every op that fits, see
    `choices`) and the core ops that fit and squash values into domains, inputs in `dtype`; the
    values' seeds are mixed with `salt` (a chunk's index)."""
    st = import_hypothesis().strategies
    drawn = choices(ops)

    # a step: the op (None: no op, so shrinking can delete steps), how far back each operand
    # is (mostly the newest value; each further operand counts from the one before), which of
    # its signatures, and the side of zero a squash lands on (for inputs that avoid zero)
    backs = st.lists(st.integers(0, 7), min_size=OPERAND_DRAWS, max_size=OPERAND_DRAWS)
    step = st.tuples(st.sampled_from((None, *drawn)), backs, st.integers(0, 15), st.booleans())

    @st.composite
    def draw_program(draw: Callable[[Any], Any]) -> RandomProgram:
        shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
        rng = np.random.default_rng((salt, draw(st.integers(0, 2**32 - 1))))
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
    program: RandomProgram, backends: Sequence[str], dtype: str, label: str, seed: int = 0
) -> list[Cell]:
    """The cells of one program in one dtype, one per backend (subject "fuzz")."""
    registry = get_registry()
    supports = [op_support(registry, registry.op(name)) for name in sorted(program.ops)]

    def supported(backend: str) -> str:
        return next((reason for support in supports if (reason := support(backend))), "")

    inputs = program.astype(dtype).inputs
    # one function object (the program's) for every dtype: symbolic compiles it once per shape
    call = CheckedCall(program.function, inputs, tuple(range(len(inputs))), label=label)
    return check_subject(SUBJECT, [call], backends, dtype, supported, seed=seed)


class _ProgramFailed(Exception):
    """Raised in hypothesis' test for a program some backend gets wrong, so that it shrinks it."""


@dataclass
class Checked:
    """A program as checked: its number in the run ("program #i"), its source and its cells (for a
    failing program shrunk: its source in the dtype it fails in, and its failing cells)."""

    number: int
    source: str
    cells: list[Cell]


@dataclass
class ChunkResult:
    """A chunk's programs as checked, and its failing program (shrunk), if one failed."""

    index: int
    programs: list[Checked]
    failure: Checked | None


@dataclass
class _Failure:
    program: RandomProgram
    number: int  # which program of the run
    cells: list[Cell]  # its failing cells


class FuzzRun:
    """One chunk's programs: n distinct ones checked on each backend in each dtype, numbered from
    chunk * CHUNK + 1, and the first failing one (shrunk by hypothesis), kept across hypothesis' calls."""

    def __init__(
        self, n: int, backends: Sequence[str], dtypes: Sequence[str], seed: int = 0, chunk: int = 0
    ) -> None:
        self.n, self.backends, self.dtypes, self.seed = n, columns(backends), list(dtypes), seed
        self.chunk = chunk
        self.programs: list[Checked] = []  # in the order they were checked
        self.failure: _Failure | None = None  # the first failing program, then its smallest shrink
        self.outcomes: dict[str, bool] = {}  # program source -> whether it failed
        self.shrink_left = SHRINK_CANDIDATES

    @property
    def checked(self) -> int:
        return len(self.programs)

    @property
    def sources(self) -> list[str]:
        return [p.source for p in self.programs]

    def run(self, strategy: Any) -> FuzzRun:
        """Draw programs from `strategy` until n distinct ones are checked or one fails."""
        hypothesis = import_hypothesis()
        for round_ in range(10):  # hypothesis repeats itself: ask for more, and again if short
            if self.checked >= self.n or self.failure is not None:
                break

            @hypothesis.seed(f"{self.seed}/{self.chunk}/{round_}")  # a str seeds the same in any process
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
            def test(program: RandomProgram) -> None:
                self.examine(program)

            try:
                test()
            except _ProgramFailed:
                pass
        return self

    def examine(self, program: RandomProgram) -> None:
        """hypothesis' test: raise for a failing program, so that hypothesis shrinks it (from
        this one line: hypothesis tells failures apart by where they are raised)."""
        if self._fails(program):
            raise _ProgramFailed

    def _fails(self, program: RandomProgram) -> bool:
        """Check a program not seen before: the run's next one, or, once one failed, a smaller
        candidate of hypothesis' (the first SHRINK_CANDIDATES of them)."""
        source = program.source
        if source not in self.outcomes:
            if self.failure is None:
                if self.checked >= self.n:
                    return False
                self.outcomes[source] = self._check_next(program)
            else:
                self.outcomes[source] = self.shrink_left > 0 and self._still_fails(program)
        return self.outcomes[source]

    def _check_next(self, program: RandomProgram) -> bool:
        number = self.chunk * CHUNK + self.checked + 1
        label = f"program #{number}"
        cells = [c for d in self.dtypes for c in check_program(program, self.backends, d, label, self.seed)]
        self.programs.append(Checked(number, program.source, cells))
        failed = [c for c in cells if c.failed]
        if failed:
            self.failure = _Failure(program, number, failed)
        return bool(failed)

    def _still_fails(self, program: RandomProgram) -> bool:
        """Whether a candidate fails where the failing program did (kept if it is smaller)."""
        self.shrink_left -= 1
        failure = self.failure
        label = f"program #{failure.number}, shrunk"
        backends = list(dict.fromkeys(c.backend for c in failure.cells))
        cells = []
        for dtype in dict.fromkeys(c.dtype for c in failure.cells):
            cells += [c for c in check_program(program, backends, dtype, label, self.seed) if c.failed]
        if cells and _size(program) < _size(failure.program):
            self.failure = _Failure(program, failure.number, cells)
        return bool(cells)

    def result(self) -> ChunkResult:
        """What the chunk's task sends back (plain data: a program's written function stays here)."""
        failure = None
        if self.failure is not None:
            program = self.failure.program.astype(self.failure.cells[0].dtype)  # the dtype it fails in
            failure = Checked(self.failure.number, program.source, self.failure.cells)
        return ChunkResult(self.chunk, self.programs, failure)


def _size(program: RandomProgram) -> tuple[int, int]:
    return len(program.lines), len(program.source)
