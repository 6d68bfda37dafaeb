"""DataLoader's worker processes: batches fetched in parallel, handed back in the sampler's order.

`WorkerPool` starts `num_workers` processes at its first epoch. Batch k of an epoch is a task
sent to the next worker in turn (torch's round robin), with at most prefetch_factor * num_workers
tasks outstanding; a worker fetches it (`adcore_nn.data.fetch.fetch`: seeded per (seed, epoch,
batch index), so which worker fetches a batch changes none of its numbers), writes its arrays
into shared memory (`shared.to_shared`) and sends a descriptor back; the main process yields
batch k as views of that memory, in order.

Start method: "fork" on Linux, else "spawn" (`multiprocessing_context` picks another, as torch's).
A forked worker starts in milliseconds and shares the main process's memory read-only: an array
dataset's arrays are not copied into the workers (their pages are only read), and the Python
objects of the main process are frozen out of the workers' garbage collector (`gc.freeze()`
before the fork), whose passes would otherwise write every object's header and so copy every
page. Reading a Python object still writes its reference count: datasets of millions of small
objects should keep them in a `SerializedList` (see shared.py). fork copies the calling thread
only: a lock another thread of the main process holds at that moment stays held in the worker.
adcore's own code holds none while loading; OpenBLAS and numba's workqueue layer (the one
adcore_kernels selects) restart their threads in the child; numba's GNU OpenMP layer does not:
use multiprocessing_context="forkserver" if workers must run such kernels. A spawned (or
forkserver) worker receives the dataset pickled, except its NumPy arrays of 1 MiB or more: those
are copied once into shared memory that every worker maps read-only (a dataset that writes into
its own arrays in a worker gets an error there, where torch's spawned workers write private
copies). Either way the workers see the dataset as it was when they started (persistent workers:
at the first epoch), as torch's: a change the main process makes later does not reach them.

Errors: a worker's exception re-raises in the main process as its own type (when it can be
pickled; else `WorkerError`) with the worker id and the worker's traceback in a note; the pool
stays usable for the next epoch. A worker that dies (e.g. SIGKILL) is a `WorkerError` naming it,
noticed at once (the main process waits on the workers' pipes and their process sentinels
together); with timeout > 0, a batch not delivered in time is a `WorkerTimeoutError` naming the
worker, which is stopped. A dead worker is started again at the next epoch.

Shutdown: `shutdown()`, the pool's garbage collection and interpreter exit (one weakref.finalize)
stop the workers (a stop message; SIGTERM after 5 s; then SIGKILL; all reaped) and remove every
block not yet read. A worker whose main process died removes its blocks and exits as soon as it
is idle. The batches an abandoned epoch (a `break`) still had in flight are freed as they arrive
during the next epoch, or at shutdown; the tasks it had queued are skipped by the workers.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait
from typing import Any

from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError
from adcore_nn.data import shared
from adcore_nn.data.worker_process import run_worker, worker_seed

__all__ = ["WorkerError", "WorkerPool", "WorkerTimeoutError", "worker_seed"]

_POOL_NUMBERS = itertools.count()
_STOP_GRACE = 5.0  # seconds a worker gets to finish its batch and exit before it is terminated


class WorkerError(AdcoreError, RuntimeError):
    """A DataLoader worker died, stalled, or raised an exception that could not travel as itself."""


class WorkerTimeoutError(WorkerError):
    """A DataLoader worker delivered no batch within the loader's timeout."""


def default_context() -> str:
    """fork on Linux (fast start, memory shared read-only), spawn elsewhere (fork is unsafe on macOS)."""
    return "fork" if sys.platform == "linux" else "spawn"


