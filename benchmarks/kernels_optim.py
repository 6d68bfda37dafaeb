"""Optimizers section of the kernels benchmark: each fused numba kernel against torch.optim.

Run alone:  python benchmarks/kernels_optim.py   (bench_kernels.py calls `main()`)

1. One `.step()` on 10^7 float32 parameters (one array) for each optimizer configuration,
   constructed the same way on both sides (adcore_kernels.optim has torch.optim's classes and
   keywords): adcore's ms and effective GB/s next to torch.optim's three CPU implementations,
   its default (a loop over parameters), foreach=True and fused=True (where torch has a fused
   CPU kernel), torch.set_num_threads(2). Target: torch's best ÷ ours ≥ 0.95 for every row.
   Each contender is warmed up, then all of a row's contenders alternate in blocks, the
   median of 8 runs of 3 steps each: the machine is shared and noisy, so compare the ratios,
   which come from the same run. Each block starts settled (see `settled_race`): right after
   a torch step, torch's OpenMP threads keep spinning and a numba step took 8.6 ms instead of
   5.9 (SGD momentum), while torch right after ours lost nothing. Each row first waits (up to 20 s, as the conv
   section does) for the other processes to leave the CPUs mostly idle, and prints their busy
   share, q (quiet) or B (busy). When another process holds one of the two cores, a two-thread
   step waits for the scheduler, torch's far more than ours (its OpenMP threads meet at a
   barrier: its fused SGD step on 10^6 parameters took 0.2 ms quiet, 5 to 8 ms busy), so a
   B row's ratio flatters adcore: run it again later.
2. First-step cost of each configuration in a fresh interpreter: compiling (an empty numba
   cache) and loading from numba's on-disk cache (the second process), plus importing numba.

torch is optional: without it the torch columns say "not installed".
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

try:
    import torch
except ImportError:
    torch = None

from adcore_kernels import optim
from kernels_conv import QUIET, wait_for_quiet  # the conv section's wait for the other processes
from timing import ERROR, MISSING, cell, guarded, row  # benchmarks/timing.py

N = 10**7
TARGET = 0.95  # torch's best time ÷ ours: at least this

# (row label, class name in both adcore_kernels.optim and torch.optim, keywords; defaults otherwise)
CONFIGS = [
    ("SGD", "SGD", {}),
    ("SGD momentum", "SGD", {"momentum": 0.9}),
    ("SGD nesterov", "SGD", {"momentum": 0.9, "nesterov": True}),
    ("Adam", "Adam", {}),
    ("Adam amsgrad", "Adam", {"amsgrad": True}),
    ("AdamW", "AdamW", {}),
    ("Adagrad", "Adagrad", {}),
    ("RMSprop", "RMSprop", {}),
    ("RMSprop mom centered", "RMSprop", {"momentum": 0.9, "centered": True}),
    ("Adadelta", "Adadelta", {}),
    ("Adamax", "Adamax", {}),
    ("Rprop", "Rprop", {}),
]
TORCH_MODES = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def bytes_per_step(n_state: int) -> int:
    """The bytes one step moves: it reads and writes the parameter, reads the gradient, and reads
    and writes each of its `n_state` state arrays, each element once, 4 bytes each in float32
    (Adam: 2 + 1 + 2·2 = 7 arrays, 28 bytes per parameter). Every array written is read first in
    the same pass, so no extra write-allocate read happens, and the arrays (40 MB each) are far
    larger than the 32 MB L3, so nothing is served from cache across steps: this is the DRAM
    traffic a fused step cannot avoid, the same count for torch's kernels."""
    return (2 + 1 + 2 * n_state) * 4 * N


def adcore_contender(cls_name: str, hyper: dict, param: np.ndarray, grad: np.ndarray):
    """(step, number of state arrays it keeps): one warm-up step taken, so the kernel is compiled
    and the state exists, as in torch's contenders."""
    opt = getattr(optim, cls_name)([param], **hyper)
    grads = [grad]
    opt.step(grads)
    state = opt.state_dict()["state"]
    n_state = sum(isinstance(v, np.ndarray) and v.size == N for s in state.values() for v in s.values())
    return (lambda: opt.step(grads)), n_state


def torch_contender(cls_name: str, hyper: dict, mode: str, param: np.ndarray, grad: np.ndarray):
    """A torch optimizer's step over the same parameter and gradient memory as adcore's (so where
    the arrays sit in memory is no difference between them); None without torch, "-" where torch
    has no such mode for this optimizer."""
    if torch is None:
        return None
    tensor = torch.from_numpy(param).requires_grad_()  # shares param's memory
    tensor.grad = torch.from_numpy(grad)
    try:
        opt = getattr(torch.optim, cls_name)([tensor], **hyper, **TORCH_MODES[mode])
        opt.step()
    except (RuntimeError, TypeError, ValueError):
        return "-"  # e.g. no fused CPU kernel for this optimizer
    return opt.step


SETTLE = 0.01  # s of sleep before a block: the thread pool of the contender before goes idle


