"""A run of `adcore conformance --fuzz N` in chunks, each a task of the engine's map.

A run of N programs is cut into chunks of CHUNK programs (`FuzzMerge.chunks`), each one task of the engine's map
(checked here, under --jobs or on a Dask cluster, like a batch of units): chunk k checks programs
#25k+1 to #25k+25, drawn by hypothesis seeded with (seed, k) and with their values' seeds mixed with
k. A chunk stops at its first failing program and shrinks it there, for at most SHRINK_CANDIDATES
smaller candidates (a count, not a time, so the shrunk program is the same on any machine under any
load). `FuzzMerge` takes the chunks' results in any order and merges them in chunk order, up to the
lowest failing chunk (the later ones' are dropped, as a run used to end at its first failure): the
fuzz subject and its cells are the same to the bit whatever checked the chunks, and the serial run
checks the same chunks.

Programs are distinct across the whole run: hypothesis starts every search at its simplest program,
which mixing k into the values' seeds makes another program in each chunk, and the merge counts a
program drawn again by a later chunk once (the cells' "N programs" counts distinct ones).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from adcore.conformance.abilities import columns
from adcore.conformance.fuzz import CHUNK, SUBJECT, Checked, ChunkResult, FuzzRun, import_hypothesis, programs
from adcore.conformance.results import Cell, Subject, merge
from adcore.conformance.tasks import map_tasks, one_blas_thread
from adcore.errors import InvalidValueError


@dataclass(frozen=True)
class FuzzChunk:
    """One task of a run of n programs: `count` of them, from program #index * CHUNK + 1 on."""

    n: int
    index: int
    count: int
    backends: tuple[str, ...]
    dtypes: tuple[str, ...]
    seed: int = 0
    ops: tuple[str, ...] | None = None  # None: every op that fits

    def text(self) -> str:
        """The chunk, named, and the command that checks it in one process (for a cluster's errors)."""
        first = self.index * CHUNK + 1
        run = f"adcore conformance --fuzz {self.n} --seed {self.seed}"
        return (
            f"the random programs #{first} to #{first + self.count - 1} of `{run}`; to see their error, "
            f"check them in one process: {run} --jobs 1"
        )


def check_chunk(chunk: FuzzChunk) -> ChunkResult:
    """Check a chunk's programs (the engine's task for it: here, in a worker process or on Dask),
    with one BLAS thread wherever it runs."""
    strategy = programs("float64", ops=chunk.ops, salt=chunk.index)
    with one_blas_thread():
        return (
            FuzzRun(chunk.count, chunk.backends, chunk.dtypes, chunk.seed, chunk.index).run(strategy).result()
        )


class FuzzMerge:
    """A run of n programs as chunks, and their results merged in chunk order (whatever order they
    come in) up to the lowest failing chunk: the run's programs (each once), cells and failure."""

    def __init__(
        self,
        n: int,
        backends: Sequence[str],
        dtypes: Sequence[str],
        seed: int = 0,
        ops: Sequence[str] | None = None,
    ) -> None:
        if n < 0:
            raise InvalidValueError(f"a fuzz run checks n >= 0 random programs, not {n}")
        if n:
            import_hypothesis()  # here, before any chunk is sent off: without hypothesis, say how to install it
        self.n, self.backends, self.dtypes, self.seed = n, columns(backends), list(dtypes), seed
        these = (tuple(self.backends), tuple(self.dtypes), seed, None if ops is None else tuple(ops))
        self.chunks = [FuzzChunk(n, k, min(CHUNK, n - k * CHUNK), *these) for k in range(-(-n // CHUNK))]
        self.results: dict[int, ChunkResult] = {}

    def add(self, result: ChunkResult) -> None:
        self.results[result.index] = result

    @property
    def complete(self) -> bool:
        """Every chunk up to the lowest failing one (or the last) has its result."""
        return self._merged() is not None

    def _merged(self) -> list[ChunkResult] | None:
        merged = []
        for chunk in self.chunks:
            if chunk.index not in self.results:
                return None
            merged.append(self.results[chunk.index])
            if merged[-1].failure is not None:
                break
        return merged

    def _results(self) -> list[ChunkResult]:
        merged = self._merged()
        if merged is None:  # a chunk's result was lost: its cells cannot be left out silently
            missing = [c.index for c in self.chunks if c.index not in self.results]
            raise InvalidValueError(
                f"the fuzz run of {self.n} programs has no result for its chunk {missing[0]} of "
                f"{len(self.chunks)} yet: add every chunk's result (FuzzMerge.add) before merging"
            )
        return merged

    @property
    def programs(self) -> list[Checked]:
        """The programs checked, in order, each once (a program a later chunk drew again is left out)."""
        seen: set[str] = set()
        kept = []
        for program in (p for result in self._results() for p in result.programs):
            if program.source not in seen:
                seen.add(program.source)
                kept.append(program)
        return kept

    @property
    def checked(self) -> int:
        return len(self.programs)

    @property
    def sources(self) -> list[str]:
        return [p.source for p in self.programs]

    @property
    def failure(self) -> Checked | None:
        """The lowest failing chunk's failing program, shrunk."""
        results = self._results()
        return results[-1].failure if results else None

    def subject_and_cells(self) -> tuple[Subject, list[Cell]]:
        """One subject for the whole run and one cell per (backend, dtype): the programs' cells
        merged, or where one failed, the failing program's verdict (its source is the subject's)."""
        cells_of: dict[tuple[str, str], list[Cell]] = {(b, d): [] for d in self.dtypes for b in self.backends}
        for program in self.programs:
            for cell in program.cells:
                cells_of[cell.backend, cell.dtype].append(cell)
        source, failing = "", {}
        if (failure := self.failure) is not None:
            header = f"# adcore conformance --fuzz {self.n} --seed {self.seed}: program #{failure.number}"
            source = f"{header}\n{failure.source}"
            failing = {(c.backend, c.dtype): c for c in failure.cells}
        cells = []
        for (backend, dtype), found in cells_of.items():
            cell = merge(found) or Cell(SUBJECT, backend, dtype, "unsupported", message="no program checked")
            if (backend, dtype) in failing:
                bad = failing[backend, dtype]
                message = f"{bad.message}; that program is the fuzz subject's source"
                cell = replace(cell, status=bad.status, worst=bad.worst, message=message)
            elif cell.status == "agrees":
                cell = replace(cell, message=f"{len(found)} programs")
            cells.append(cell)
        return Subject(SUBJECT, "fuzz", "core", source), cells


def check_fuzz(
    n: int,
    backends: Sequence[str],
    dtypes: Sequence[str],
    seed: int = 0,
    ops: Sequence[str] | None = None,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
) -> FuzzMerge:
    """Check `n` random programs (drawn with `seed`, from `ops` or every op that fits) on each backend
    in each dtype, their chunks mapped as the engine maps units (here, in `jobs` processes or on the
    Dask cluster at `scheduler`): the same merge whichever."""
    fuzz = FuzzMerge(n, backends, dtypes, seed, ops)
    with contextlib.closing(map_tasks(check_chunk, fuzz.chunks, jobs, scheduler, FuzzChunk.text)) as results:
        for result in results:
            fuzz.add(result)
            if fuzz.complete:  # the lowest failing chunk's failure ends the run, as the serial one
                break
    return fuzz
