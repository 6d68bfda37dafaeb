"""GradBench's eval × tool runs as Dask tasks: one per single-threaded worker, each tool on a core of its own.

A task runs relay on its worker and sends back the session (and the log, when asked); the client
makes the rows, as the thread path does. Dask is imported only inside the functions that use it,
so run.py without --scheduler never imports it. The scheduler and the workers import this module
(PYTHONPATH); each worker's machine has the repository, and its manual tool is built first."""

from __future__ import annotations

import argparse
import fcntl
import importlib
import io
import os
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import manual
from relay import Session, relay

from adcore.errors import MissingDependencyError

INSTALL_HINT = "pip install 'adcore[distributed]'"
# one lock file per CPU of a machine: a run holds its core's lock (flock) while its tool runs, so the
# runs of every worker on the machine take different cores; a worker that dies releases its lock with it
CORE_LOCKS = Path(tempfile.gettempdir()) / f"adcore-gradbench-cores-{os.getuid()}"

WAIT_FOR_A_WORKER_S = 120.0  # how long an ADDRESS's cluster has to bring its first worker
Pair = tuple[str, str, list[str]]  # eval, tool, the eval's arguments


def scheduler_address(text: str) -> str:
    """--scheduler's value: a scheduler's address, or local:N with N a positive number of workers."""
    if text.startswith("local:") and not (text[6:].isdigit() and int(text[6:]) > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r}: local:N needs a positive number of workers, e.g. local:2"
        )
    return text


@contextmanager
def own_core() -> Iterator[tuple[int, int]]:
    """A core of this machine that no other run here holds, held until the block ends.

    Yields (its index in this process's affinity, as relay's `core=` takes it; the CPU's number). With
    more runs than cores on the machine, waits for one to end, as the thread path's queue of cores does.
    """
    cores = sorted(os.sched_getaffinity(0))
    CORE_LOCKS.mkdir(exist_ok=True)
    while True:
        for index, cpu in enumerate(cores):
            lock = open(CORE_LOCKS / f"{cpu}.lock", "w")  # noqa: SIM115 (held past this loop, closed below)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            try:
                yield index, cpu
            finally:
                lock.close()  # releases the lock
            return
        time.sleep(0.2)


def relay_on_worker(
    eval_name: str, tool: str, arguments: list[str], timeout: float | None, keep_log: bool
) -> tuple[Session, str | None, str, float]:
    """One eval × tool run on this worker, its tool on a core of its own: the session, its log, where, seconds."""
    log = io.StringIO() if keep_log else None
    started = time.perf_counter()
    with own_core() as (index, cpu):
        session = relay(eval_name, tool, arguments, log=log, timeout=timeout, core=index)
    where = f"{socket.gethostname()} core {cpu}"
    return session, None if log is None else log.getvalue(), where, time.perf_counter() - started


@contextmanager
def connected(scheduler: str) -> Iterator[Any]:
    """A Client of the scheduler at ADDRESS, or of a new LocalCluster of N single-threaded workers (local:N)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise MissingDependencyError(
            f"--scheduler runs GradBench on Dask, which is not installed here ({error}); "
            f"install it with `{INSTALL_HINT}`"
        ) from error
    if scheduler.startswith("local:"):
        workers = int(scheduler.removeprefix("local:"))
        with (
            dask.config.set({"distributed.scheduler.worker-saturation": 1.0}),  # see `sessions`
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
    else:
        try:
            client = Client(scheduler)
        except OSError as error:  # no scheduler there (Dask's connect timeout is 30 s)
            raise ClusterNotReadyError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from error
        with client:
            yield client


class ClusterNotReadyError(RuntimeError):
    """The Dask cluster cannot run GradBench: no scheduler or worker there, no importable checkout, no manual tool."""


SETUP = (
    "The scheduler and each worker need this repository's benchmarks/gradbench on PYTHONPATH (they "
    "unpickle this module's tasks), and each worker's machine the manual tool's prerequisites "
    f"(`{manual.INSTALL_HINT}`): PYTHONPATH=benchmarks/gradbench dask worker ADDRESS --nthreads 1"
)


def prepare_hosts(client: Any) -> None:
    """Wait for a worker, check the scheduler can import this module and build the manual tool on each
    worker's machine (once per host); raise, naming the scheduler or the worker, when one cannot."""
    try:
        client.run_on_scheduler(importlib.import_module, __name__)
    except Exception as error:  # noqa: BLE001 (whatever stops it, the message says what it needs)
        raise ClusterNotReadyError(
            f"the Dask scheduler cannot import {__name__}: {type(error).__name__}: {error}\n{SETUP}"
        ) from error
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_A_WORKER_S)
    except TimeoutError as error:
        raise ClusterNotReadyError(f"no Dask worker joined in {WAIT_FOR_A_WORKER_S:g} s\n{SETUP}") from error
    workers = client.scheduler_info()["workers"]
    one_per_host = {info["host"]: address for address, info in workers.items()}
    built = client.run(manual.ensure_built, workers=list(one_per_host.values()), on_error="return")
    for address, outcome in built.items():
        if isinstance(outcome, BaseException):
            raise ClusterNotReadyError(
                f"the Dask worker at {address} cannot run GradBench: {type(outcome).__name__}: {outcome}\n{SETUP}"
            )


def failure(eval_name: str, tool: str, error: BaseException) -> str:
    """Why Dask could not bring a run's session back, as the run's error."""
    from distributed import KilledWorker

    if isinstance(error, KilledWorker):
        return f"every Dask worker that ran {eval_name} × {tool} died, and Dask stopped retrying it: {error}"
    return f"Dask could not run {eval_name} × {tool}: {type(error).__name__}: {error}"


def sessions(
    scheduler: str, pairs: Sequence[Pair], timeout: float | None, log_dir: Path | None
) -> Iterator[tuple[Session, str, float]]:
    """Each pair's session as its run ends (with where it ran and its seconds), run on the Dask cluster.

    With `log_dir`, each run's GradBench log comes back with it and is written there, as the thread
    path writes it. A pair whose worker dies is rerun by Dask on another (up to its scheduler's
    allowed-failures); one that still cannot run comes back as a session whose error says why, so
    it is a failed row, never a missing one. A worker's death counts against every pair Dask has
    given it, run or not yet; local:N's worker-saturation of 1.0 keeps a long list of pairs queued on
    the scheduler instead, so each worker holds only the pair it runs.
    """
    with connected(scheduler) as client:
        from distributed import as_completed

        prepare_hosts(client)
        futures = {
            client.submit(relay_on_worker, e, t, arguments, timeout, log_dir is not None, pure=False): (e, t)
            for e, t, arguments in pairs
        }
        for future in as_completed(futures):
            eval_name, tool = futures[future]
            try:
                session, log, where, seconds = future.result()
            except Exception as error:  # noqa: BLE001 (any error of the task or of Dask is the pair's failure)
                session, log, where, seconds = (
                    Session(eval_name, tool, error=failure(eval_name, tool, error)),
                    None,
                    "",
                    0.0,
                )
            if log_dir is not None and log is not None:
                (log_dir / eval_name).mkdir(parents=True, exist_ok=True)
                (log_dir / eval_name / f"{tool}.jsonl").write_text(log)
            yield session, where, seconds
