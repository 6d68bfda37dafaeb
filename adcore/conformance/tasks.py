"""The one map a conformance run's work goes through: the engine's batches of units, the fuzzer's
chunks and the pytest plugin's units, checked here, in forked processes (--jobs) or on a Dask
cluster (--scheduler, adcore.conformance.distributed, imported only then)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TypeVar

from adcore.errors import InvalidValueError

T = TypeVar("T")
R = TypeVar("R")


# what BLAS and OpenMP libraries read when they load: for one loaded in the middle of a check
# (scipy's own OpenBLAS, when a scipy op first runs), which threadpoolctl cannot see beforehand
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS (and OpenMP) limited to one thread while checking: a matrix product's rounding depends
    on how many threads split it, and Dask's workers run with one (its nanny sets
    OPENBLAS_NUM_THREADS=1), so without this a cell's numbers differed between a run here, under
    --jobs and on a cluster (expm on numeric in float32 did). A library first loaded inside keeps
    one thread in this process afterwards."""
    from threadpoolctl import threadpool_limits

    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update(dict.fromkeys(THREAD_VARIABLES, "1"))
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _map(fn: Callable[[T], R], tasks: list[T], jobs: int) -> Iterator[R]:
    """fn(task) for each task as each finishes, in `jobs` forked processes (or here, for 1)."""
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield fn(task)
        return
    # fork keeps what this process loaded (plugins registered by hand included); Windows and
    # macOS' default spawn would load the entry-point plugins afresh, which is fine too
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        try:
            for future in as_completed([pool.submit(fn, task) for task in tasks]):
                yield future.result()
        finally:  # a run ended early (the fuzzer's first failure, an error) waits for no queued task
            pool.shutdown(cancel_futures=True)


def map_tasks(
    fn: Callable[[T], R],
    tasks: list[T],
    jobs: int = 1,
    scheduler: str | None = None,
    describe: Callable[[T], str] | None = None,
) -> Iterator[R]:
    """fn(task) for each task as each finishes: here, in `jobs` forked processes, or on the Dask
    cluster at `scheduler` (Dask is imported only then; `describe(task)` names a task in its errors).
    The engine's units, the fuzzer's chunks and the pytest plugin's units all go through it."""
    if scheduler is None:
        return _map(fn, tasks, jobs)
    if jobs != 1:
        raise InvalidValueError(f"jobs={jobs} and scheduler={scheduler!r} exclude each other: give one")
    from adcore.conformance.distributed import map_on_cluster

    return map_on_cluster(fn, tasks, scheduler, describe)
