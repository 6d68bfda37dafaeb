"""Conformance on a Dask cluster (`adcore conformance --scheduler`): the engine's tasks as Dask tasks.

Everything Dask is here, and this module is imported only when a run is given a scheduler, so
`import adcore` and a run without one never import Dask. The engine hands `map_on_cluster` the
same function and batches of units it would check in this process or under `--jobs`, and gets
each batch's result as it finishes: the units, seeds and the report's sort are the engine's, so
the report is the serial run's, bit for bit (its `seconds` aside).

What can go wrong, and what happens then (nothing is retried that would fail again):
- a worker dies (a segfault, out of memory, killed): Dask runs its tasks again on another worker,
  up to `distributed.scheduler.allowed-failures` times (Dask's config, 3 by default); then it gives
  up (KilledWorker) and the run ends with a DistributedError naming the task's units and the
  command that runs them in one process;
- a task raises: the exception is raised here as it is, as the serial run raises it (not retried:
  the same unit raises the same exception again), with a note naming the units;
- a worker's plugins differ from this process's (another version, one missing, one registered by
  hand here, which a worker cannot see): each task compares them before it runs (plugin_signature)
  and the run ends with a DistributedError naming the plugin; a plugin registered by hand is
  refused before anything is sent;
- the scheduler cannot be reached, or has no worker: a DistributedError naming the address,
  after CONNECT_TIMEOUT seconds.
"""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from adcore.conformance import progress
from adcore.errors import DistributedError, InvalidValueError, MissingDependencyError
from adcore.plugins import get_registry

T = TypeVar("T")
R = TypeVar("R")

CONNECT_TIMEOUT = 10.0  # seconds to reach the scheduler, and for it to have a worker
# the pseudo-plugin of custom_vjp / custom_jvp functions defined in this process: no run checks
# its ops (engine.plan leaves them out), and a worker cannot have them
USER = "user"
# A LocalCluster started for a run (local:N) is Dask's default but for its upkeep, which its
# workers and nannies (run in this process) pass on. Measured on the full report on two cores:
# - the statistical profiler samples the running thread every 10 ms: 99 s with it, 82 s without;
# - the event loop's health tick (every 20 ms), the system monitor's statistics for a dashboard
#   there is none of (every 500 ms) and the nanny's memory check (every 100 ms) took 2.2 s of CPU
#   every 30 s of an idle 2-worker cluster, 0.4 s at these intervals.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}
_LOCAL = re.compile(r"local:(-?\d+)")
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://\S+|[^\s:/]+:\d+")  # tcp://host:8786, host:8786


def local_workers(scheduler: str) -> int | None:
    """N for `local:N` (a LocalCluster of N worker processes), None for a scheduler's address
    (`tcp://host:8786`, `host:8786`); anything else is an InvalidValueError."""
    if match := _LOCAL.fullmatch(scheduler):
        workers = int(match[1])
        if workers < 1:
            raise InvalidValueError(f"--scheduler {scheduler}: a local cluster needs at least 1 worker")
        return workers
    if not _ADDRESS.fullmatch(scheduler) or scheduler.startswith("local:"):
        raise InvalidValueError(
            f"--scheduler {scheduler!r} is neither a Dask scheduler's address (tcp://HOST:PORT or "
            "HOST:PORT) nor local:N (a cluster of N worker processes on this machine)"
        )
    return None


def map_on_cluster(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    scheduler: str,
    describe: Callable[[T], str] | None = None,
) -> Iterator[R]:
    """fn(task) for each task on the Dask cluster at `scheduler` (or `local:N`, started for the run
    and closed after it), each result as its task finishes. `describe(task)` names a task in the
    errors and says how to rerun it alone (default: units_text, for a batch of engine Units)."""
    workers = local_workers(scheduler)
    expected = plugin_signature()
    refuse_hand_registered()
    describe = describe or units_text
    distributed = _import_distributed()
    with _client(distributed, scheduler, workers) as client:
        if workers is not None:  # its workers are this run's: settle them (not a user's cluster's)
            client.run(settle_worker)
        progress.relay_from_cluster(client)  # the workers' units in flight, in the run's heartbeat
        # pure=False: a task is run for this run, never a result Dask kept from an earlier one
        futures = {client.submit(_checked, fn, expected, task, pure=False): task for task in tasks}
        for future in distributed.as_completed(futures, loop=client.loop):
            yield _result(distributed, future, functools.partial(describe, futures[future]), scheduler)


def plugin_signature() -> dict[str, tuple[Any, ...]]:
    """Each loaded plugin (the report's `versions`, and more): name -> (version, distribution,
    failed to load, the ops, cases and backends it registered). The pseudo-plugin "user" is left out."""
    return {
        r.name: (r.version, r.dist, bool(r.error), sorted(r.ops), sorted(r.cases), sorted(r.backends))
        for r in get_registry().plugins.values()
        if r.name != USER
    }


def refuse_hand_registered() -> None:
    """A DistributedError if a plugin was registered by hand in this process (no distribution)."""
    by_hand = [r.name for r in get_registry().plugins.values() if not r.dist and r.name != USER]
    if by_hand:
        raise DistributedError(
            f"plugin {by_hand[0]!r} was registered by hand in this process (adcore.plugins.register_plugin): "
            "Dask workers load their plugins from the installed distributions' 'adcore' entry points, "
            "so theirs would not be this report's. Install it as a distribution on every worker, or "
            "run without --scheduler (--jobs N forks this process, plugins and all)"
        )


