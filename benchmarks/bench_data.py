"""adcore_nn's DataLoader and Module against torch's, side by side (issue 36's benchmark).

Run by hand (not part of the tests):  python benchmarks/bench_data.py [throughput memory first module]

1. throughput: a 60,000 x 784 float32 array dataset (with int64 labels), a per-item NumPy transform
   (standardise and clip), batch 256, shuffled, 2 workers, persistent workers: items per second over
   a whole epoch (the best of epochs 2 and 3, after the workers started), adcore_nn.data.DataLoader
   over an ArrayDataset against torch's DataLoader over the same arrays. Target: >= 1.5x torch.
2. memory: a dataset holding 10^6 Python objects (tuples), 3 shuffled epochs, 2 persistent workers:
   the growth of the workers' memory from their first batch to the end of epoch 3, as resident
   set (RSS), proportional (PSS) and unique (USS = private clean + dirty) sizes from
   /proc/<pid>/smaps_rollup, summed over the workers. torch's workers, forked, copy the pages
   their reads touch (reference counts: pytorch#13246), which USS and PSS show. Target: <= 5%.
3. first batch: the time from `iter(loader)` to the first batch of epochs 2, 3 and 4 of a
   persistent-worker loader over dataset 1 (the worst of the three). Target: <= 100 ms.
4. module: value_and_grad of a 784-512-512-10 ReLU MLP with a mean cross-entropy, batch 128, float32,
   as an adcore_nn Module (Sequential of Linear/ReLU, the model a pytree argument) against the same
   network written as a function of six arrays. Target: Module <= 1.1x the function.

Every loader's first batch is checked against the transform applied by hand, and the two MLPs'
gradients against each other, before anything is timed. torch is optional: without it its column
prints "not installed". One BLAS thread (benchmarks/timing.py's one_blas_thread); figures on this
small shared machine vary from run to run: compare the ratios within one run.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from importlib import metadata

from timing import one_blas_thread  # noqa: E402  (before NumPy loads)

one_blas_thread()

import numpy as np  # noqa: E402

import adcore  # noqa: E402
import adcore.numpy as anp  # noqa: E402

try:
    import torch
    import torch.utils.data

    torch.set_num_threads(1)
except ImportError:
    torch = None

from timing import ERROR, MISSING, cell, guarded, race, ratio, row  # noqa: E402

WORKERS, SEED = 2, 0


def at_least(v, target):
    return ("OK" if v >= target else "MISS") if isinstance(v, float) else "-"


def at_most(v, target):
    return ("OK" if v <= target else "MISS") if isinstance(v, float) else "-"


# ----------------------------------------------------------------------------- 1. throughput
N_ITEMS, N_FEATURES, BATCH = 60_000, 784, 256
MEAN, STD = np.float32(0.5), np.float32(0.29)


def standardise(x: np.ndarray) -> np.ndarray:
    """The per-item transform: (x - mean) / std, clipped to [-3, 3], float32 (module level: picklable)."""
    return np.clip((x - MEAN) / STD, -3.0, 3.0).astype(np.float32, copy=False)


def arrays() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return rng.random((N_ITEMS, N_FEATURES), dtype=np.float32), rng.integers(0, 10, N_ITEMS)


class TransformedArrays:
    """Dataset 1, the same class for both loaders: (transform(x[i]), y[i]), a map-style dataset as a
    torch user writes one over NumPy arrays (an ArrayDataset has no transform, as TensorDataset)."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return standardise(self.x[i]), self.y[i]


def adcore_loader(x, y, **kw):
    from adcore_nn.data import DataLoader

    return DataLoader(TransformedArrays(x, y), **kw)


def torch_loader(x, y, **kw):
    seed = kw.pop("seed")
    return torch.utils.data.DataLoader(
        TransformedArrays(x, y), generator=torch.Generator().manual_seed(seed), **kw
    )


def checked_first_batch(name, make, x, y):
    """make(shuffle=False)'s first batch is the transform of the first BATCH rows, or ERROR."""

    def check():
        loader = make(x, y, batch_size=BATCH, shuffle=False, num_workers=WORKERS, seed=SEED)
        xb, yb = next(iter(loader))
        assert np.array_equal(np.asarray(xb), standardise(x[:BATCH])), f"{name}: first batch's x differs"
        assert np.array_equal(np.asarray(yb), y[:BATCH]), f"{name}: first batch's y differs"
        del loader
        return True

    return guarded(f"{name} first batch", check)


def epoch_seconds(loader) -> tuple[float, float]:
    """(seconds for a whole epoch, seconds to its first batch); each batch is read (one element)."""
    t0 = time.perf_counter()
    first = None
    for xb, _ in loader:
        float(xb[0, 0])
        if first is None:
            first = time.perf_counter() - t0
    return time.perf_counter() - t0, first


