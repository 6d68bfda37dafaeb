"""adcore_nn.data.workers: batches fetched by worker processes, in order, errors re-raised, deaths caught.

Each pool gets a generous `timeout` as a hang guard (never a timed assertion), and a watchdog
ends the test process if anything still blocks.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from adcore_nn.data import workers
from adcore_nn.data.worker_info import get_worker_info
from adcore_nn.data.workers import WorkerError, WorkerPool, WorkerTimeoutError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the tests fork (Linux)")
GUARD = 60.0  # seconds: the pools' timeout and the watchdog's, far beyond any honest wait


@pytest.fixture(autouse=True)
def watchdog():
    """Ends the test process (with every thread's traceback) if anything still blocks."""
    faulthandler.dump_traceback_later(2 * GUARD, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def info():
    return get_worker_info()


def stack(items):
    """A minimal collate: tuples of arrays stacked field by field."""
    if isinstance(items[0], tuple):
        return tuple(np.stack(f) for f in zip(*items))
    return np.stack(items)


def pool_of(dataset, n=2, **kw):
    kw.setdefault("timeout", GUARD)
    return WorkerPool(dataset, kw.pop("collate_fn", stack), n, **kw)


class Rows:
    """(x[i], i, the id of the worker that fetched it)."""

    def __init__(self, n=40):
        self.x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], np.int64(i), np.int64(info().id)


def chunks(n, size):
    return [list(range(i, min(i + size, n))) for i in range(0, n, size)]


@pytest.mark.parametrize("n_workers, prefetch", [(1, 1), (2, 2), (3, 1)])
def test_batches_come_in_the_samplers_order_fetched_round_robin(n_workers, prefetch):
    data = Rows(40)
    order = np.random.default_rng(1).permutation(40).tolist()
    batches = [order[i : i + 7] for i in range(0, 40, 7)]
    pool = pool_of(data, n_workers, prefetch_factor=prefetch)
    try:
        got = list(pool.epoch(0, batches))
        assert len(got) == len(batches)
        for k, (x, i, w) in enumerate(got):
            assert i.tolist() == batches[k]
            assert np.array_equal(x, data.x[batches[k]])
            assert set(w.tolist()) == {k % n_workers}, "batch k goes to worker k mod num_workers"
        assert list(pool.epoch(1, [[3, 4]]))[0][1].tolist() == [3, 4]
    finally:
        pool.shutdown()


def test_at_most_prefetch_factor_times_workers_tasks_are_outstanding():
    drawn = []

    def sampler():
        for b in chunks(40, 4):
            drawn.append(b)
            yield b

    pool = pool_of(Rows(40), 2, prefetch_factor=3)
    try:
        it = pool.epoch(0, sampler())
        assert len(drawn) == 6, "iter() prefetches prefetch_factor * num_workers batches"
        next(it)
        assert len(drawn) == 7, "each batch taken sends one more task"
        assert len(list(it)) == 9
    finally:
        pool.shutdown()


def test_worker_info_and_init_fn_run_in_each_worker_once():
    class Seen:
        def __len__(self):
            return 8

        def __getitem__(self, i):
            now = info()
            return np.array([now.id, now.num_workers, now.seed % 1000, INIT.get(now.id, -1)])

    pool = pool_of(Seen(), 2, worker_init_fn=_record_init, seed=7, prefetch_factor=1)
    try:
        for epoch in (0, 1):
            got = list(pool.epoch(epoch, chunks(8, 2)))
            for k, b in enumerate(got):
                assert b[:, 0].tolist() == [k % 2] * 2 and b[:, 1].tolist() == [2, 2]
                assert b[:, 2].tolist() == [workers.worker_seed(7, epoch, k % 2) % 1000] * 2
                assert b[:, 3].tolist() == [1] * 2, "worker_init_fn ran once, after worker_info was set"
    finally:
        pool.shutdown()


INIT: dict = {}


def _record_init(worker_id):
    assert info().id == worker_id
    INIT[worker_id] = INIT.get(worker_id, 0) + 1


class Stream:
    """An IterableDataset: each worker's copy yields 0..n-1 (worker-sharded when shard=True)."""

    def __init__(self, n, shard=False):
        self.n, self.shard = n, shard

    def __iter__(self):
        w = info()
        start, step = (w.id, w.num_workers) if self.shard else (0, 1)
        return iter(np.arange(start, self.n, step))


def test_an_iterable_dataset_round_robin_with_each_workers_end_as_torchs():
    pool = pool_of(Stream(7), 2, batch_size=3, auto_collation=True)
    try:
        got = [b.tolist() for b in pool.epoch(0, None)]
        # torch: each worker yields [0,1,2],[3,4,5],[6]; interleaved worker 0, 1, 0, 1, ...
        assert got == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5], [6], [6]]
        again = [b.tolist() for b in pool.epoch(1, None)]
        assert again == got, "a new epoch iterates each worker's copy from its start"
    finally:
        pool.shutdown()
    pool = pool_of(Stream(7, shard=True), 2, batch_size=2, drop_last=True)
    try:
        assert [b.tolist() for b in pool.epoch(0, None)] == [[0, 2], [1, 3], [4, 6]]
    finally:
        pool.shutdown()
    pool = pool_of(Stream(3, shard=True), 2, batch_size=None, auto_collation=False, collate_fn=np.asarray)
    try:
        assert [int(b) for b in pool.epoch(0, None)] == [0, 1, 2]
    finally:
        pool.shutdown()


