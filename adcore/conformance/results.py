"""What a conformance run found: one Cell per (subject, backend, dtype), gathered in a Report;
the Tally of comparisons a cell is made from; and Results, each backend's derivatives of one
call, computed once.

A *subject* is what is checked: an op, a composite case, or the random programs of
`--fuzz`. The renderers in `adcore.conformance.report` read only Cell, Subject and Report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np

from adcore import api
from adcore.conformance import tolerances
from adcore.conformance.abilities import api_options, estimate_options, estimates
from adcore.conformance.calls import CheckedCall

Status = Literal["agrees", "disagrees", "unsupported", "error"]
STATUSES: tuple[Status, ...] = ("agrees", "disagrees", "unsupported", "error")
# how bad each status is, when one cell stands for several (the table merges dtypes)
SEVERITY: dict[str, int] = {"unsupported": 0, "agrees": 1, "disagrees": 2, "error": 3}
SubjectKind = Literal["op", "case", "fuzz"]


@dataclass
class Worst:
    """The comparison furthest out of tolerance in a cell (or, for a cell that agrees, closest to
    it), at its entry furthest out: the cell's relative error is this one's `rel_error`."""

    sample: str  # which input: "#2 x: float64 (2, 3), y: float64 (3,); axis=1"
    check: str  # jacobian, zero, jvp, vjp, second, dtype, kink
    abs_error: float  # |got - expected| at that entry
    rel_error: float  # abs_error / the reference's size (its largest |entry|; 1 if it is all 0)
    tolerance: float  # the largest rel_error that entry was allowed (0 where no number is compared)
    detail: str  # where and what: "at (1,): got 0.84, expected -0.84 (reference: symbolic)"

    @property
    def ratio(self) -> float:
        """rel_error / tolerance: > 1 is out of tolerance (for ranking; the verdict is the Tally's)."""
        if self.tolerance == 0:
            return math.inf  # nothing was allowed: a wrong dtype
        ratio = self.rel_error / self.tolerance
        return math.inf if math.isnan(ratio) else ratio

    def figure(self) -> str:
        """The relative error as every report shows it: 1.4e-02 (or the check, where no number is compared)."""
        return self.check if self.tolerance == 0 else format_error(self.rel_error)

    def error_text(self) -> str:
        """rel 1.4e-02 > tol 2.0e-09 (abs 3.1e-02); "" where no number is compared."""
        if self.tolerance == 0:
            return ""
        sign = ">" if self.rel_error > self.tolerance else "≤"  # |a - r| > allowed, both over one size
        return (
            f"rel {format_error(self.rel_error)} {sign} tol {format_error(self.tolerance)} "
            f"(abs {format_error(self.abs_error)})"
        )


def format_error(value: float) -> str:
    """A relative or absolute error in short scientific notation: 3.1e-01, inf, nan."""
    return f"{value:.1e}" if math.isfinite(value) else str(value)


@dataclass
class Cell:
    """The verdict on one subject, one backend, one dtype, over all the subject's samples."""

    subject: str
    backend: str
    dtype: str  # "float64", "float32", "complex128" or "complex64"
    status: Status
    checks: int = 0  # comparisons made
    worst: Worst | None = None  # set when status is "disagrees"; may be set otherwise
    message: str = ""  # unsupported: the missing rule; error: the exception; disagrees: a summary

    @property
    def failed(self) -> bool:
        return self.status in ("disagrees", "error")

    @property
    def rel_error(self) -> float:
        """The cell's relative error: its worst comparison's (0 when nothing was compared)."""
        return self.worst.rel_error if self.worst is not None else 0.0


@dataclass
class Subject:
    """A row of the report: its name, what it is, and which plugin registered it."""

    name: str
    kind: SubjectKind
    plugin: str
    source: str = ""  # for a failing fuzz program: Python source to paste into a test


@dataclass
class Report:
    """A whole conformance run."""

    subjects: list[Subject]
    backends: list[str]
    dtypes: list[str]
    cells: list[Cell]
    seconds: float = 0.0
    seed: int = 0
    versions: dict[str, str] = field(default_factory=dict)  # plugin name -> version
    # the vmap column: one cell per (subject, dtype), its `backend` the column's name (batching.VMAP)
    vmap: list[Cell] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        """The matrix's columns: the backends, then the vmap column where it was run."""
        return [*self.backends, *dict.fromkeys(c.backend for c in self.vmap)]

    @property
    def ok(self) -> bool:
        """No cell disagrees or errs, the vmap column's included."""
        return not self.failures()

    def failures(self) -> list[Cell]:
        """The failing cells, the vmap column's after the backends'."""
        return [c for c in [*self.cells, *self.vmap] if c.failed]

    def counts(self) -> dict[str, int]:
        """How many backend cells have each status (the vmap column's: vmap_counts)."""
        return {s: sum(c.status == s for c in self.cells) for s in STATUSES}

    def vmap_counts(self) -> dict[str, int]:
        """How many cells of the vmap column have each status."""
        return {s: sum(c.status == s for c in self.vmap) for s in STATUSES}

    def cell(self, subject: str, backend: str) -> Cell | None:
        """The merged verdict over dtypes of (subject, column): the worst dtype's cell (worst
        status, then furthest out of tolerance); None if nothing was run there."""
        return merge(c for c in [*self.cells, *self.vmap] if c.subject == subject and c.backend == backend)

    def summary(self) -> str:
        """One line: counts by status, subjects × backends × dtypes, and the wall time. Where some
        ops were checked in complex dtypes too: `...; 40 ops also × complex128/complex64`."""
        n = self.counts()
        kinds = {k: sum(s.kind == k for s in self.subjects) for k in ("op", "case", "fuzz")}
        what = ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in kinds.items() if v)
        verdict = "PASSED" if self.ok else "FAILED"
        real = [d for d in self.dtypes if not is_complex_dtype(d)]
        complex_ = [d for d in self.dtypes if is_complex_dtype(d)]
        dtypes = "/".join(real or complex_)
        if real and complex_:
            also = len(self.complex_subjects())
            dtypes += f"; {also} op{'s' if also != 1 else ''} also × {'/'.join(complex_)}"
        return (
            f"{verdict}: {n['agrees']} agree, {n['disagrees']} disagree, {n['error']} errors, "
            f"{n['unsupported']} unsupported ({what} × {len(self.backends)} backends × "
            f"{dtypes}){self._vmap_summary()} in {self.seconds:.1f} s"
        )

    def _vmap_summary(self) -> str:
        """'; vmap: 1 disagree, 0 errors of 40' where the vmap column has a failing cell; else ''
        (its cells are in the matrix; counts() are the backends')."""
        n = self.vmap_counts()
        if not (n["disagrees"] or n["error"]):
            return ""
        return f"; vmap: {n['disagrees']} disagree, {n['error']} errors of {len(self.vmap)}"

    def complex_subjects(self) -> set[str]:
        """The subjects checked in a complex dtype (ops that accept complex values)."""
        return {c.subject for c in self.cells if is_complex_dtype(c.dtype)}

    def to_dict(self) -> dict:
        """The report as JSON-ready data (the schema is in adcore/conformance/report.schema.json)."""
        return asdict(self) | {"ok": self.ok, "summary": self.summary()}


