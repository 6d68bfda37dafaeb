"""adcore.conformance.progress: the lines a run prints off a terminal, the heartbeat naming the
units in flight and numba's compiles, announced from this process and from forked workers."""

from __future__ import annotations

import importlib.machinery
import io
import os
import queue
import subprocess
import sys
import types

import pytest

from adcore.conformance import engine, progress
from adcore.conformance.engine import Unit
from adcore.conformance.progress import ProgressLines

SIN = Unit("op", "sin", "float64", ("reverse",))


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _lines(total: int = 20) -> tuple[ProgressLines, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return ProgressLines(total, out=out, clock=clock), out, clock


def test_the_heartbeat_names_the_units_in_flight_and_what_numba_compiles_for_them():
    lines, out, clock = _lines()
    lines.beat()
    assert out.getvalue() == ""  # no line before HEARTBEAT seconds of silence
    clock.now += ProgressLines.HEARTBEAT
    lines.beat()
    assert out.getvalue() == "conformance: 0/20 units, 5.0 s; no unit announced yet (a cluster's run)\n"
    lines.heard(11, "unit", "conv2d (float64)")
    lines.heard(12, "unit", "sin (float32)")
    lines.heard(11, "numba", "adcore_kernels._direct.conv")
    clock.now += ProgressLines.HEARTBEAT
    lines.beat()
    last = out.getvalue().splitlines()[-1]
    assert last == (
        "conformance: 0/20 units, 10.0 s; running conv2d (float64), numba compiling "
        "adcore_kernels._direct.conv; sin (float32)"
    )
    lines.heard(11, "unit", "max_pool2d (float64)")  # the process's next unit: its compiles are over
    clock.now += ProgressLines.HEARTBEAT
    lines.beat()
    assert out.getvalue().splitlines()[-1].endswith("running max_pool2d (float64); sin (float32)")


def test_a_line_per_tenth_of_the_units_done_and_none_in_between():
    lines, out, clock = _lines(total=20)
    for _ in range(5):
        lines(SIN)
    assert [line.split(" units")[0] for line in out.getvalue().splitlines()] == [
        "conformance: 2/20",
        "conformance: 4/20",
    ]
    clock.now += ProgressLines.HEARTBEAT - 1
    lines.beat()  # a line was printed less than HEARTBEAT seconds ago
    assert len(out.getvalue().splitlines()) == 2


def test_unit_started_announces_the_unit_and_numbas_compiles_in_it(monkeypatch):
    numba = pytest.importorskip("numba")
    from numba.core import event

    channel: queue.Queue = queue.Queue()
    monkeypatch.setattr(progress, "_channel", channel)
    monkeypatch.setattr(progress, "_numba_listening", set())
    before = list(event._registered["numba:compile"])
    try:
        progress.unit_started(SIN)

        def plus_one(x):
            return x + 1

        assert numba.njit(plus_one)(1) == 2
    finally:
        event._registered["numba:compile"][:] = before
    heard = [channel.get_nowait() for _ in range(channel.qsize())]
    assert heard[0] == (os.getpid(), "unit", "sin (float64)")
    assert (os.getpid(), "numba", f"{__name__}.{plus_one.__qualname__}") in heard


def test_a_numba_still_being_imported_is_left_alone_until_its_import_ends(monkeypatch):
    """The listener's thread saw numba in sys.modules while the checking thread was importing it,
    imported it too, and the two deadlocked (llvmlite's lock against the import lock)."""
    numba = pytest.importorskip("numba")
    from numba.core import event

    monkeypatch.setattr(progress, "_numba_listening", set())
    before = list(event._registered["numba:compile"])
    half = types.ModuleType("numba")
    half.__spec__ = importlib.machinery.ModuleSpec("numba", None)
    half.__spec__._initializing = True  # as importlib marks a module whose code is running
    try:
        monkeypatch.setitem(sys.modules, "numba", half)
        progress.hear_numba()
        assert progress._numba_listening == set() and event._registered["numba:compile"] == before
        monkeypatch.setitem(sys.modules, "numba", numba)  # its import has ended
        progress.hear_numba()
        progress.hear_numba()  # once per process
        assert progress._numba_listening == {os.getpid()}
        assert len(event._registered["numba:compile"]) == len(before) + 1
    finally:
        event._registered["numba:compile"][:] = before


def test_unit_started_is_a_no_op_without_a_listener_and_never_imports_numba():
    code = (
        "import sys\n"
        "from adcore.conformance import progress\n"
        "from adcore.conformance.engine import Unit\n"
        "progress.unit_started(Unit('op', 'sin', 'float64', ('reverse',)))\n"
        "import queue; progress._channel = queue.Queue()\n"
        "progress.unit_started(Unit('op', 'sin', 'float64', ('reverse',)))\n"
        "assert progress._channel.get_nowait()[1:] == ('unit', 'sin (float64)')\n"
        "assert 'numba' not in sys.modules, 'progress imported numba'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.skipif(sys.platform != "linux", reason="--jobs forks its workers only on Linux")
def test_forked_workers_announce_their_units_to_the_run(monkeypatch, clean_plugins):
    monkeypatch.setattr(ProgressLines, "HEARTBEAT", float("inf"))  # this test reads what was heard
    out = io.StringIO()
    lines = ProgressLines(4, out=out)
    with progress.listening(lines):
        engine.run(["reverse"], ["sin", "cos"], dtypes=("float64", "float32"), jobs=2, progress=lines)
    assert progress._channel is None
    units = {unit for pid, (unit, *_) in lines.running.items() if pid != os.getpid()}
    assert units and units <= {"sin (float32)", "cos (float32)", "sin (float64)", "cos (float64)"}
    assert lines.done == 4


class FakeWorker:
    def __init__(self) -> None:
        self.events: list[tuple[str, list]] = []

    def log_event(self, topic: str, message: list) -> None:
        self.events.append((topic, message))


class FakeClient:
    def __init__(self) -> None:
        self.handlers: dict = {}

    def subscribe_topic(self, topic: str, handler) -> None:
        self.handlers[topic] = handler


def test_a_dask_workers_announcements_reach_the_runs_progress_as_log_events(monkeypatch):
    # the worker's side: unit_started becomes a log event on TOPIC (distributed._checked sets it up)
    worker = FakeWorker()
    monkeypatch.setattr(progress, "_channel", progress._WorkerEvents(worker))
    progress.unit_started(SIN)
    assert worker.events == [(progress.TOPIC, [os.getpid(), "unit", "sin (float64)"])]
    # the client's side: a listening run subscribes and puts each event's message on its queue
    client, channel = FakeClient(), queue.Queue()
    progress.relay_from_cluster(client)  # a worker's channel is not a run's: it relays nothing
    assert client.handlers == {}
    monkeypatch.setattr(progress, "_channel", channel)
    progress.relay_from_cluster(client)
    client.handlers[progress.TOPIC]((1234.5, [4321, "unit", "cos (float32)"]))
    assert channel.get_nowait() == (4321, "unit", "cos (float32)")


def test_no_run_listening_subscribes_to_nothing(monkeypatch):
    monkeypatch.setattr(progress, "_channel", None)
    client = FakeClient()
    progress.relay_from_cluster(client)
    assert client.handlers == {}