def settle_worker() -> None:
    """On a worker of a cluster started for the run: load the plugins, then freeze what the process
    holds (Dask, adcore, the registry) out of the garbage collector's reach. Its full passes walked
    all of it again and again: 8.2 s of the full report's 181 s of checks on local:2, 3.7 s frozen.
    Nothing frozen is garbage: it lives as long as the worker, which ends with the run."""
    get_registry()
    gc.collect()
    gc.freeze()


def units_text(units: Sequence[Any]) -> str:
    """A batch of engine Units, named, and the command that checks them in one process."""
    names = ", ".join(f"{u.name} ({u.dtype})" for u in units)
    options = [f"--{kind} {name}" for kind, name in dict.fromkeys((u.kind, u.name) for u in units)]
    options += [f"--dtype {d}" for d in dict.fromkeys(u.dtype for u in units)]
    if units and units[0].seed:
        options.append(f"--seed {units[0].seed}")
    command = f"adcore conformance {' '.join(options)} --jobs 1"
    return f"the units {names}; to see their error, check them in one process: {command}"


def _checked(fn: Callable[[T], R], expected: dict[str, tuple[Any, ...]], task: T) -> R:
    """fn(task), on a worker whose plugins are the client's; a DistributedError otherwise."""
    here = plugin_signature()
    if here != expected:
        from distributed import get_worker

        raise DistributedError(_difference(expected, here, f"the Dask worker {get_worker().address}"))
    progress.on_dask_worker()
    return fn(task)


def _difference(ours: dict[str, tuple[Any, ...]], theirs: dict[str, tuple[Any, ...]], where: str) -> str:
    """What differs between this process's plugins and a worker's, first plugin by name."""
    name = next(n for n in sorted(ours.keys() | theirs.keys()) if ours.get(n) != theirs.get(n))
    mine, other = ours.get(name), theirs.get(name)
    if other is None:
        what = f"plugin {name!r} ({mine[0]}) is loaded in this process but not on {where}"
    elif mine is None:
        what = f"plugin {name!r} ({other[0]}) is loaded on {where} but not in this process"
    elif mine[:2] != other[:2]:
        what = f"plugin {name!r} is {mine[1]} {mine[0]} here but {other[1]} {other[0]} on {where}"
    elif mine[2] != other[2]:
        failed, loaded = ("this process", where) if mine[2] else (where, "this process")
        what = f"plugin {name!r} failed to load in {failed} but loaded in {loaded}"
    else:
        what = f"plugin {name!r} {mine[0]} registers other ops, cases or backends here than on {where}"
    return (
        f"{what}: the workers' report would not be this process's. Install the same plugins (and "
        "versions) on every worker, with the same ADCORE_PLUGINS / ADCORE_BLOCK_PLUGINS switches, "
        "or run without --scheduler"
    )


def _result(distributed: ModuleType, future: Any, described: Callable[[], str], scheduler: str) -> Any:
    """The task's result; its own exception raised as it is; the cluster's failures as DistributedError."""
    if future.status == "cancelled":
        raise DistributedError(
            f"the Dask scheduler at {scheduler} lost the task checking {described()} (was the connection "
            "lost, or the scheduler restarted?); run again"
        )
    try:
        return future.result()
    except distributed.KilledWorker as e:
        raise DistributedError(
            f"Dask gave up on the task checking {described()}. It ran {e.allowed_failures + 1} times "
            "and each time the worker running it died (a crash that ends the process: a segfault, "
            "running out of memory), which no report cell can hold; Dask's config "
            "distributed.scheduler.allowed-failures sets how often a task is run again"
        ) from e
    except Exception as e:  # the task's own, as the serial run raises it
        e.add_note(f"raised on a Dask worker, checking {described()}")
        raise


def _import_distributed() -> ModuleType:
    try:
        import distributed
    except ImportError as e:
        raise MissingDependencyError(
            f"--scheduler runs on Dask, which is not installed ({e}): pip install 'adcore[distributed]'"
        ) from e
    return distributed


@contextmanager
def _client(distributed: ModuleType, scheduler: str, workers: int | None) -> Iterator[Any]:
    """A Client of the scheduler at `scheduler`, or of a LocalCluster of `workers` processes started
    here (each one thread: a unit is single-threaded NumPy work; LOCAL_CLUSTER_CONFIG's upkeep),
    closed after the run."""
    if workers is not None:
        import dask

        with (
            dask.config.set(LOCAL_CLUSTER_CONFIG),
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster, set_as_default=False) as client,
        ):
            yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise DistributedError(
            f"cannot reach the Dask scheduler at {scheduler} within {CONNECT_TIMEOUT:.0f} s "
            f"({type(e).__name__}: {e}). Check the address, or start a cluster there (`dask scheduler`, "
            f"then `dask worker {scheduler}` on each machine); --scheduler local:N starts N workers here"
        ) from e
    with client:
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except TimeoutError as e:
            raise DistributedError(
                f"the Dask scheduler at {scheduler} has no worker after {CONNECT_TIMEOUT:.0f} s: "
                f"start some (`dask worker {scheduler}`)"
            ) from e
        yield client