def is_complex_dtype(dtype: str) -> bool:
    return np.dtype(dtype).kind == "c"


def merge(cells: Iterable[Cell]) -> Cell | None:
    """One cell standing for several of the same subject and backend (e.g. both dtypes): the
    worst of them (status, then how far out of tolerance), so its relative error and worst
    sample are that cell's own, with all their dtypes and checks."""
    cells = list(cells)
    if not cells:
        return None
    worst = max(cells, key=lambda c: (SEVERITY[c.status], c.worst.ratio if c.worst else -1.0))
    return replace(
        worst,
        dtype="/".join(dict.fromkeys(c.dtype for c in cells)),
        checks=sum(c.checks for c in cells),
    )


# --- the comparisons of one cell ------------------------------------------------------------


@dataclass
class Tally:
    """The comparisons made for one cell, and the worst of them."""

    checks: int = 0
    worst: Worst | None = None
    worst_ratio: float = -1.0  # |a - r| / allowed of the worst comparison; > 1 fails
    error: str = ""
    unsupported: str = ""
    declined: list[str] = field(default_factory=list)  # samples the backend said it cannot do

    @property
    def open(self) -> bool:
        """Still being checked: neither unsupported nor errored."""
        return not (self.unsupported or self.error)

    def add(self, worst: Worst, ratio: float) -> None:
        self.checks += 1
        if not ratio <= self.worst_ratio:  # nan ranks worst
            self.worst, self.worst_ratio = worst, ratio

    def decline(self, what: str, error: Exception) -> None:
        """The backend said it cannot do `what` (checks.DECLINED: a rule refusing a param, symbolic's
        work budget, numeric unable to resolve f): not checked, and said so in the cell."""
        self.declined.append(f"{what}: {type(error).__name__}: {error}")

    def cell(self, subject: str, backend: str, dtype: str) -> Cell:
        if self.unsupported or (self.declined and not self.checks and not self.error):
            message = self.unsupported or f"declined every sample; {self.declined[0]}"
            return Cell(subject, backend, dtype, "unsupported", message=message)
        failed = not self.worst_ratio <= 1.0 and self.worst is not None
        status = "error" if self.error else "disagrees" if failed else "agrees"
        message = self.error
        if status == "disagrees":
            message = f"{self.worst.check} differs at sample {self.worst.sample}"
        elif status == "agrees" and self.declined:
            message = f"declined {len(self.declined)} check(s), not made; {self.declined[0]}"
        return Cell(subject, backend, dtype, status, self.checks, self.worst, message)


