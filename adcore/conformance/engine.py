"""The conformance engine: every op and case, on every installed backend, against one reference.

A run is a plan (subjects x dtypes as units of work), each unit checked (in worker processes under
`jobs`), and the report. A unit goes through one module a stage:

1. `calls`: a CheckedCall per sample of the subject (an op, a composite case, a random program);
2. `reference`: the reference Jacobian, in float64 at the sample's values: the first exact
   backend (by reference_priority) corroborated by another or by the estimating backend's
   estimate within its error; if none is, that estimate itself, with its error as tolerance;
3. `checks`: each backend's derivatives against it, one function per check (jacobians, zeros,
   dot products, second derivatives along random directions, kinks), tallied per cell;
4. `batching`: the vmap column, each call batched by adcore.vmap against a loop over the batch
   (its values, and its derivatives on the backends that nest with vmap);
5. `results`: the tallies, cells and report.

What a backend can do (exact or estimating, its estimate options, its reference priority,
whether it can be the outer derivative, what it builds on) is data on its class
(adcore.backend.Backend), read by `abilities`; an op's kinks are data on its OpSpec. The
engine names no backend and no op.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from adcore.conformance.abilities import columns
from adcore.conformance.batching import VMAP, batched_calls, check_vmap
from adcore.conformance.calls import case_calls, checks_complex, op_calls
from adcore.conformance.checks import check_subject, op_support
from adcore.conformance.progress import unit_started
from adcore.conformance.results import Cell, Report, Subject
from adcore.conformance.tasks import map_tasks, one_blas_thread
from adcore.errors import InvalidValueError
from adcore.plugins import ESSENTIAL, get_registry
from adcore.registry import Registry

if TYPE_CHECKING:
    from adcore.conformance.fuzz import ChunkResult
    from adcore.conformance.fuzz_chunks import FuzzChunk

# every subject is checked in the real dtypes; an op that accepts complex values (and has a
# complex sample) in the complex ones too, on its split real function (calls.split_function)
REAL_DTYPES: tuple[str, ...] = ("float64", "float32")
COMPLEX_DTYPES: tuple[str, ...] = ("complex128", "complex64")
DTYPES: tuple[str, ...] = REAL_DTYPES + COMPLEX_DTYPES


@dataclass(frozen=True)
class Unit:
    """One piece of work for a process: one subject in one dtype, on every backend asked for."""

    kind: str  # "op" or "case"
    name: str
    dtype: str
    backends: tuple[str, ...]
    seed: int = 0


def check_unit(unit: Unit) -> list[Cell]:
    """The cells of one unit (runs in a worker process under --jobs): one per backend, then the
    vmap column's (its backend is batching.VMAP); with one BLAS thread wherever it runs."""
    with one_blas_thread():
        return _check_unit(unit)


def _check_unit(unit: Unit) -> list[Cell]:
    registry = get_registry()
    if unit.kind == "op":
        op = registry.op(unit.name)
        draw = functools.partial(op_calls, op, unit.dtype)
        try:
            calls = draw(unit.seed)
        except Exception as e:  # the op's samples(rng, dtype) itself: every backend's cell says so
            message = f"drawing its samples in {unit.dtype}: {type(e).__name__}: {e}"
            return [Cell(unit.name, b, unit.dtype, "error", message=message) for b in (*unit.backends, VMAP)]
        supported = op_support(registry, op)
        cells = check_subject(
            unit.name, calls, unit.backends, unit.dtype, supported, second=True, op=op, seed=unit.seed
        )
        # NumPy's same ufunc over the batch: bit for bit (batching.judge), but in complex dtypes,
        # whose arithmetic NumPy rounds differently by the array's size and layout (SIMD loops)
        exact = op.elementwise and unit.dtype in REAL_DTYPES
    else:
        draw = functools.partial(case_calls, registry.cases[unit.name], unit.dtype)
        calls = draw(unit.seed)
        supported = lambda b: ""  # noqa: E731  (a case is plain code: every backend takes it)
        cells = check_subject(unit.name, calls, unit.backends, unit.dtype, supported, seed=unit.seed)
        exact = False
    groups = batched_calls(draw, calls, unit.seed)
    return [*cells, check_vmap(unit.name, groups, unit.backends, unit.dtype, supported, exact=exact)]


