"""Random programs for `adcore conformance --fuzz N`: small expression DAGs over the registered ops.

A program calls ops on 1-3 input arrays (broadcasting between them) and returns its last
value; every backend must differentiate it as the engine's reference does. Ops declare no
domain, only samples, so each op input's domain is read off its samples: their range and,
for ops sampled away from zero (abs, reciprocal, divide's denominator), the gap around 0
they keep clear of. The builder evaluates each value as it goes (with the ops' impls) and,
where a value falls outside the next op's domain, first squashes it in with core ops:
`lo + (hi - lo) * sigmoid(v)`, or `lo + softplus(v)` below a positive domain (the log of a
softplus). An op is skipped where its inputs come near a kink (KINKS below). hypothesis
draws the structure (ops, which earlier values feed them, params) and a seed for the input
values, and shrinks a failing program; `Program.source` can be pasted into a test.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import adcore
from adcore.conformance.engine import Call, check_subject, op_support
from adcore.conformance.results import Cell, Subject, merge
from adcore.errors import MissingDependencyError
from adcore.plugins import get_registry
from adcore.spec import OpSpec

SUBJECT = "fuzz"
SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 1), (2, 3))  # inputs' shapes; they broadcast
INPUT_RANGE = (-3.0, 3.0)  # inputs are drawn wider than the ops' samples, so squashing is exercised
MAX_ELEMENTS = 6  # per value: keeps the symbolic backend's compile and numeric's steps cheap
MAX_STEPS = 5  # ops drawn per program (squashes come on top)
LARGE = 10.0  # no op input is larger than this in magnitude, whatever its samples
MAX_VALUE = LARGE**2  # nor any value a program computes
WHOLE_LINE = 1.5  # an input sampled beyond +-this is taken to be real-valued, to +-WIDE:
WIDE = 4.0  # past it tanh and sigmoid saturate, and float32 derivatives of the form 1 - y*y are noise
REDUCTIONS: tuple[str, ...] = ("sum", "mean", "max", "logsumexp")  # over axis None or -1
SAMPLE_DRAWS = 20  # rng seeds an op's samples are drawn with to read its domain off them
GAP_EVIDENCE = 0.05  # samples that all keep |v| above this avoid zero on purpose
EDGE_MARGIN = 0.02  # of a domain's width, kept clear of its ends by a squash
KINK_MARGIN = 0.05  # least distance of an op's inputs from its kinks
SHRINK_SECONDS = 20.0  # how long hypothesis may shrink a failing program
FALLBACK_OP = "sin"  # the op of a program whose drawn ops were all skipped


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
    """Where an op input's values may lie: [low, high], and |v| >= gap."""

    low: float
    high: float
    gap: float = 0.0

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
            return InputDomain(min(self.low, -WIDE), max(self.high, WIDE), self.gap)
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


_domains: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sampled_domains(op: OpSpec) -> tuple[InputDomain, ...] | None:
    """Each input's domain as the op's samples show it; None if an input is not always a float."""
    if op not in _domains:
        drawn: list[list[np.ndarray]] = [[] for _ in range(op.nin)]
        for seed in range(SAMPLE_DRAWS):
            for sample in op.samples(np.random.default_rng(seed), np.dtype(np.float64)):
                for i, a in enumerate(sample.args[: op.nin]):
                    drawn[i].append(np.asarray(a))
        _domains[op] = _domains_of(drawn)
    return _domains[op]


def _domains_of(drawn: list[list[np.ndarray]]) -> tuple[InputDomain, ...] | None:
    domains = []
    for arrays in drawn:
        if not arrays or any(a.dtype.kind != "f" for a in arrays):
            return None
        v = np.concatenate([a.ravel() for a in arrays])
        low, high, nearest = float(v.min()), float(v.max()), float(np.abs(v).min())
        gap = nearest if low < 0 < high and nearest >= GAP_EVIDENCE else 0.0
        domains.append(InputDomain(low, high, gap))
    return tuple(domains)


