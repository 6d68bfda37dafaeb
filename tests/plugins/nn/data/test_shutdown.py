"""Worker pools end without orphans or leaked shared memory: shutdown, break, exceptions, garbage
collection, interpreter exit, and a main process killed outright.

Leaks are looked for directly: the worker pids in /proc, the pool's names under /dev/shm.
Every wait has a generous deadline (a hang guard, never a timed assertion).
"""

from __future__ import annotations

import faulthandler
import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from adcore_nn.data import shared
from adcore_nn.data.workers import WorkerPool

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the tests fork and read /proc and /dev/shm (Linux)"
)
GUARD = 60.0


@pytest.fixture(autouse=True)
def watchdog():
    """Ends the test process (with every thread's traceback) if anything still blocks."""
    faulthandler.dump_traceback_later(2 * GUARD, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def alive(pid: int) -> bool:
    """pid runs (a zombie, exited but not yet reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def blocks(prefix: str) -> list[str]:
    return [n for n in os.listdir(shared.SHM_DIR) if n.startswith(prefix)]


def stack(items):
    return np.stack(items)


def rows(n=64):
    return np.arange(n * 4, dtype=np.float64).reshape(n, 4)


def started_pool(data, **kw) -> tuple[WorkerPool, list[int], str]:
    pool = WorkerPool(data, stack, 2, timeout=GUARD, **kw)
    first = next(pool.epoch(0, [[0, 1]]))
    assert np.array_equal(first, data[[0, 1]])
    return pool, pool.pids, pool.shm_prefix


def test_shutdown_after_a_break_leaves_no_process_and_no_block():
    data = rows()
    pool, pids, prefix = started_pool(data, prefetch_factor=4)
    for k, batch in enumerate(pool.epoch(1, [[i, i + 1] for i in range(0, 64, 2)])):
        assert np.array_equal(batch, data[[2 * k, 2 * k + 1]])
        if k == 3:
            break  # with eight batches in flight
    pool.shutdown()
    pool.shutdown()  # idempotent
    assert not any(alive(p) for p in pids)
    assert blocks(prefix) == []


def test_a_break_then_the_next_epoch_frees_the_abandoned_batches_with_the_workers_alive():
    data = rows()
    pool, pids, prefix = started_pool(data, prefetch_factor=4)
    try:
        it = pool.epoch(1, [[i] for i in range(64)])
        kept = next(it)
        del it  # the loop body raised, or broke: the iterator is dropped mid-epoch
        gc.collect()
        got = list(pool.epoch(2, [[i] for i in range(8)]))
        assert [b[0, 0] for b in got] == [data[i, 0] for i in range(8)]
        del got
        gc.collect()
        assert blocks(prefix) == [], "the abandoned epoch's batches were freed as they arrived"
        assert np.array_equal(kept, data[[0]]) and all(alive(p) for p in pids)
    finally:
        pool.shutdown()


def test_an_exception_in_the_loop_body_then_shutdown():
    data = rows()
    pool, pids, prefix = started_pool(data)
    with pytest.raises(ZeroDivisionError):
        for batch in pool.epoch(1, [[i] for i in range(64)]):
            assert batch.shape == (1, 4)
            raise ZeroDivisionError("the training step failed")
    pool.shutdown()
    assert not any(alive(p) for p in pids) and blocks(prefix) == []


def test_garbage_collecting_the_pool_stops_its_workers():
    data = rows()
    pool, pids, prefix = started_pool(data)
    it = pool.epoch(1, [[i] for i in range(64)])
    next(it)
    del pool, it
    gc.collect()
    assert not any(alive(p) for p in pids)
    assert blocks(prefix) == []


def test_blocks_a_killed_worker_left_behind_are_removed_at_shutdown():
    pool, pids, prefix = started_pool(rows())
    orphan, _ = shared.to_shared(np.ones(10), f"{prefix}0_999")  # as a worker killed mid-send leaves
    assert blocks(prefix) == [orphan]
    pool.shutdown()
    assert blocks(prefix) == []


def run_script(body: str, before: str = "") -> tuple[list[int], str, subprocess.CompletedProcess]:
    script = (
        textwrap.dedent(
            """
        import os, signal, sys
        import numpy as np
        from adcore_nn.data.workers import WorkerPool
        """
        )
        + textwrap.dedent(before)
        + textwrap.dedent(
            """
        pool = WorkerPool(np.arange(100.0).reshape(50, 2), np.stack, 2, timeout=60.0, prefetch_factor=4)
        it = pool.epoch(0, [[i] for i in range(50)])
        batch = next(it)
        print(*pool.pids, pool.shm_prefix, flush=True)
        """
        )
        + textwrap.dedent(body)
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=GUARD)
    *pids, prefix = done.stdout.split()
    return [int(p) for p in pids], prefix, done


def gone_eventually(pids: list[int], prefix: str) -> bool:
    """Whether the pids end and the blocks go (a hang guard: the workers notice within a second)."""
    deadline = time.monotonic() + GUARD
    while (any(alive(p) for p in pids) or blocks(prefix)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pids) and blocks(prefix) == []


def test_interpreter_exit_without_shutdown_stops_the_workers():
    pids, prefix, done = run_script("sys.exit(0)  # with the pool, an iterator and a batch alive")
    assert done.returncode == 0, done.stderr
    assert len(pids) == 2 and prefix.startswith("adnn")
    assert not any(alive(p) for p in pids)
    assert blocks(prefix) == []
    assert "leaked" not in done.stderr and "Traceback" not in done.stderr


def test_a_killed_main_process_leaves_no_orphan_workers_and_no_blocks():
    pids, prefix, done = run_script("os.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == -9
    assert len(pids) == 2
    assert gone_eventually(pids, prefix), "the orphaned workers exit and remove their blocks"


def test_a_worker_scheduled_after_its_main_process_was_killed_still_exits():
    """Under load a worker may first run after the main process died (reading os.getppid() then
    gives the new parent, and a forked worker holds the main's ends of its own pipes: no EOF)."""
    late_worker = """
        import multiprocessing, multiprocessing.util, time
        main = os.getpid()

        def starts_late(_):  # runs in each forked worker before run_worker
            if multiprocessing.current_process().name.endswith(" 1"):
                while os.getppid() == main:  # until the main process is killed
                    time.sleep(0.01)

        multiprocessing.util.register_after_fork(starts_late, starts_late)
        """
    pids, prefix, done = run_script("os.kill(os.getpid(), signal.SIGKILL)", before=late_worker)
    assert done.returncode == -9 and len(pids) == 2
    assert gone_eventually(pids, prefix), "the late worker exits and removes its blocks"