class _Worker:
    """One worker process and the main process's ends of its two pipes."""

    def __init__(self, context, worker_id: int, config: dict | bytes, stop):
        self.id = worker_id
        worker_tasks, self.tasks = context.Pipe(duplex=False)  # (reader, writer)
        self.results, worker_results = context.Pipe(duplex=False)
        self.process = context.Process(
            target=run_worker,
            args=(worker_id, config, worker_tasks, worker_results, stop),
            name=f"adcore_nn DataLoader worker {worker_id}",
            daemon=True,
        )
        self.process.start()
        worker_tasks.close()
        worker_results.close()

    def describe(self) -> str:
        return f"DataLoader worker {self.id} (pid {self.process.pid})"

    def death(self) -> str:
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"


class _Pool:
    """The processes, pipes and shared-memory prefix of a WorkerPool: what its finalizer stops."""

    def __init__(self, context, config: dict):
        self.context, self.config = context, config
        self.stop = context.Event()
        self.workers: list[_Worker | None] = [None] * config["num_workers"]
        if context.get_start_method() != "fork":  # pickled once: the workers map its arrays
            try:
                config, _ = shared.dumps_sharing_arrays(config, f"{config['prefix']}d")
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise InvalidInputError(
                    f"DataLoader workers started by {context.get_start_method()!r} receive the dataset, "
                    f"collate_fn and worker_init_fn pickled, and one of them cannot be: {error}. Define "
                    "them at module level (no lambdas or local classes), or use "
                    "multiprocessing_context='fork' where available"
                ) from error
        self.payload = config
        self.closed = False

    def start_missing(self) -> None:
        """Start every worker not running (all at the first epoch; one that died, later)."""
        for i, w in enumerate(self.workers):
            if w is not None and w.process.is_alive():
                continue
            if w is not None:
                self.retire(w)
            # (a program that froze objects itself keeps its own freeze: unfreezing would undo it)
            frozen = self.context.get_start_method() == "fork" and gc.get_freeze_count() == 0
            if frozen:  # the child's garbage collector never walks (and so never copies) our objects;
                # no collection first: it would cost every non-persistent epoch's start a full pass
                gc.freeze()
            try:
                self.workers[i] = _Worker(self.context, i, self.payload, self.stop)
            finally:
                if frozen:
                    gc.unfreeze()

    def retire(self, w: _Worker) -> None:
        """Forget a worker that has exited: read what it left in its pipe, free its blocks."""
        drain(w)
        w.tasks.close()
        w.results.close()
        w.process.join(0)
        shared.unlink_leftovers(f"{self.config['prefix']}{w.id}_")

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.stop.set()
        live = [w for w in self.workers if w is not None]
        for w in live:
            try:
                w.tasks.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + _STOP_GRACE
        while any(w.process.is_alive() for w in live) and time.monotonic() < deadline:
            ready = [w.results for w in live if not w.results.closed]
            wait(ready + [w.process.sentinel for w in live], 0.05)
            for w in live:  # a worker blocked sending a batch must be read to exit
                drain(w)
        for w in live:
            _stop(w)
            self.retire(w)
        shared.unlink_leftovers(self.config["prefix"])


def _stop(w: _Worker) -> None:
    """End w's process now: SIGTERM, then SIGKILL if it lingers; reaped (no zombie)."""
    if w.process.is_alive():
        w.process.terminate()
        w.process.join(1.0)
    if w.process.is_alive():
        w.process.kill()
    w.process.join()


def drain(w: _Worker) -> None:
    """Read and discard what w has sent, removing the shared-memory blocks it named."""
    try:
        while not w.results.closed and w.results.poll(0):
            _discard(w.results.recv())
    except (EOFError, OSError):
        pass


def _discard(message: tuple) -> None:
    _, _, kind, payload = message
    if kind == "batch":
        shared.unlink(payload[0])