def _tie_distance(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    x = np.ravel(x) if axis is None else np.asarray(x)
    if x.ndim == 0 or x.shape[-1] < 2:  # no ties (or no such axis: the call itself fails)
        return np.array(np.inf)
    s = np.sort(x, axis=-1)
    return s[..., -1] - s[..., -2]


def _clip_distance(x: np.ndarray, a_min: float | None = None, a_max: float | None = None) -> np.ndarray:
    bounds = [b for b in (a_min, a_max) if b is not None]
    return np.min([np.abs(x - b) for b in bounds], axis=0) if bounds else np.array(np.inf)


def _round_distance(x: np.ndarray, decimals: int = 0) -> np.ndarray:
    scaled = x * 10.0**decimals
    return np.abs(scaled - np.floor(scaled) - 0.5) / 10.0**decimals


# How far an op's inputs are from where it is not differentiable, for the core ops with kinks
# or jumps that their samples do not keep clear of: a finite difference across one is no
# derivative, and the conventions there (docs/conventions.md) are the kink checks' business.
KINKS: dict[str, Callable[..., np.ndarray]] = {
    "abs": lambda x: np.abs(x),
    "sign": lambda x: np.abs(x),
    "relu": lambda x: np.abs(x),
    "floor": lambda x: np.abs(x - np.round(x)),
    "round": _round_distance,
    "clip": _clip_distance,
    "maximum": lambda x, y: np.abs(x - y),
    "minimum": lambda x, y: np.abs(x - y),
    "max": _tie_distance,
    "arctan2": lambda y, x: np.where(x < 0, np.abs(y), np.inf),  # the branch cut: a jump of 2 pi
}


@dataclass(frozen=True)
class Choice:
    """An op a program may call: its input domains and the params it may be given."""

    op: str
    domains: tuple[InputDomain, ...]
    params: tuple[dict, ...] = ({},)


def catalogue(ops: Sequence[str] | None = None) -> tuple[Choice, ...]:
    """What programs are built from (`ops`, or all that fit): every registered elementwise op of
    one or two inputs, all differentiable, with the params of its samples; a few reductions
    (over axis None or -1); matmul."""
    registry = get_registry()
    names = sorted(registry.ops) if ops is None else [registry.op(name).name for name in ops]
    choices = [c for c in map(_choice, (registry.op(name) for name in names)) if c is not None]
    if ops is not None and len(choices) < len(names):
        unfit = sorted(set(names) - {c.op for c in choices})
        raise ValueError(
            f"random programs cannot call {', '.join(unfit)}: they call elementwise ops of one or two "
            f"differentiable inputs with samples, {', '.join(REDUCTIONS)} and matmul"
        )
    return tuple(choices)


def _choice(op: OpSpec) -> Choice | None:
    if op.name in REDUCTIONS or op.name == "matmul":
        params = ({},) if op.name == "matmul" else ({"axis": None}, {"axis": -1})
    elif _is_fuzzable(op):
        params = _sampled_params(op)
    else:
        return None
    domains = sampled_domains(op)
    return Choice(op.name, domains, params) if domains is not None else None


def _is_fuzzable(op: OpSpec) -> bool:
    differentiable = all(op.is_differentiable(i) for i in range(op.nin))
    return op.elementwise and op.nin in (1, 2) and differentiable and op.samples is not None


def _sampled_params(op: OpSpec) -> tuple[dict, ...]:
    found = {
        repr(sorted(s.params.items())): s.params for s in op.samples(np.random.default_rng(0), np.float64)
    }
    return tuple(found.values()) or ({},)


# --- programs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One op call: each arg an earlier value's index (ints; the inputs come first) or a constant."""

    op: str
    args: tuple[int | float, ...]
    params: tuple[tuple[str, Any], ...] = ()


@dataclass(eq=False)  # the symbolic backend caches per function object, so identity matters
class Program:
    """A random function of its inputs, with the input values to differentiate it at."""

    inputs: tuple[np.ndarray, ...]
    lines: tuple[Line, ...]

    def __call__(self, *xs: Any) -> Any:
        values = list(xs)
        for line in self.lines:
            args = [values[a] if isinstance(a, int) else a for a in line.args]
            values.append(adcore.ops[line.op](*args, **dict(line.params)))
        return values[-1]

    @property
    def ops(self) -> set[str]:
        return {line.op for line in self.lines}

    def astype(self, dtype: str) -> Program:
        """The same program at its input values rounded to `dtype`."""
        return Program(tuple(x.astype(dtype) for x in self.inputs), self.lines)

    @property
    def source(self) -> str:
        """Python source defining `f` and its inputs, to paste into a test."""
        k = len(self.inputs)
        names = [f"x{i}" for i in range(k)] + [f"v{j}" for j in range(len(self.lines))]
        xs = ", ".join(names[:k])
        body = "".join(f"    {names[k + j]} = {_call(line, names)}\n" for j, line in enumerate(self.lines))
        inputs = "".join(
            f"x{i} = np.array({x.tolist()!r}, dtype=np.{x.dtype})\n" for i, x in enumerate(self.inputs)
        )
        check = f'adcore.jacobian(f, argnums={tuple(range(k))}, backend="reverse")({xs})'
        return (
            f"import numpy as np\n\nimport adcore\n\n\ndef f({xs}):\n{body}    return {names[-1]}\n\n\n"
            f"{inputs}# every backend must agree with, e.g.:\n# {check}\n"
        )

    def __repr__(self) -> str:
        inputs = ", ".join(f"x{i}: {x.dtype} {x.shape}" for i, x in enumerate(self.inputs))
        return f"<Program of {inputs}: {', '.join(line.op for line in self.lines)}>"


def _call(line: Line, names: list[str]) -> str:
    args = [names[a] if isinstance(a, int) else repr(a) for a in line.args]
    args += [f"{key}={value!r}" for key, value in line.params]
    return f"adcore.ops.{line.op}({', '.join(args)})"


class Builder:
    """A program under construction, with the value of everything it has computed so far."""

    def __init__(self, inputs: Sequence[np.ndarray]) -> None:
        self.inputs = tuple(inputs)
        self.values: list[np.ndarray] = list(self.inputs)
        self.lines: list[Line] = []

    def call(self, choice: Choice, operands: Sequence[int], params: dict, positive: bool) -> bool:
        """Append choice.op(*operands, **params), each operand squashed into its domain first:
        the widened domain if the op's values stay moderate there, else the sampled one. False
        (and nothing but squashes appended) where the call cannot be made safely."""
        wide = tuple(d.widened() for d in choice.domains)
        for domains in dict.fromkeys((wide, choice.domains)):
            args = [self.into(i, domain, positive) for i, domain in zip(operands, domains)]
            if None in args:
                continue
            if params.get("axis") == -1 and self.values[args[0]].ndim == 0:
                return False  # numpy reduces a 0-d array over axis -1; no op's samples do
            line = Line(choice.op, tuple(args), tuple(params.items()))
            if not self._near_kink(line) and self._append(line) is not None:
                return True
        return False

    def _near_kink(self, line: Line) -> bool:
        distance = KINKS.get(line.op)
        if distance is None:
            return False
        try:
            with np.errstate(all="ignore"):
                return not np.all(distance(*self._args(line), **dict(line.params)) >= KINK_MARGIN)
        except ValueError:  # shapes that do not broadcast: the call itself fails
            return True

    def into(self, index: int, domain: InputDomain, positive: bool) -> int | None:
        """The index of value `index` if it is in `domain`, else of a squash of it into the domain."""
        v = self.values[index]
        if domain.holds(v):
            return index
        low, high = domain.target(positive)
        if low >= high:
            return None
        if low > 0 and np.all(np.logaddexp(0, v) + low <= high):  # the log of a softplus
            steps = [("softplus", ()), ("add", (low,))]
        else:  # scaled into +-WIDE first, where the sigmoid does not saturate
            slope = round(WIDE / max(float(np.max(np.abs(v))), WIDE), 2)
            steps = [("multiply", (slope,))] if slope < 1 else []
            steps += [("sigmoid", ()), ("multiply", (round(high - low, 2),)), ("add", (low,))]
        for op, constants in steps:
            index = self._append(Line(op, constants + (index,)))
            if index is None:
                return None
        return index if domain.holds(self.values[index]) else None

    def _append(self, line: Line) -> int | None:
        """Evaluate `line` and append it; None (nothing appended) if it fails or is too big."""
        op = get_registry().op(line.op)
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(op.impl(*self._args(line), **dict(line.params)))
        except (ValueError, TypeError, IndexError):  # shapes that do not fit
            return None
        if value.size > MAX_ELEMENTS or not np.all(np.abs(value) <= MAX_VALUE):  # nan fails too
            return None
        self.values.append(value.astype(self.inputs[0].dtype, copy=False))
        self.lines.append(line)
        return len(self.values) - 1

    def _args(self, line: Line) -> list:
        return [self.values[a] if isinstance(a, int) else a for a in line.args]

    def program(self) -> Program:
        """The program computing the last value: only the lines it needs, renumbered."""
        k = len(self.inputs)
        needed = {len(self.values) - 1}
        for j in reversed(range(len(self.lines))):
            if k + j in needed:
                needed |= {a for a in self.lines[j].args if isinstance(a, int)}
        kept = [j for j in range(len(self.lines)) if k + j in needed]
        renumber = {i: i for i in range(k)} | {k + j: k + n for n, j in enumerate(kept)}
        lines = []
        for line in (self.lines[j] for j in kept):
            lines.append(
                replace(line, args=tuple(renumber[a] if isinstance(a, int) else a for a in line.args))
            )
        return Program(self.inputs, tuple(lines))


def programs(dtype: str = "float64", max_steps: int = MAX_STEPS, ops: Sequence[str] | None = None) -> Any:
    """A hypothesis strategy of random programs calling `ops` (default: every op that fits, see
    `catalogue`) and the core ops that squash values into domains, inputs in `dtype`."""
    st = _hypothesis().strategies
    choices = catalogue(ops)
    fallback = _choice(get_registry().op(FALLBACK_OP))

    # a step: the op (None: no op, so shrinking can delete steps), how far back each operand
    # is (mostly the newest value; a binary op's second operand counts from the one before),
    # its params, and the side of zero a squash lands on (for inputs that avoid zero)
    back = st.integers(0, 7)
    step = st.tuples(st.sampled_from((None, *choices)), back, back, st.integers(0, 7), st.booleans())

    @st.composite
    def draw_program(draw: Callable[[Any], Any]) -> Program:
        shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        builder = Builder([np.asarray(rng.uniform(*INPUT_RANGE, shape), dtype=dtype) for shape in shapes])
        for choice, *backs, param, positive in draw(st.lists(step, min_size=2, max_size=max_steps)):
            if choice is None:
                continue
            last = len(builder.values) - 1
            operands = [last - (b // 3 + k) % (last + 1) for k, b in enumerate(backs[: len(choice.domains)])]
            builder.call(choice, operands, choice.params[param % len(choice.params)], positive)
        if not builder.lines:
            builder.call(fallback, [len(builder.values) - 1], {}, positive=True)
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