def compare(
    tally: Tally,
    label: str,
    check: str,
    actual: Any,
    expected: np.ndarray,
    tolerance: tolerances.Tolerance,
    error: Any = 0.0,
    source: str = "",
    scale: float | None = None,
) -> None:
    """Add one comparison of `actual` with `expected` (element by element) to the tally, as its
    entry furthest out of tolerance: |a - r| there, and that and its allowed difference
    divided by the reference's size (`reference_size`), the relative error and tolerance every report shows.

    With `scale`, the allowed difference is (rtol + atol) * scale + atol instead (a dot
    product is judged against the sum of its terms' sizes, so cancellation in the sum is no
    failure; atol is the floor when the Jacobian is 0, as for x / x), and `scale` is the size."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    nominal = tolerance.rtol + tolerance.atol  # what an entry of size 1 is allowed
    if actual.shape != expected.shape:
        detail = f"shape {actual.shape}, expected {expected.shape}"
        tally.add(Worst(label, check, math.inf, math.inf, nominal, detail), math.inf)
        return
    if expected.size == 0:
        tally.add(Worst(label, check, 0.0, 0.0, nominal, "empty"), 0.0)
        return
    diff, limit = deviation(actual, expected, tolerance, error, scale)
    with np.errstate(invalid="ignore"):  # inf / inf: nan, which ranks worst
        ratios = diff / limit
    where = np.unravel_index(np.argmax(ratios), ratios.shape)
    reference = reference_size(expected) if scale is None else (scale if 0 < scale < math.inf else 1.0)
    abs_error, allowed = float(diff[where]), float(limit[where])
    at = f"at {tuple(map(int, where))}: " if where else ""
    detail = f"{at}got {float(actual[where])!r}, expected {float(expected[where])!r}"
    if source:
        detail += f" (reference: {source})"
    worst = Worst(label, check, abs_error, abs_error / reference, allowed / reference, detail)
    tally.add(worst, float(ratios[where]))


def reference_size(reference: np.ndarray) -> float:
    """What a relative error is relative to: the largest finite |entry| of the reference, or 1
    where that is 0 (a zero derivative: the relative error is then the absolute one)."""
    largest = tolerances.largest_finite(reference)
    return largest if largest > 0 else 1.0


def deviation(
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: tolerances.Tolerance,
    error: Any = 0.0,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """|actual - expected| and the largest difference allowed, entry by entry (same shapes, float64),
    as `compare` judges them (adcore.check_grads reports from them too)."""
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(actual - expected)
    diff = np.where(np.isnan(diff), np.inf, diff)  # nan where a number was expected is wrong
    diff = np.where(actual == expected, 0.0, diff)  # equal infinities agree
    if scale is None:
        limit = tolerances.allowed(expected, tolerance, np.broadcast_to(error, expected.shape))
    else:
        limit = np.full(expected.shape, (tolerance.rtol + tolerance.atol) * scale + tolerance.atol)
    return diff, limit


# --- each backend's derivatives of one call -------------------------------------------------


class Results:
    """Each backend's Jacobians of one call, computed once (the reference and the cells share them),
    and an exact backend's value traced with them."""

    def __init__(self, call: CheckedCall) -> None:
        self.call = call
        self._memo: dict[str, Any] = {}
        self._values: dict[str, Any] = {}

    def jacobians(self, backend: str) -> tuple:
        """(jacobians for argnums, jacobians for zeros); for an estimator (jacobians, errors)."""
        if backend not in self._memo:
            try:
                self._memo[backend] = self._compute(backend)
            except Exception as e:
                self._memo[backend] = e
        result = self._memo[backend]
        if isinstance(result, Exception):
            raise result
        return result

    def _compute(self, backend: str) -> tuple:
        call = self.call
        if estimates(backend):
            estimate = api.jacobian(
                call.fn, argnums=call.argnums, **api_options(backend), **estimate_options(backend)
            )
            jacs, errors = estimate(*call.args)
            return tuple(jacs), tuple(errors)
        argnums = call.argnums + call.zeros
        value, jacs = api.value_and_jacobian(call.fn, argnums=argnums, **api_options(backend))(*call.args)
        self._values[backend] = value
        return tuple(jacs[: len(call.argnums)]), tuple(jacs[len(call.argnums) :])

    def value(self, backend: str) -> Any:
        """The call's value as an exact backend traces it while computing its Jacobians."""
        self.jacobians(backend)
        return self._values[backend]