@dataclass
class Plan:
    """What a run covers: the backends, the subjects (in report order) and the units to check them."""

    backends: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=lambda: list(DTYPES))
    subjects: list[Subject] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    seed: int = 0


def plan(
    backends: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    seed: int = 0,
) -> Plan:
    """The backends and the work of a run; unknown names raise the registry's errors.

    `backends` are the report's columns (abilities.columns): a backend with variants is checked
    under each, `<backend>/<variant>`, or under the one named so.

    `ops`/`cases` None means all of them, except that naming ops alone runs no cases. Cases are
    checked in the real dtypes, an op in the complex ones too where calls.checks_complex says so;
    a subject with no unit in `dtypes` is left out, and the plan's dtypes are those some unit has.
    Ops named of which none is checked in `dtypes` (complex dtypes asked of ops that do not accept
    complex values) are a ValueError."""
    registry = get_registry()
    backends = columns(sorted(registry.backends) if backends is None else backends)
    # a custom_vjp / custom_jvp function's op (pseudo-plugin "user") has no samples to check it
    # at: adcore.check_grads proves it, at the user's arguments
    user = registry.plugins["user"].ops if "user" in registry.plugins else ()
    op_names = sorted(set(registry.ops) - set(user)) if ops is None else [registry.op(o).name for o in ops]
    if cases is None:
        cases = sorted(registry.cases) if ops is None else []
    for name in cases:
        if name not in registry.cases:
            raise KeyError(
                f"no conformance case named {name!r}; registered cases: {', '.join(sorted(registry.cases))}"
            )
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"conformance runs dtypes {', '.join(DTYPES)}, not {dtype!r}")
    owner = _owners(registry)
    result = Plan(backends, seed=seed)
    for kind, names in (("op", op_names), ("case", list(cases))):
        for name in names:
            complex_ok = kind == "op" and checks_complex(registry.op(name))
            units = [
                Unit(kind, name, dtype, tuple(backends), seed)
                for dtype in dtypes
                if dtype in REAL_DTYPES or complex_ok
            ]
            if units:
                result.subjects.append(Subject(name, kind, owner.get((kind, name), "")))
                result.units += units
    if op_names and ops is not None and not any(u.kind == "op" for u in result.units):
        raise ValueError(
            f"no op of {', '.join(op_names)} is checked in {', '.join(dtypes)}: an op is checked in complex "
            "dtypes only if it accepts complex values (OpSpec.accepts_complex) and has a complex sample; "
            f"every op is checked in {', '.join(REAL_DTYPES)}"
        )
    result.dtypes = [d for d in dtypes if any(u.dtype == d for u in result.units)] or list(dtypes)
    return result


def _owners(registry: Registry) -> dict[tuple[str, str], str]:
    owners = {}
    for record in registry.plugins.values():
        owners.update({("op", name): record.name for name in record.ops})
        owners.update({("case", name): record.name for name in record.cases})
    return owners