def loader_figures(make, x, y) -> dict:
    """items/s (best of epochs 2 and 3) and the worst first batch of epochs 2-4 (ms), persistent workers."""
    loader = make(
        x, y, batch_size=BATCH, shuffle=True, num_workers=WORKERS, persistent_workers=True, seed=SEED
    )
    epoch_seconds(loader)  # epoch 1: the workers start
    epochs = [epoch_seconds(loader) for _ in range(3)]
    del loader
    gc.collect()
    return {
        "items/s": len(x) / min(s for s, _ in epochs[:2]),
        "first ms": 1e3 * max(f for _, f in epochs),
    }


_FIGURES: dict = {}


def figures(x, y) -> dict:
    """{contender: {'items/s': .., 'first ms': ..} or ERROR/MISSING}, measured once for sections 1 and 3."""
    if not _FIGURES:
        for name, make, available in (
            ("adcore_nn", adcore_loader, True),
            ("torch", torch_loader, bool(torch)),
        ):
            if not available:
                _FIGURES[name] = MISSING
            elif checked_first_batch(name, make, x, y) is ERROR:
                _FIGURES[name] = ERROR
            else:
                _FIGURES[name] = guarded(name, lambda make=make: loader_figures(make, x, y))
    return _FIGURES


def figure(name, key):
    got = _FIGURES[name]
    return got[key] if isinstance(got, dict) else got


def bench_throughput():
    print(
        f"\n1. throughput: {N_ITEMS:,} x {N_FEATURES} float32 + labels, per-item NumPy transform, "
        f"batch {BATCH}, shuffled, {WORKERS} persistent workers   [items/s over an epoch, best of 2]"
    )
    figures(*arrays())
    ours, theirs = figure("adcore_nn", "items/s"), figure("torch", "items/s")
    row("loader", cell("items/s", fmt="{:.0f}"), cell("÷ torch"), "   target")
    row(
        "adcore_nn",
        cell(ours, fmt="{:.0f}"),
        cell(ratio(ours, theirs)),
        f"   ≥ 1.5x torch {at_least(ratio(ours, theirs), 1.5)}",
    )
    row("torch", cell(theirs, fmt="{:.0f}"), cell(ratio(theirs, theirs)))


# ----------------------------------------------------------------------------- 3. first batch
def bench_first_batch():
    print(
        f"\n3. first batch of a persistent-worker epoch (dataset 1, {WORKERS} workers)   "
        "[ms from iter(loader) to the first batch, worst of epochs 2-4]"
    )
    figures(*arrays())
    ours, theirs = figure("adcore_nn", "first ms"), figure("torch", "first ms")
    row("loader", cell("ms"), cell("÷ torch"), "   target")
    row("adcore_nn", cell(ours), cell(ratio(ours, theirs)), f"   ≤ 100 ms {at_most(ours, 100.0)}")
    row("torch", cell(theirs), cell(ratio(theirs, theirs)))


# ----------------------------------------------------------------------------- 2. memory
N_OBJECTS, MEMORY_EPOCHS = 1_000_000, 3


class PythonObjects:
    """10^6 Python tuples (an int and a float each): the dataset of pytorch#13246, in a list or
    in adcore_nn.data.SerializedList (the items pickled into one byte buffer no read writes)."""

    def __init__(self, items):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def python_objects(n: int) -> list:
    return [(i, i / 3.0) for i in range(n)]


