"""Progress of a conformance run on stderr: a bar on a terminal; off one (CI, a redirect), plain
lines: one at once saying what the run covers, one per tenth of the units done, and a heartbeat
at most every `ProgressLines.HEARTBEAT` seconds while none finishes, naming the units in flight and
what numba is compiling for them.

The processes checking units announce each unit they start (`unit_started`, called by
engine.check_units) and numba's compiles in it on a queue the run's processes share: the one this
process makes before `--jobs` forks its workers, who inherit it. A process that did not inherit it
(a spawned one) announces nothing, and the heartbeat says only how many are done. A Dask worker
announces as a Dask log event on TOPIC (`on_dask_worker`), which the client relays into the run's
queue (`relay_from_cluster`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_channel: Any = None  # the run's queue of (pid, what, name) while a ProgressLines listens
_numba_listening: set[int] = set()  # the processes whose numba compiles are announced
_numba_lock = threading.Lock()
TOPIC = "adcore-conformance-progress"  # the Dask log events a worker's announcements travel as


def unit_started(unit: Any) -> None:
    """Announce that this process starts checking `unit` (a no-op unless a run listens)."""
    if _channel is None:
        return
    _channel.put((os.getpid(), "unit", f"{unit.name} ({unit.dtype})"))
    hear_numba()


def hear_numba() -> None:
    """Announce numba's compiles in this process from now on, once numba is imported (never
    importing it: a run without numba's plugins does not pay for it). A numba another thread is
    still importing is left alone: importing it here too (the listener's thread) took llvmlite's
    lock and the import lock in the other order, and both threads waited forever."""
    numba = sys.modules.get("numba")
    if numba is None or getattr(numba.__spec__, "_initializing", False):
        return
    event = sys.modules.get("numba.core.event")  # imported by numba's own __init__
    with _numba_lock:  # the listener's thread and the checking one may both get here
        if event is None or os.getpid() in _numba_listening:
            return
        _numba_listening.add(os.getpid())

    class NumbaCompiles(event.Listener):
        """Each function numba starts compiling in this process, on the channel."""

        def on_start(self, event: Any) -> None:
            if _channel is not None:
                function = getattr(event.data.get("dispatcher"), "py_func", None)
                name = getattr(function, "__qualname__", "a function")
                _channel.put((os.getpid(), "numba", f"{getattr(function, '__module__', '')}.{name}"))

        def on_end(self, event: Any) -> None:
            pass

    event.register("numba:compile", NumbaCompiles())


class _WorkerEvents:
    """A Dask worker's channel: each announcement a log event on TOPIC, which the client hears."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def put(self, message: tuple) -> None:
        self.worker.log_event(TOPIC, list(message))


def on_dask_worker() -> None:
    """In a Dask worker's task: announce this worker's units to the client (`relay_from_cluster`).
    Set once per worker process and kept: a worker runs only tasks of the runs it serves."""
    global _channel
    if _channel is None:
        from distributed import get_worker

        _channel = _WorkerEvents(get_worker())


def relay_from_cluster(client: Any) -> None:
    """Hear the cluster's announcements (TOPIC) in the run's progress, if one listens here."""
    channel = _channel
    if channel is not None and not isinstance(channel, _WorkerEvents):
        client.subscribe_topic(TOPIC, lambda event: channel.put(tuple(event[1])))


class ProgressLines:
    """Progress as plain lines on `out`: the run's size at once, a line each time another tenth of
    the units is done (or as one is, SILENCE seconds after the last line), and `beat()`'s
    heartbeat (the units in flight) when no line was printed for HEARTBEAT seconds; `clock` is
    injectable for tests."""

    SILENCE = 10.0
    HEARTBEAT = 5.0

    def __init__(
        self, total: int, out: TextIO | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.total, self.done, self.tenths = total, 0, 0
        self.out, self.clock = out, clock
        self.start = self.last = clock()
        self.running: dict[int, list[str]] = {}  # pid -> [unit, what numba compiles for it, ...]

    def say(self, text: str) -> None:
        self.last = self.clock()
        print(f"conformance: {text}", file=self.out or sys.stderr, flush=True)

    def __call__(self, unit: Any) -> None:
        """A unit is done."""
        self.done += 1
        tenths = 10 * self.done // max(self.total, 1)
        if tenths > self.tenths or self.clock() - self.last >= self.SILENCE:
            self.tenths = tenths
            self.say(
                f"{self.done}/{self.total} units ({100 * self.done // max(self.total, 1)}%) "
                f"{self.clock() - self.start:.1f} s  {unit.name} ({unit.dtype})"
            )

    def heard(self, pid: int, what: str, name: str) -> None:
        """A process's announcement: a unit it starts, or a function numba compiles in it."""
        if what == "unit":
            self.running[pid] = [name]
        else:
            self.running.setdefault(pid, ["a unit"]).append(name)

    def beat(self) -> None:
        """The heartbeat, if HEARTBEAT seconds passed since the last line."""
        if self.clock() - self.last < self.HEARTBEAT:
            return
        doing = []
        for unit, *compiling in self.running.values():
            doing.append(unit + (f", numba compiling {', '.join(compiling[-3:])}" if compiling else ""))
        doing_text = f"running {'; '.join(doing)}" if doing else "no unit announced yet (a cluster's run)"
        self.say(f"{self.done}/{self.total} units, {self.clock() - self.start:.1f} s; {doing_text}")


@contextmanager
def listening(lines: ProgressLines) -> Iterator[ProgressLines]:
    """`lines` hears the announcements of this process and of the processes it forks (through a
    queue they inherit) and beats on a thread while the block runs."""
    global _channel
    fork = sys.platform == "linux"
    channel = multiprocessing.get_context("fork").Queue() if fork else queue.Queue()
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            try:
                lines.heard(*channel.get(timeout=0.5))
            except queue.Empty:
                pass
            hear_numba()  # a serial run's first unit may import numba: its compiles are this process's
            lines.beat()

    _channel = channel
    thread = threading.Thread(target=listen, name="adcore conformance progress", daemon=True)
    thread.start()
    try:
        yield lines
    finally:
        _channel = None
        stop.set()
        thread.join()
        with contextlib.suppress(queue.Empty):  # what the last units announced: heard, never printed
            while True:
                lines.heard(*channel.get(timeout=0.1))
        if fork:
            channel.close()
            channel.cancel_join_thread()


@contextmanager
def shown(work: Any, jobs: int = 1, scheduler: str | None = None) -> Iterator[Callable[[Any], None]]:
    """What to call as each unit of `work` is done: on stderr, so that a report written to stdout
    stays clean, a bar on a terminal, plain lines in a log (CI, a redirect), where a bar would
    show nothing until the end."""
    total = len(work.units)
    if not sys.stderr.isatty():
        lines = ProgressLines(total)
        where = f"on the Dask cluster {scheduler}" if scheduler else f"in {jobs} process{'es' * (jobs > 1)}"
        lines.say(
            f"{total} units: {len(work.subjects)} subject{'s' * (len(work.subjects) != 1)} x {', '.join(work.dtypes)} on backends "
            f"{', '.join(work.backends)}, {where}"
        )
        with listening(lines):
            yield lines
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as progress:
        task = progress.add_task("conformance", total=total)
        yield lambda unit: progress.update(task, advance=1, description=f"{unit.name} ({unit.dtype})")