def settled_race(contenders: dict, number: int = 3, repeat: int = 2, passes: int = 4) -> dict:
    """{name: median ms per step, or MISSING / ERROR}: timing.race's blocks (`repeat` runs of `number`
    steps per contender, contender after contender, `passes` rounds), each block started by a
    sleep and one untimed step, so that no contender pays for the spinning threads of the one
    before it."""
    live = {n: f for n, f in contenders.items() if callable(f) and guarded(n, f) is not ERROR}  # warm-up
    runs = {name: [] for name in live}
    for _ in range(passes):
        for name, f in live.items():
            time.sleep(SETTLE)
            f()
            runs[name] += [t / number for t in timeit.repeat(f, number=number, repeat=repeat)]
    return {
        n: statistics.median(runs[n]) * 1e3 if n in runs else MISSING if f is None else ERROR
        for n, f in contenders.items()
    }


def race_row(cls_name: str, hyper: dict, param: np.ndarray, grad: np.ndarray) -> tuple[dict, int]:
    """({contender: ms per step, MISSING, ERROR or "-"}, adcore's number of state arrays), all
    contenders stepping the same parameter; their state is freed on return."""
    ours = guarded(f"adcore {cls_name}({hyper})", lambda: adcore_contender(cls_name, hyper, param, grad))
    contenders = {"adcore": ours[0] if isinstance(ours, tuple) else ERROR}
    contenders |= {mode: torch_contender(cls_name, hyper, mode, param, grad) for mode in TORCH_MODES}
    timed = {k: v for k, v in contenders.items() if v != "-"}
    ms = settled_race(timed)
    return ms | {k: "-" for k, v in contenders.items() if v == "-"}, ours[1] if isinstance(ours, tuple) else 0


def bench_steps() -> None:
    print(
        f"\n1. one step on {N:.0e} float32 parameters   [ms, median of 8 × 3 steps; GB/s = bytes moved / time]"
    )
    if torch is not None:
        torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    start, grad = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    param = start.copy()
    heads = ("adcore ms", "GB/s", "torch default", "foreach", "fused", "torch best", "best/adcore")
    row("optimizer", *map(cell, heads), f"   ≥ {TARGET}   busy")
    misses = []
    for label, cls_name, hyper in CONFIGS:
        param[...] = start  # not where the previous optimizer (Rprop: 50 per step) left it
        busy = wait_for_quiet()
        ms, n_state = race_row(cls_name, hyper, param, grad)
        torch_times = [ms[m] for m in TORCH_MODES if isinstance(ms[m], float)]
        best = min(torch_times) if torch_times else MISSING
        mine = ms["adcore"]
        gbps = bytes_per_step(n_state) / (mine * 1e-3) / 1e9 if isinstance(mine, float) else ERROR
        speed = best / mine if isinstance(best, float) and isinstance(mine, float) else "-"
        verdict = "-" if speed == "-" else "OK" if speed >= TARGET else "MISS"
        if verdict == "MISS":
            misses.append(f"{label} {speed:.2f}×")
        cells = (cell(mine), cell(gbps, fmt="{:.0f}"), *(cell(ms[m]) for m in TORCH_MODES), cell(best))
        load = "?" if busy is None else f"{busy:.0%}" + (" q" if busy <= QUIET else " B")
        row(label, *cells, cell(speed), f"   {verdict:<4} {load:>7}")
    print(
        "  (best/adcore: torch's fastest mode's ms ÷ adcore's, > 1 means adcore is faster; '-': no such mode)"
    )
    print(f"  misses: {', '.join(misses) or 'none'}")


FIRST_STEPS = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import numba
times = {"import numba": time.perf_counter() - t0}
from adcore_kernels import optim
for label, cls_name, hyper in json.loads(sys.argv[1]):
    opt = getattr(optim, cls_name)([np.ones(1000, np.float32)], **hyper)
    t0 = time.perf_counter()
    opt.step([np.ones(1000, np.float32)])
    times[label] = time.perf_counter() - t0
print(json.dumps(times))
"""


def bench_first_call() -> None:
    print("\n2. first step of each configuration (float32) in a fresh interpreter   [s]")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}  # an empty cache: the first process compiles
        runs = []
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", FIRST_STEPS, json.dumps(CONFIGS)],
                capture_output=True,
                text=True,
                env=env,
            )
            if done.returncode != 0:
                print(f"  !! first-step probe failed:\n{done.stderr}")
                return
            runs.append(json.loads(done.stdout))
    compiled, cached = runs
    row("kernel", cell("compile"), cell("from cache"))
    for name in compiled:
        row(name, cell(compiled[name], fmt="{:.2f}"), cell(cached[name], fmt="{:.3f}"))
    print(
        "  (the first row also pays, once per process, numba's start: importing the kernels, readying its"
        "\n   compiler even to load from the cache, its thread pool; about 1 s here with or without a cache;"
        "\n   0.00: the options of a class share its kernel, compiled in the row above)"
    )


def main() -> None:
    versions = f"numpy {np.__version__}, torch {torch.__version__ if torch else MISSING}"
    print(f"adcore-kernels optimizers (python {sys.version.split()[0]}, {versions})")
    for section in (bench_steps, bench_first_call):
        guarded(section.__name__, section)


if __name__ == "__main__":
    main()