class Failing:
    def __init__(self, bad, error):
        self.bad, self.error = bad, error

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == self.bad and (info().id == 1 or self.error is not KeyError):
            raise self.error(f"item {i} is bad")
        return np.float64(i)


class Unpicklable(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.lock = __import__("threading").Lock()


def test_a_workers_exception_re_raises_as_itself_with_the_worker_and_its_traceback():
    pool = pool_of(Failing(5, KeyError), 2, prefetch_factor=1)
    try:
        it = pool.epoch(0, [[i] for i in range(10)])
        assert [float(next(it)[0]) for _ in range(5)] == [0, 1, 2, 3, 4]
        with pytest.raises(KeyError, match="item 5 is bad") as caught:
            next(it)
        note = "\n".join(caught.value.__notes__)
        assert "worker 1" in note and "batch 5" in note and "__getitem__" in note and "Traceback" in note
        with pytest.raises(StopIteration):
            next(it)
        got = [float(b[0]) for b in pool.epoch(1, [[i] for i in range(5)])]
        assert got == [0, 1, 2, 3, 4], "the pool serves the next epoch"
    finally:
        pool.shutdown()


def test_an_exception_that_cannot_travel_is_a_worker_error_with_its_text():
    pool = pool_of(Failing(2, Unpicklable), 2)
    try:
        with pytest.raises(WorkerError, match="Unpicklable: item 2 is bad") as caught:
            list(pool.epoch(0, [[i] for i in range(6)]))
        assert "worker 0" in str(caught.value) and "Traceback" in str(caught.value)
        assert [float(b[0]) for b in pool.epoch(1, [[0], [1]])] == [0, 1]
    finally:
        pool.shutdown()


def _failing_init(worker_id):
    if worker_id == 1:
        raise OSError("no such file: the worker's setup failed")


def test_a_failing_worker_init_fn_is_raised_naming_the_worker():
    pool = pool_of(Rows(8), 2, worker_init_fn=_failing_init)
    try:
        with pytest.raises(OSError, match="setup failed") as caught:
            list(pool.epoch(0, chunks(8, 2)))
        assert "worker 1" in "\n".join(caught.value.__notes__)
    finally:
        pool.shutdown()


class Killing:
    """Item 6 kills the worker fetching it (as the OOM killer would)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 6:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.float64(i)


def test_a_killed_worker_is_a_typed_error_naming_it_and_the_next_epoch_restarts_it():
    pool = pool_of(Killing(), 2)
    try:
        with pytest.raises(WorkerError, match=r"worker 0 \(pid \d+\) killed by SIGKILL"):
            list(pool.epoch(0, [[i] for i in range(12)]))
        first = pool.pids
        got = [float(b[0]) for b in pool.epoch(1, [[i] for i in range(5)])]
        assert got == [0, 1, 2, 3, 4]
        assert pool.pids[0] != first[0] and pool.pids[1] == first[1], "only the dead worker was replaced"
    finally:
        pool.shutdown()


class Stalling:
    def __init__(self):
        self.release = None

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3 and info().id == 1 and not os.path.exists(self.release):
            signal.pause()  # blocks until the worker is stopped
        return np.float64(i)


def test_a_stalled_worker_is_a_timeout_error_naming_it_never_a_hang(tmp_path):
    data = Stalling()
    data.release = str(tmp_path / "never")
    pool = pool_of(data, 2, timeout=1.0)  # the stalled batch is never coming: any timeout raises
    try:
        it = pool.epoch(0, [[i] for i in range(6)])
        assert [float(next(it)[0]) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(WorkerTimeoutError, match=r"worker 1 \(pid \d+\).*timeout=1.0"):
            next(it)
        assert not any(os.path.exists(f"/proc/{p}") and _state(p) != "Z" for p in pool.pids[1:])
        open(data.release, "w").close()  # noqa: SIM115 (the file's existence is the flag)
        pool.timeout = GUARD
        assert [float(b[0]) for b in pool.epoch(1, [[i] for i in range(6)])] == [0, 1, 2, 3, 4, 5]
    finally:
        pool.shutdown()


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_a_newer_epoch_makes_the_older_iterator_an_error_not_a_mix():
    pool = pool_of(Rows(20), 2)
    try:
        old = pool.epoch(0, chunks(20, 2))
        next(old)
        new = pool.epoch(1, chunks(20, 5))
        with pytest.raises(Exception, match="replaced by a newer one"):
            next(old)
        assert [b[1].tolist() for b in new] == chunks(20, 5)
    finally:
        pool.shutdown()


def test_bad_arguments_are_typed_errors():
    from adcore.errors import InvalidValueError

    for kw in ({"num_workers": 0}, {"prefetch_factor": 0}, {"timeout": -1}):
        args = {"num_workers": 2, **kw}
        with pytest.raises(InvalidValueError):
            WorkerPool(Rows(4), stack, args.pop("num_workers"), **args)
    pool = pool_of(Rows(4), 1)
    pool.shutdown()
    with pytest.raises(InvalidValueError, match="shut down"):
        pool.epoch(0, [[0]])


def test_an_array_dataset_is_not_copied_into_the_workers():
    big = np.random.default_rng(0).random((2048, 4096))  # 64 MiB; 32 KiB rows

    class Reads:
        def __len__(self):
            return 3

        def __getitem__(self, i):  # item 2 reads nothing: the workers' own memory before reading
            return np.float64(big[i::2].sum() if i < 2 else 0.0)

    pool = pool_of(Reads(), 2, collate_fn=np.asarray, prefetch_factor=1)
    try:
        assert [float(b[0]) for b in pool.epoch(0, [[2], [2]])] == [0.0, 0.0]
        before = sum(_uss(p) for p in pool.pids)
        got = [float(b[0]) for b in pool.epoch(1, [[0], [1]])]  # each worker reads half the pages
        assert got == [big[0::2].sum(), big[1::2].sum()]
        grown = sum(_uss(p) for p in pool.pids) - before
        assert grown < big.nbytes / 4, f"the workers' private memory grew {grown / 2**20:.0f} MiB: a copy"
    finally:
        pool.shutdown()
    gc.collect()


def _uss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return sum(int(fields[k].split()[0]) * 1024 for k in ("Private_Clean", "Private_Dirty"))


SPAWNED = """
import os, sys
import numpy as np
from adcore_nn.data.workers import WorkerPool

def uss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return sum(int(fields[k].split()[0]) * 1024 for k in ("Private_Clean", "Private_Dirty"))

if __name__ == "__main__":
    big = np.random.default_rng(0).random((2048, 4096))  # 64 MiB: a dataset whose rows are items
    pool = WorkerPool(big, np.stack, 2, timeout=60.0, multiprocessing_context=sys.argv[1])
    prefix = pool.shm_prefix
    first = [b.copy() for b in pool.epoch(0, [[0], [1]])]
    assert all(np.array_equal(b, big[[i]]) for i, b in enumerate(first))
    before = sum(uss(p) for p in pool.pids)
    got = list(pool.epoch(1, [list(range(w, 2048, 2)) for w in (0, 1)]))  # every row, both workers
    assert np.array_equal(got[0], big[0::2]) and np.array_equal(got[1], big[1::2])
    del got
    after = sum(uss(p) for p in pool.pids)
    mapping = 0
    for p in pool.pids:
        with open(f"/proc/{p}/maps") as f:
            mapping += f"/dev/shm/{prefix}d0" in f.read()
    pool.shutdown()
    left = [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]
    print(round((after - before) / 2**20), round(after / 2**20), big.nbytes // 2**20, mapping, len(left))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawned_workers_map_the_datasets_large_arrays_instead_of_copies(tmp_path, method):
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    import subprocess

    done = subprocess.run(
        [sys.executable, str(script), method], capture_output=True, text=True, timeout=2 * GUARD
    )
    assert done.returncode == 0, done.stderr
    grown_mib, private_mib, size_mib, mapping, left = map(int, done.stdout.split())
    assert size_mib == 64 and left == 0, "no block left after shutdown"
    assert mapping == 2, "each worker maps the one shared block holding the dataset's array"
    # a copy per worker would be 2 x 64 MiB of private memory, and reading it would not grow it;
    # reading the mapped block adds nothing private
    assert private_mib < 2 * size_mib, f"spawned workers hold {private_mib} MiB privately: copies"
    assert grown_mib < size_mib / 2, f"spawned workers' private memory grew {grown_mib} MiB"


def test_batch_size_none_sends_single_indices_and_collates_each_item():
    pool = pool_of(Rows(6), 2, auto_collation=False, batch_size=None, collate_fn=lambda item: item[1])
    try:
        assert [int(b) for b in pool.epoch(0, iter([5, 0, 3]))] == [5, 0, 3]
    finally:
        pool.shutdown()


def test_a_batch_kept_from_step_3_still_holds_step_3s_numbers_at_the_end():
    data = Rows(64)
    pool = pool_of(data, 2, prefetch_factor=2)
    try:
        kept = None
        for k, (x, i, _) in enumerate(pool.epoch(0, chunks(64, 4))):
            x += 1000.0  # the user's in-place edit of a batch touches that batch only
            if k == 3:
                kept = (x, i)
        for _ in pool.epoch(1, chunks(64, 4)):  # and another epoch's worth of blocks
            pass
        assert kept[1].tolist() == list(range(12, 16))
        assert np.array_equal(kept[0], data.x[12:16] + 1000.0)
        assert np.array_equal(data.x[12:16], np.arange(36, 48, dtype=np.float32).reshape(4, 3))
        del kept, x, i
        gc.collect()
        left = [n for n in os.listdir("/dev/shm") if n.startswith(pool.shm_prefix)]
        assert left == [], "after the epochs, with the batches released, no block remains"
    finally:
        pool.shutdown()


class FreezeCount:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return np.int64(gc.get_freeze_count())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """No object frozen while the test runs (tests/conftest.py freezes the collected tests), as in a
    program that never called gc.freeze(); what was frozen is frozen again after."""
    was_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    if was_frozen:
        gc.freeze()


def test_forked_workers_keep_the_main_processs_objects_out_of_their_collector(unfrozen):
    assert gc.get_freeze_count() == 0
    pool = pool_of(FreezeCount(), 2, collate_fn=np.asarray)
    try:
        counts = [int(b[0]) for b in pool.epoch(0, [[0], [1]])]
        assert min(counts) > 1000, "the objects inherited at the fork are frozen in the workers"
        assert gc.get_freeze_count() == 0, "and back under the main process's collector"
    finally:
        pool.shutdown()
    gc.freeze()  # a program that froze its own objects keeps them frozen
    try:
        frozen = gc.get_freeze_count()
        pool = pool_of(FreezeCount(), 1, collate_fn=np.asarray)
        try:
            assert int(next(pool.epoch(0, [[0]]))[0]) > 1000
            assert gc.get_freeze_count() > frozen // 2, "not unfrozen (that would make it 0)"
        finally:
            pool.shutdown()
    finally:
        gc.unfreeze()


def test_a_dataset_spawned_workers_cannot_receive_is_a_typed_error_naming_the_way_out():
    from adcore.errors import InvalidInputError

    big = np.ones((300, 1000))  # 2.4 MB: shared before the lambda stops the pickling
    with pytest.raises(InvalidInputError, match="cannot be.*module level") as caught:
        WorkerPool([big, lambda: 0], stack, 2, multiprocessing_context="spawn")
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"adnn{os.getpid():x}_")]
    assert caught.value.__cause__ is not None
