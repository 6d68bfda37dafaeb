"""What each DataLoader worker process runs: receive a task, fetch the batch, send it back.

A task is (generation, epoch, batch index, indices); the answer is (generation, batch index,
kind, payload) with kind "batch" (a shared-memory descriptor, shared.py), "error" (the exception,
pickled where it can be, with its traceback) or "end" (an IterableDataset copy is exhausted).
The generation is the main process's count of epochs started: tasks of an abandoned epoch are
skipped once a newer epoch's arrive. An idle worker waits on its task pipe and on the main
process's sentinel together: if the main process has ended, it removes its unread blocks and exits.
(Not `os.getppid()` read at the start: a worker scheduled late reads it after the main process was
killed, and waits forever; nor the task pipe's end of file: a forked worker holds the main
process's ends of its own pipes.)
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import pickle
import signal
import traceback
from collections.abc import Iterator
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from adcore_nn.data import fetch as fetching
from adcore_nn.data import shared, worker_info

__all__ = ["run_worker", "worker_seed"]


def worker_seed(seed: int, epoch: int, worker_id: int) -> int:
    """The seed `get_worker_info().seed` reports: derived from (seed, epoch, worker id)."""
    return int(np.random.SeedSequence((seed, epoch, worker_id)).generate_state(1, np.uint64)[0])


def run_worker(worker_id: int, config: dict, tasks, results, stop) -> None:
    """A worker's life: receive (generation, epoch, batch index, indices), send the batch back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    if isinstance(config, bytes):  # spawned: the dataset's large arrays arrive as shared blocks
        config = pickle.loads(config)
    dataset = config["dataset"]
    prefix = f"{config['prefix']}{worker_id}_"
    epoch_now = generation_now = items = None
    initialised = False
    for serial, (generation, epoch, k, indices) in enumerate(_received(tasks, stop, prefix)):
        name = None
        try:
            if epoch != epoch_now:
                info = worker_info.WorkerInfo(
                    id=worker_id,
                    num_workers=config["num_workers"],
                    seed=worker_seed(config["seed"], epoch, worker_id),
                    dataset=dataset,
                )
                worker_info._set(info)
                epoch_now = epoch
                if not initialised:
                    initialised = True
                    if config["worker_init_fn"] is not None:
                        config["worker_init_fn"](worker_id)
            if indices is None:  # an IterableDataset: this worker's own copy, from its start
                if generation != generation_now:
                    generation_now, items = generation, iter(dataset)
                source, indices = _next_items(items, config)
                if source is None:
                    results.send((generation, k, "end", None))
                    continue
            else:
                source = dataset
            batch = fetching.fetch(
                source, indices, config["collate_fn"], config["seed"], epoch, k, config["auto_collation"]
            )
            name, descriptor = shared.to_shared(batch, f"{prefix}{serial}")
            del batch, source  # the batch lives on in shared memory only, the worker idles lean
            results.send((generation, k, "batch", (name, descriptor)))
        except Exception as error:  # the user's code failed: the main process re-raises it
            shared.unlink(name)
            results.send((generation, k, "error", _portable(error, worker_id, k)))
            if not initialised:  # worker_init_fn raised: this worker is unusable
                return


def _received(tasks, stop, prefix: str) -> Iterator[tuple]:
    """The tasks sent to this worker, but those of an abandoned epoch once a newer one's arrive
    (after a `break`, the next epoch's first batch waits for no stale batch)."""
    main_ended = multiprocessing.parent_process().sentinel  # ready once the main process has ended
    backlog: collections.deque = collections.deque()
    newest = 0
    while True:
        try:
            while not backlog or tasks.poll(0):
                if not backlog and main_ended in wait([tasks, main_ended]):
                    shared.unlink_leftovers(prefix)  # nobody will read them: leave nothing behind
                    return
                task = tasks.recv()
                if task is None:
                    return
                backlog.append(task)
                newest = max(newest, task[0])
        except (EOFError, OSError):
            return
        if stop.is_set():
            return
        task = backlog.popleft()
        if task[0] == newest:
            yield task


def _next_items(items: Iterator, config: dict) -> tuple[list | None, Any]:
    """(the next batch's items as a list, their indices in it), or (None, None) at the end."""
    if not config["auto_collation"]:
        for item in items:
            return [item], 0
        return None, None
    taken = list(itertools.islice(items, config["batch_size"]))
    if not taken or (config["drop_last"] and len(taken) < config["batch_size"]):
        return None, None
    return taken, list(range(len(taken)))


def _portable(error: Exception, worker_id: int, k: int) -> tuple:
    """What the main process needs to raise `error` again: (pickled or None, type, text, traceback)."""
    try:
        pickled = pickle.dumps(error)
        pickle.loads(pickled)
    except Exception:
        pickled = None
    text = "".join(traceback.format_exception(error))
    return pickled, f"{type(error).__module__}.{type(error).__qualname__}", str(error), text