def run(
    backends: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    *,
    fuzz: int = 0,
    jobs: int = 1,
    scheduler: str | None = None,
    seed: int = 0,
    progress: Callable[[Unit], None] | None = None,
    work: Plan | None = None,
) -> Report:
    """Check every op and case (or those named) on every installed backend (or those named).

    `work`, a Plan already made (the CLI makes it once), stands for the first four arguments
    and the seed. `jobs` > 1 checks units in that many worker processes; `scheduler`, a Dask
    scheduler's address or `local:N` (N worker processes here), checks them on that cluster
    instead (adcore.conformance.distributed), the report the same to the bit; `progress(unit)` is
    called as each unit finishes; `fuzz` > 0 adds that many random programs, in chunks that are
    tasks of the same map (adcore.conformance.fuzz_chunks)."""
    start = time.perf_counter()
    if scheduler is not None and jobs != 1:
        raise InvalidValueError(f"jobs={jobs} and scheduler={scheduler!r} exclude each other: give one")
    work = work or plan(backends, ops, cases, dtypes, seed)
    tasks: list[list[Unit] | FuzzChunk] = list(batches(work))
    real = [d for d in work.dtypes if d in REAL_DTYPES] or list(REAL_DTYPES)  # random programs stay real
    fuzzing = None
    if fuzz:  # the fuzzer's chunks of programs are tasks too, after the units'
        from adcore.conformance.fuzz_chunks import FuzzMerge

        fuzzing = FuzzMerge(fuzz, work.backends, real, work.seed)
        tasks += fuzzing.chunks
    cells: list[Cell] = []
    vmap: list[Cell] = []
    left = len(work.units)
    results = map_tasks(check_task, tasks, jobs, scheduler, describe_task)  # Dask only with a scheduler
    with contextlib.closing(results):  # a cluster started for the run closes on an error too
        for done in results:
            if not isinstance(done, list):  # a chunk of the fuzzer's programs
                fuzzing.add(done)
                done = []
            for unit, unit_cells in done:
                cells += [c for c in unit_cells if c.backend != VMAP]
                vmap += [c for c in unit_cells if c.backend == VMAP]
                left -= 1
                if progress is not None:
                    progress(unit)
            if fuzzing is not None and not left and fuzzing.complete:
                break  # the fuzzer's first failure ends the run: the chunks after it are not waited for
    subjects, dtypes = list(work.subjects), list(work.dtypes)
    if fuzzing is not None:
        subject, fuzz_cells = fuzzing.subject_and_cells()
        subjects.append(subject)
        cells += fuzz_cells
        dtypes += [d for d in real if d not in dtypes]
    rows = {s.name: k for k, s in enumerate(subjects)}
    order = (dtypes.index, work.backends.index)
    cells.sort(key=lambda c: (rows[c.subject], order[0](c.dtype), order[1](c.backend)))
    vmap.sort(key=lambda c: (rows[c.subject], order[0](c.dtype)))
    # the plugins' versions; not the pseudo-plugin "user" of custom_vjp functions some checks define
    # in whichever process runs them (here, or a worker), which has none
    plugins = get_registry().plugins.values()
    versions = {r.name: r.version for r in plugins if not r.error and r.name != "user"}
    seconds = time.perf_counter() - start
    return Report(subjects, work.backends, dtypes, cells, seconds, work.seed, versions, vmap)


def check_task(task: list[Unit] | FuzzChunk) -> list[tuple[Unit, list[Cell]]] | ChunkResult:
    """A task of a run (map_tasks): a batch of units, or a chunk of the fuzzer's programs."""
    if isinstance(task, list):
        return check_units(task)
    from adcore.conformance.fuzz_chunks import check_chunk

    return check_chunk(task)


def describe_task(task: list[Unit] | FuzzChunk) -> str:
    """A task named in a cluster's errors, with the command that checks it in one process."""
    if isinstance(task, list):
        from adcore.conformance.distributed import units_text

        return units_text(task)
    return task.text()


def check_units(units: list[Unit]) -> list[tuple[Unit, list[Cell]]]:
    """Each unit with its cells, checked in order in this process. NumPy's floating-point warnings
    are silenced: samples sit at kinks and singular points on purpose, where an untaken branch of a
    `where` divides by zero, and every value they touch is judged by number in the report."""
    done = []
    with np.errstate(all="ignore"), one_blas_thread():  # once per batch: threadpoolctl scans the libraries
        for unit in units:
            unit_started(unit)  # the progress lines' heartbeat names it (and numba compiling in it)
            done.append((unit, _check_unit(unit)))
    return done


def batches(work: Plan) -> list[list[Unit]]:
    """The units in the batches a process checks in turn, in the order they are handed out.

    A subject's units go together, float64 first: what a backend compiles for a function
    (symbolic, per shapes and dtype) in the float64 unit serves the float32 unit's float64
    reference. A plugin's subjects go together too, all but the core catalogue's: they share
    what is costly the first time a process runs them (adcore_kernels' numba kernels, compiled
    or loaded from numba's cache once per process and dtype; side by side in two processes,
    conv2d and conv2d_input_grad each compiled every convolution kernel). Those batches, the
    longest, go first, so that no process is left checking one while the others idle."""
    by_subject: dict[tuple[str, str], list[Unit]] = {}
    for unit in work.units:
        by_subject.setdefault((unit.kind, unit.name), []).append(unit)
    for group in by_subject.values():
        group.sort(key=lambda u: DTYPES.index(u.dtype))
    by_plugin: dict[str, list[Unit]] = {}
    spread: list[list[Unit]] = []
    for subject in work.subjects:
        group = by_subject.get((subject.kind, subject.name), [])
        if subject.plugin and subject.plugin != ESSENTIAL:
            by_plugin.setdefault(subject.plugin, []).extend(group)
        else:
            spread.append(group)
    return [batch for batch in [*by_plugin.values(), *spread] if batch]