def smaps_rollup(pid: int) -> dict:
    """{'rss', 'pss', 'uss'} in bytes, from /proc/<pid>/smaps_rollup (USS: private clean + dirty)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[key] = int(rest.split()[0]) * 1024
    return {
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "uss": fields["Private_Clean"] + fields["Private_Dirty"],
    }


def summed(pids) -> dict:
    per = [smaps_rollup(p) for p in pids]
    return {k: sum(m[k] for m in per) for k in ("rss", "pss", "uss")}


def adcore_worker_pids(loader, iterator) -> list[int]:
    return loader._pool.pids  # the persistent workers' pool (adcore_nn.data.workers.WorkerPool)


def torch_worker_pids(loader, iterator) -> list[int]:
    return [w.pid for w in iterator._workers]


def memory_growth(make_loader, worker_pids) -> dict:
    """{'rss'|'pss'|'uss': (MB at the first batch, MB at the end, growth %)} of the workers, summed."""
    loader = make_loader()
    start = end = None
    for _ in range(MEMORY_EPOCHS):
        iterator = iter(loader)
        for batch in iterator:
            if start is None:
                pids = worker_pids(loader, iterator)
                start = summed(pids)
            del batch
        end = summed(pids)  # persistent workers: the same processes, still alive
    del iterator, loader
    gc.collect()
    return {k: (start[k] / 2**20, end[k] / 2**20, 100.0 * (end[k] - start[k]) / start[k]) for k in start}


def bench_memory():
    print(
        f"\n2. memory: {N_OBJECTS:,} Python objects, {MEMORY_EPOCHS} shuffled epochs, batch {BATCH}, "
        f"{WORKERS} persistent workers   [the workers' memory summed, MB at their first batch -> "
        f"at the end of epoch {MEMORY_EPOCHS}, growth %]"
    )
    items = python_objects(N_OBJECTS)
    kw = dict(batch_size=BATCH, shuffle=True, num_workers=WORKERS, persistent_workers=True)

    def ours(serialized: bool):
        from adcore_nn.data import DataLoader, SerializedList

        return DataLoader(PythonObjects(SerializedList(items) if serialized else items), seed=SEED, **kw)

    def theirs():
        return torch.utils.data.DataLoader(
            PythonObjects(items), generator=torch.Generator().manual_seed(SEED), **kw
        )

    results = {
        "adcore SerializedList": guarded(
            "adcore_nn SerializedList", lambda: memory_growth(lambda: ours(True), adcore_worker_pids)
        ),
        "adcore list": guarded(
            "adcore_nn list", lambda: memory_growth(lambda: ours(False), adcore_worker_pids)
        ),
        "torch list": guarded("torch list", lambda: memory_growth(theirs, torch_worker_pids), bool(torch)),
    }
    row(
        "dataset",
        cell("RSS MB", 16),
        cell("RSS +%", 9),
        cell("PSS MB", 16),
        cell("PSS +%", 9),
        cell("USS MB", 16),
        "   target",
    )
    for name, got in results.items():
        if not isinstance(got, dict):
            row(name, cell(got, 16))
            continue
        cells = []
        for k in ("rss", "pss", "uss"):
            cells.append(cell(f"{got[k][0]:.0f} -> {got[k][1]:.0f}", 16))
            if k != "uss":
                cells.append(cell(got[k][2], 9, fmt="{:+.1f}"))
        target = ""
        if name == "adcore SerializedList":
            target = f"   ≤ 5%: RSS {at_most(got['rss'][2], 5.0)}, PSS {at_most(got['pss'][2], 5.0)}"
        row(name, *cells, target)


# ----------------------------------------------------------------------------- 4. module
SIZES, MLP_BATCH = (784, 512, 512, 10), 128


def cross_entropy(z, y):
    """The mean cross-entropy of logits z for labels y (torch's F.cross_entropy), both networks' loss."""
    return -anp.mean(anp.take_along_axis(anp.log_softmax(z, axis=1), y[:, None], axis=1))


def mlp_function(W1, b1, W2, b2, W3, b3, x, y):
    """The network as a function of arrays: torch's layout (out, in) for the weights, as Linear."""
    h = anp.maximum(x @ W1.T + b1, 0)
    h = anp.maximum(h @ W2.T + b2, 0)
    return cross_entropy(h @ W3.T + b3, y)


def bench_module():
    import adcore_nn as nn

    print(
        f"\n4. module: MLP {'-'.join(map(str, SIZES))}, ReLU, mean cross-entropy, batch {MLP_BATCH}, float32, "
        "value_and_grad w.r.t. every parameter   [ms per call, best of runs]"
    )
    nn.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    params = [np.array(p) for p in model.parameters()]
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((MLP_BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], MLP_BATCH)

    module_vg = adcore.value_and_grad(lambda m, x, y: cross_entropy(m(x), y))
    function_vg = adcore.value_and_grad(mlp_function, argnums=tuple(range(6)))
    contenders = {
        "Module": lambda: module_vg(model, x, y),
        "function": lambda: function_vg(*params, x, y),
    }

    def check():
        (lm, gm), (lf, gf) = contenders["Module"](), contenders["function"]()
        got = [np.asarray(g) for g in adcore.tree.leaves(gm)]
        assert len(got) == len(gf), "the Module's gradient has another number of leaves"
        assert np.allclose(lm, lf, rtol=1e-5), f"losses differ: {lm} vs {lf}"
        for a, b in zip(got, gf):
            assert np.allclose(a, b, rtol=1e-4, atol=1e-6), "the Module's and the function's gradients differ"
        return True

    if guarded("module vs function", check) is ERROR:
        contenders = {n: ERROR for n in contenders}
    ms = {n: t * 1e3 if isinstance(t, float) else t for n, t in race(contenders, number=5).items()}
    row("network as", cell("ms"), cell("÷ function"), "   target")
    row(
        "Module",
        cell(ms["Module"]),
        cell(ratio(ms["Module"], ms["function"])),
        f"   ≤ 1.1x function {at_most(ratio(ms['Module'], ms['function']), 1.1)}",
    )
    row("function", cell(ms["function"]), cell(ratio(ms["function"], ms["function"])))


def main():
    sections = {
        "throughput": bench_throughput,
        "memory": bench_memory,
        "first": bench_first_batch,
        "module": bench_module,
    }
    versions = [f"numpy {np.__version__}", f"torch {metadata.version('torch') if torch else MISSING}"]
    print(
        f"adcore_nn data and module benchmark; {', '.join(versions)}; {os.cpu_count()} cores, "
        f"{os.environ['OPENBLAS_NUM_THREADS']} BLAS thread(s)"
    )
    for name in sys.argv[1:] or sections:
        sections[name]()


if __name__ == "__main__":
    main()
