"""What a conformance run found: one Cell per (subject, backend, dtype), gathered in a Report.

A *subject* is what is checked: an op, a composite case, or the random programs of
`--fuzz`. The renderers in `adcore.conformance.report` read only these classes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["agrees", "disagrees", "unsupported", "error"]
STATUSES: tuple[Status, ...] = ("agrees", "disagrees", "unsupported", "error")
# how bad each status is, when one cell stands for several (the table merges dtypes)
SEVERITY: dict[str, int] = {"unsupported": 0, "agrees": 1, "disagrees": 2, "error": 3}
SubjectKind = Literal["op", "case", "fuzz"]


@dataclass
class Worst:
    """The comparison furthest out of tolerance in a cell (or, for a cell that agrees, closest to it)."""

    sample: str  # which input: "#2 x: float64 (2, 3), y: float64 (3,); axis=1"
    check: str  # jacobian, zero, jvp, vjp, second, dtype, kink
    abs_error: float
    rel_error: float
    detail: str  # where and what: "at (1,): got 0.84, expected -0.84 (reference: symbolic)"


@dataclass
class Cell:
    """The verdict on one subject, one backend, one dtype, over all the subject's samples."""

    subject: str
    backend: str
    dtype: str  # "float64" or "float32"
    status: Status
    checks: int = 0  # comparisons made
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    worst: Worst | None = None  # set when status is "disagrees"; may be set otherwise
    message: str = ""  # unsupported: the missing rule; error: the exception; disagrees: a summary

    @property
    def failed(self) -> bool:
        return self.status in ("disagrees", "error")


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

    @property
    def ok(self) -> bool:
        """No cell disagrees or errs."""
        return not any(c.failed for c in self.cells)

    def failures(self) -> list[Cell]:
        return [c for c in self.cells if c.failed]

    def counts(self) -> dict[str, int]:
        """How many cells have each status."""
        return {s: sum(c.status == s for c in self.cells) for s in STATUSES}

    def cell(self, subject: str, backend: str) -> Cell | None:
        """The merged verdict over dtypes of (subject, backend): the worst status, the largest
        errors and the worst sample of the worst dtype; None if nothing was run there."""
        return merge(c for c in self.cells if c.subject == subject and c.backend == backend)

    def summary(self) -> str:
        """One line: counts by status, subjects × backends × dtypes, and the wall time."""
        n = self.counts()
        kinds = {k: sum(s.kind == k for s in self.subjects) for k in ("op", "case", "fuzz")}
        what = ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in kinds.items() if v)
        verdict = "PASSED" if self.ok else "FAILED"
        return (
            f"{verdict}: {n['agrees']} agree, {n['disagrees']} disagree, {n['error']} errors, "
            f"{n['unsupported']} unsupported ({what} × {len(self.backends)} backends × "
            f"{'/'.join(self.dtypes)}) in {self.seconds:.1f} s"
        )

    def to_dict(self) -> dict:
        """The report as JSON-ready data (the schema is in adcore/conformance/report.schema.json)."""
        return asdict(self) | {"ok": self.ok, "summary": self.summary()}


def merge(cells: Iterable[Cell]) -> Cell | None:
    """One cell standing for several of the same subject and backend (e.g. both dtypes)."""
    cells = list(cells)
    if not cells:
        return None
    worst = max(cells, key=lambda c: (SEVERITY[c.status], c.max_rel_error))
    return Cell(
        subject=worst.subject,
        backend=worst.backend,
        dtype="/".join(dict.fromkeys(c.dtype for c in cells)),
        status=worst.status,
        checks=sum(c.checks for c in cells),
        max_abs_error=max(c.max_abs_error for c in cells),
        max_rel_error=max(c.max_rel_error for c in cells),
        worst=worst.worst,
        message=worst.message,
    )
