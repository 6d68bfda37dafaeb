"""Optimizers section of the kernels benchmark: each fused numba kernel against torch.optim.

Run alone:  python benchmarks/kernels_optim.py   (bench_kernels.py calls `main()`)

1. One `.step()` on 10^7 float32 parameters for each of the nine optimizers of
   `adcore_kernels.optim`: ms and effective GB/s, next to torch.optim's equivalent as
   torch runs it by default on CPU (a loop over parameters), with foreach=True, and with
   fused=True where torch has a fused CPU kernel; torch.set_num_threads(2). Timed with
   the shared `race`, which alternates the contenders (the machine is shared and noisy):
   compare the ratios, which come from the same run. Targets: every optimizer ≥ 75 GB/s;
   Adam ≤ 1.0× torch's fused Adam. When another process holds one of the two cores, a
   two-thread step (ours and torch's alike) waits for the scheduler to run its second
   thread: steps of 8 or 12 ms, multiples of the 4 ms tick, mean "run it again later".
2. First-call cost of each kernel in a fresh interpreter: compiling (an empty numba
   cache) and loading from numba's on-disk cache (the second process), plus importing numba.

torch is optional: without it the torch columns say "not installed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import torch
except ImportError:
    torch = None

from adcore_kernels import optim
from timing import ERROR, MISSING, cell, guarded, race, ratio, row, verdict  # benchmarks/timing.py

N = 10**7
MIN_GBPS, ADAM_TARGET = 75.0, 1.0

# torch.optim's counterpart of each optimizer, with the same hyperparameters where the names match.
TORCH = {
    "sgd": ("SGD", {}),
    "momentum": ("SGD", {"momentum": 0.9}),
    "nesterov": ("SGD", {"momentum": 0.9, "nesterov": True}),
    "rprop": ("Rprop", {}),
    "rmsprop": ("RMSprop", {}),
    "adagrad": ("Adagrad", {}),
    "adadelta": ("Adadelta", {}),
    "adam": ("Adam", {}),
    "adamax": ("Adamax", {}),
}
TORCH_MODES = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def bytes_per_step(name: str) -> int:
    """The bytes one step moves: it reads and writes the parameter, reads the gradient, and reads
    and writes each state array, each element once, 4 bytes each in float32 (Adam: 2 + 1 + 2·2
    = 7 arrays, 28 bytes per parameter). Every array written is read first in the same pass, so
    no extra write-allocate read happens, and the arrays (40 MB each) are far larger than the
    32 MB L3, so nothing is served from cache across steps: this is the DRAM traffic a fused
    step cannot avoid, the same count for torch's kernels."""
    n_state = len(optim.OPTIMIZERS[name].state_names)
    return (2 + 1 + 2 * n_state) * 4 * N


def adcore_contender(name: str, param: np.ndarray, grad: np.ndarray):
    opt = optim.OPTIMIZERS[name]([param])
    grads = [grad]
    return lambda: opt.step(grads)


def torch_contender(name: str, mode: str, param: np.ndarray, grad: np.ndarray):
    """A torch optimizer's step over the same parameter and gradient memory as adcore's (so
    where the arrays sit in memory is no difference between them); None without torch,
    "-" where torch has no such mode for this optimizer."""
    if torch is None:
        return None
    cls_name, hyper = TORCH[name]
    tensor = torch.from_numpy(param).requires_grad_()  # shares param's memory
    tensor.grad = torch.from_numpy(grad)
    try:
        opt = getattr(torch.optim, cls_name)([tensor], **hyper, **TORCH_MODES[mode])
        opt.step()
    except (RuntimeError, TypeError, ValueError):
        return "-"  # e.g. no fused CPU kernel for this optimizer
    return opt.step


def bench_steps() -> None:
    print(f"\n1. one step on {N:.0e} float32 parameters   [ms; GB/s = bytes read + written / time]")
    if torch is not None:
        torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    start, grad = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    param = start.copy()
    heads = ("adcore ms", "GB/s", "torch default", "foreach", "fused", "/torch best")
    row(
        "optimizer", *map(cell, heads), f"   target ≥ {MIN_GBPS:.0f} GB/s; adam ≤ {ADAM_TARGET} × torch fused"
    )
    for name in optim.OPTIMIZERS:
        param[...] = start  # not where the previous optimizer (Rprop: 50 per step) left it
        contenders = {"adcore": adcore_contender(name, param, grad)}  # all step the same param
        contenders |= {mode: torch_contender(name, mode, param, grad) for mode in TORCH_MODES}
        timed = {k: v for k, v in contenders.items() if v != "-"}
        ms = {n: t * 1e3 if isinstance(t, float) else t for n, t in race(timed, number=5, repeat=3).items()}
        ms |= {k: "-" for k, v in contenders.items() if v == "-"}
        ours = ms["adcore"]
        gbps = bytes_per_step(name) / (ours * 1e-3) / 1e9 if isinstance(ours, float) else ERROR
        torch_times = [ms[m] for m in TORCH_MODES if isinstance(ms[m], float)]
        best = min(torch_times) if torch_times else MISSING
        target = f"   {'OK' if isinstance(gbps, float) and gbps >= MIN_GBPS else 'MISS'}"
        if name == "adam":
            fused = ratio(ours, ms["fused"])
            target += (
                f"; ratio to torch fused {cell(fused, 0)}  ≤ {ADAM_TARGET}  {verdict(fused, ADAM_TARGET)}"
            )
        row(
            name,
            cell(ours),
            cell(gbps, fmt="{:.0f}"),
            *(cell(ms[m], fmt="{:.1f}") for m in ("default", "foreach")),
            cell(ms["fused"]),
            cell(ratio(ours, best)),
            target,
        )
        del contenders, timed  # free this optimizer's arrays before the next
    print("  (/torch best: adcore ms ÷ the fastest torch mode; '-': torch has no such mode on CPU)")


FIRST_STEPS = """
import json, time
import numpy as np
t0 = time.perf_counter()
import numba, adcore_kernels._optim_kernels
times = {"import numba": time.perf_counter() - t0}
from adcore_kernels import optim
for name, cls in optim.OPTIMIZERS.items():
    opt = cls([np.ones(1000, np.float32)])
    t0 = time.perf_counter()
    opt.step([np.ones(1000, np.float32)])
    times[name] = time.perf_counter() - t0
print(json.dumps(times))
"""


def bench_first_call() -> None:
    print("\n2. first step of each optimizer (float32) in a fresh interpreter   [s]")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}  # an empty cache: the first process compiles
        runs = []
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", FIRST_STEPS], capture_output=True, text=True, env=env
            )
            runs.append(json.loads(done.stdout) if done.returncode == 0 else None)
            if done.returncode != 0:
                print(f"  !! first-step probe failed:\n{done.stderr}")
                return
    compiled, cached = runs
    row("kernel", cell("compile"), cell("from cache"))
    for name in compiled:
        row(name, cell(compiled[name], fmt="{:.2f}"), cell(cached[name], fmt="{:.3f}"))
    print("  (the first step of a process also starts numba's thread pool: it is in the sgd row)")


def main() -> None:
    versions = f"numpy {np.__version__}, torch {torch.__version__ if torch else MISSING}"
    print(f"adcore-kernels optimizers (python {sys.version.split()[0]}, {versions})")
    for section in (bench_steps, bench_first_call):
        guarded(section.__name__, section)


if __name__ == "__main__":
    main()