class WorkerPool:
    """num_workers processes fetching batches for DataLoader; `epoch` yields them in order.

    Torch's arguments; `seed` seeds per (seed, epoch, batch index), `auto_collation` is False for
    batch_size=None (collate_fn applied to each item), `batch_size`/`drop_last` serve an
    IterableDataset (batches=None): each worker iterates its own copy, as torch's. A pool is
    persistent: its workers live from the first epoch to `shutdown()` (or the pool's garbage
    collection, or interpreter exit); a loader without persistent_workers makes one per epoch.
    """

    def __init__(
        self,
        dataset: Any,
        collate_fn: Callable,
        num_workers: int,
        worker_init_fn: Callable[[int], None] | None = None,
        prefetch_factor: int = 2,
        timeout: float = 0.0,
        seed: int = 0,
        auto_collation: bool = True,
        drop_last: bool = False,
        batch_size: int | None = 1,
        multiprocessing_context: str | Any | None = None,
    ):
        if not isinstance(num_workers, int) or num_workers < 1:
            raise InvalidValueError(f"WorkerPool: num_workers must be an int >= 1, got {num_workers!r}")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise InvalidValueError(
                f"WorkerPool: prefetch_factor must be an int >= 1, got {prefetch_factor!r}"
            )
        if not timeout >= 0:
            raise InvalidValueError(f"WorkerPool: timeout must be >= 0 seconds, got {timeout!r}")
        context = multiprocessing_context or default_context()
        if isinstance(context, str):
            context = multiprocessing.get_context(context)
        self.timeout, self.prefetch_factor = float(timeout), prefetch_factor
        config = {
            "dataset": dataset,
            "collate_fn": collate_fn,
            "num_workers": num_workers,
            "worker_init_fn": worker_init_fn,
            "seed": seed,
            "auto_collation": auto_collation,
            "drop_last": drop_last,
            "batch_size": batch_size,
            "prefix": f"adnn{os.getpid():x}_{next(_POOL_NUMBERS)}_",
        }
        self._pool = _Pool(context, config)
        self._finalizer = weakref.finalize(self, _Pool.shutdown, self._pool)
        self._generation = 0

    @property
    def shm_prefix(self) -> str:
        """The start of the names of this pool's shared-memory blocks under /dev/shm."""
        return self._pool.config["prefix"]

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers started so far."""
        return [w.process.pid for w in self._pool.workers if w is not None]

    def shutdown(self) -> None:
        """Stop the workers and free every shared-memory block not yet read (idempotent)."""
        self._finalizer()

    def epoch(self, epoch: int, batches: Iterable[list[int]] | None) -> Iterator[Any]:
        """The batches of `batches` (index lists; None for an IterableDataset), fetched by the
        workers and yielded in order. Starting another epoch abandons this one's iterator."""
        if self._pool.closed:
            raise InvalidValueError("WorkerPool: the workers were shut down; make a new DataLoader iterator")
        self._pool.start_missing()
        self._generation += 1
        run = _Epoch(self, self._generation, epoch, batches)
        run.prefetch()
        return run.batches()


