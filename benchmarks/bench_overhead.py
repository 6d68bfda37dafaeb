"""Per-call and start-up overhead of adcore against HIPS autograd, PyTorch eager and JAX.

Run by hand (not part of the tests):  python benchmarks/bench_overhead.py

1. Per call: the gradient of np.sum(x) and of np.sum(np.sin(x) * x) at x of size 1 and 100,
   warm (the first call is made before timing), in µs per call: adcore reverse and forward,
   autograd, torch eager (a fresh leaf tensor, the function, backward, .grad) and JAX eager
   (jax.grad without jit). Ratios adcore / autograd (target <= 0.4) and adcore / torch
   (target <= 0.5) in the same run. The median of timeit-style runs (`timing.race`).
2. Start-up: whole processes, `python -c "import adcore"` against `python -c "import numpy"`
   (target: <= 50 ms over it), and import plus the first grad call (target: <= 150 ms over
   numpy's import), the two commands of a pair run back to back, the median of the
   differences over >= 10 pairs, so a burst of load falls on both sides of a pair.

autograd, torch and jax are optional: a missing one prints "not installed".
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from importlib import metadata

import numpy as np

import adcore

try:
    import torch
except ImportError:
    torch = None
try:
    import autograd
    import autograd.numpy as agnp
except ImportError:
    autograd = agnp = None
try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None

from timing import MISSING, cell, guarded, race, ratio, row, verdict  # benchmarks/timing.py

SIZES = (1, 100)
PAIRS = 11


# ----------------------------------------------------------------------------- 1. per call
def functions(lib):
    """The two functions of the issue written over `lib` (numpy, autograd.numpy, jax.numpy or torch)."""
    return {
        "sum(x)": lambda x: lib.sum(x),
        "sum(sin(x)*x)": lambda x: lib.sum(lib.sin(x) * x),
    }


def torch_grad(f):
    def call(x):
        t = torch.tensor(x, requires_grad=True)
        f(t).backward()
        return t.grad.numpy()

    return call


def contenders(name, x):
    """{tool: a thunk computing the gradient at x}, checked against the analytic gradient first."""
    expected = {"sum(x)": np.ones_like(x), "sum(sin(x)*x)": np.cos(x) * x + np.sin(x)}[name]
    fns = {
        "adcore rev": adcore.grad(functions(np)[name]),
        "adcore fwd": adcore.grad(functions(np)[name], backend="forward"),
        "autograd": autograd.grad(functions(agnp)[name]) if autograd else None,
        "torch": torch_grad(functions(torch)[name]) if torch else None,
        "jax eager": jax.grad(functions(jnp)[name]) if jax else None,
    }
    thunks = {}
    for tool, g in fns.items():
        if g is None:
            thunks[tool] = None
            continue
        got = guarded(tool, lambda g=g: np.asarray(g(x)))
        if isinstance(got, np.ndarray) and not np.allclose(got, expected, rtol=1e-12, atol=1e-12):
            print(f"  !! {tool} gives a wrong gradient for {name} at size {x.size}")
            got = "ERROR"
        thunks[tool] = (lambda g=g: g(x)) if isinstance(got, np.ndarray) else got
    return thunks


def bench_per_call():
    tools = ("adcore rev", "adcore fwd", "autograd", "torch", "jax eager")
    print("\n1. grad per call, warm   [µs, median of runs]   targets: adcore <= 0.4x autograd, <= 0.5x torch")
    row(
        "function, size",
        *(cell(t) for t in tools),
        *(cell(f"{a}/{b}") for a in ("rev", "fwd") for b in ("ag", "torch")),
    )
    for name in functions(np):
        for n in SIZES:
            x = np.linspace(0.1, 1.0, n)
            times = race(contenders(name, x), number=500, repeat=5, passes=3, summary=statistics.median)
            us = {t: v * 1e6 if isinstance(v, float) else v for t, v in times.items()}
            ratios = []
            for mine in ("adcore rev", "adcore fwd"):
                for anchor, target in (("autograd", 0.4), ("torch", 0.5)):
                    r = ratio(us[mine], us[anchor])
                    ratios.append(cell(f"{r:.2f} {verdict(r, target)}" if isinstance(r, float) else r))
            row(f"{name}, n={n}", *(cell(us[t]) for t in tools), *ratios)


# ----------------------------------------------------------------------------- 2. start-up
def paired(code, env, baseline="import numpy"):
    """(median ms of code's process, median ms of baseline's, median of the pairwise differences)."""
    mine, base, diff = [], [], []
    for c in (code, baseline):  # a warm-up pair: where bytecode may be written, it is, before timing
        subprocess.run([sys.executable, "-c", c], check=True, env=env)
    for _ in range(PAIRS):
        times = []
        for c in (code, baseline):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", c], check=True, env=env)
            times.append((time.perf_counter() - t0) * 1e3)
        mine.append(times[0])
        base.append(times[1])
        diff.append(times[0] - times[1])
    return statistics.median(mine), statistics.median(base), statistics.median(diff)


FIRST_GRAD = "import numpy as np, adcore; adcore.grad(lambda x: np.sum(np.sin(x) * x))(np.ones(3))"
AUTOGRAD_FIRST = (
    "import autograd.numpy as np, autograd; autograd.grad(lambda x: np.sum(np.sin(x) * x))(np.ones(3))"
)


def bench_startup():
    print(
        f"\n2. start-up, whole processes   [ms, median of {PAIRS} pairs, each run beside `python -c 'import numpy'`]"
    )
    row("command", cell("process"), cell("numpy"), cell("over numpy"), cell("target"))
    cases = [("import adcore", "import adcore", 50.0), ("import + first grad", FIRST_GRAD, 150.0)]
    if autograd:
        cases.append(("autograd import+grad", AUTOGRAD_FIRST, None))
    # with bytecode caches (__pycache__, written by the warm-up), an installed package's usual case:
    # where PYTHONDONTWRITEBYTECODE=1 is set and no cache exists, every process compiles adcore anew
    # (~80 ms more, measured in issue 33)
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [("", cached)]
    for heading, env in runs:
        if heading:
            print(f"  {heading}:")
        for label, code, target in cases:
            mine, base, over = paired(code, env)
            goal = cell(f"<= {target:.0f} {verdict(over, target)}") if target else cell("-")
            row(
                label,
                cell(mine, fmt="{:.1f}"),
                cell(base, fmt="{:.1f}"),
                cell(over, fmt="{:.1f}"),
                goal,
            )


if __name__ == "__main__":
    versions = f"numpy {np.__version__}, torch {torch.__version__ if torch else MISSING}"
    versions += f", autograd {metadata.version('autograd') if autograd else MISSING}"
    versions += f", jax {jax.__version__ if jax else MISSING}"
    print(f"adcore overhead benchmark (python {sys.version.split()[0]}, {versions})")
    for section in (bench_per_call, bench_startup):
        guarded(section.__name__, section)