class _Epoch:
    """One epoch's dispatch (tasks to workers in turn) and reordering (batches by index)."""

    def __init__(self, owner: WorkerPool, generation: int, epoch: int, batches):
        self.owner, self.pool, self.generation, self.epoch = owner, owner._pool, generation, epoch
        self.indices = iter(batches) if batches is not None else itertools.repeat(None)
        self.active = [True] * len(self.pool.workers)
        self.turn = itertools.cycle(range(len(self.pool.workers)))
        self.sent = 0  # tasks sent: the next task's batch index
        self.assigned: dict[int, _Worker] = {}  # batch index -> worker, while outstanding
        self.arrived: dict[int, tuple] = {}  # batch index -> (kind, payload), until yielded

    def prefetch(self) -> None:
        for _ in range(self.owner.prefetch_factor * len(self.pool.workers)):
            self.send_next()

    def send_next(self) -> None:
        """Send the next batch's task to the next active worker (torch's _try_put_index)."""
        if len(self.assigned) >= self.owner.prefetch_factor * len(self.active):
            return
        for _ in range(len(self.active)):
            i = next(self.turn)
            if self.active[i]:
                break
        else:
            return
        indices = next(self.indices, StopIteration)
        if indices is StopIteration:
            return
        w = self.pool.workers[i]
        try:
            w.tasks.send((self.generation, self.epoch, self.sent, indices))
        except OSError:  # its process is gone
            w.process.join(_STOP_GRACE)
            raise self.died(w) from None
        self.assigned[self.sent] = w
        self.sent += 1

    def batches(self) -> Iterator[Any]:
        k = 0
        try:
            while k < self.sent:
                if self.generation != self.owner._generation:
                    raise InvalidValueError(
                        "DataLoader: this iterator was replaced by a newer one over the same persistent "
                        "workers (iter(loader) was called again); iterate the new one"
                    )
                kind, payload = self.result(k)
                k += 1
                if kind == "end":  # that worker's IterableDataset copy is exhausted
                    self.active[self.assigned_worker_id] = False
                    self.send_next()
                    continue
                if kind == "error":
                    raise_worker_error(payload, self.assigned_worker_id, k - 1)
                batch = shared.from_shared(*payload)
                self.send_next()
                yield batch
        finally:
            for name, payload in self.arrived.values():  # batches never yielded: free their blocks
                if name == "batch":
                    shared.unlink(payload[0])
            self.arrived.clear()

    def result(self, k: int) -> tuple:
        """(kind, payload) of batch k: wait for it, reading every worker meanwhile."""
        w = self.assigned[k]
        deadline = time.monotonic() + self.owner.timeout if self.owner.timeout > 0 else None
        while k not in self.arrived:
            self.check_alive()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                _stop(w)  # stalled: the next epoch starts a new one
                raise WorkerTimeoutError(
                    f"{w.describe()} delivered no batch within timeout={self.owner.timeout} s "
                    f"(batch {k} of epoch {self.epoch}); it was stopped. Raise the DataLoader's "
                    "timeout if a batch takes longer, or find where the dataset blocks."
                )
            live = [x for x in self.pool.workers if self.expected_from(x) or x.process.is_alive()]
            wait([x.results for x in live] + [x.process.sentinel for x in live], left)
            for x in live:
                self.receive(x)
        self.assigned_worker_id = self.assigned.pop(k).id
        return self.arrived.pop(k)

    def receive(self, w: _Worker) -> None:
        try:
            while w.results.poll(0):
                message = w.results.recv()
                generation, k, kind, payload = message
                if generation == self.generation:
                    self.arrived[k] = (kind, payload)
                else:  # an abandoned epoch's batch
                    _discard(message)
        except (EOFError, OSError):
            pass

    def check_alive(self) -> None:
        for w in self.pool.workers:
            if w is not None and not w.process.is_alive():
                self.receive(w)
                failed = [
                    k for k, (kind, _) in self.arrived.items() if kind == "error" and self.assigned[k] is w
                ]
                if failed:  # it reported why it ended (its worker_init_fn raised): that is the error
                    raise_worker_error(self.arrived[min(failed)][1], w.id, min(failed))
                if self.expected_from(w):
                    raise self.died(w)

    def expected_from(self, w: _Worker) -> bool:
        """Whether this epoch may still need w (a dead worker it needs not is left out of waits)."""
        return self.active[w.id] or any(x is w for k, x in self.assigned.items() if k not in self.arrived)

    def died(self, w: _Worker) -> WorkerError:
        return WorkerError(
            f"{w.describe()} {w.death()} while fetching (epoch {self.epoch}); its batches are "
            "lost. The next epoch starts a new worker. A worker killed by SIGKILL is often "
            "out of memory: fewer workers or a smaller prefetch_factor use less."
        )


def raise_worker_error(payload: tuple, worker_id: int, k: int) -> None:
    """Raise a worker's exception in the main process: its own type where it survived pickling."""
    pickled, type_name, text, trace = payload
    note = (
        f"raised in DataLoader worker {worker_id} while fetching batch {k}; the worker's traceback:\n{trace}"
    )
    error = None
    if pickled is not None:
        try:
            error = pickle.loads(pickled)
        except Exception:
            error = None
    if error is None:
        raise WorkerError(f"{type_name}: {text}\n{note}")
    error.add_note(note)
    raise error
