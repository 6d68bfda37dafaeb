"""Side-by-side benchmark of adcore's forward mode (Jacobians, Hessians) against JAX, PyTorch, autograd.

Run by hand (not part of the tests):  python benchmarks/bench_forward.py

Every figure is the median of 21 timeit-style runs taken in interleaved blocks
(benchmarks/timing.py), because the machine is noisy; all contenders are timed in the
same run so the ratios are comparable. Everything is float64.

1. Jacobian of f(x) = tanh(W @ x) + x**2, n = 200, W a fixed random 200x200 matrix, ms per
   call: adcore.jacobian(backend="forward") (and "reverse", for scale), jax.jacfwd without
   jit, torch.autograd.functional.jacobian(vectorize=True), autograd.jacobian, and the
   analytic Jacobian diag(1 - tanh²(W x)) W + diag(2x) in NumPy. Target: adcore forward
   ≤ 0.5 ms and ahead of jax, torch and autograd. Timed with a warm heap (the figures the
   target is judged on) and again in a child process with a cold one: see warm_heap().
2. Hessian of f(x) = sum(tanh(A @ x)**2) + x·x/2, n = 100, A a fixed random 100x100 matrix:
   a dense Hessian, Aᵀ diag(2(1 - t²)(1 - 3t²)) A + I with t = tanh(A x). adcore.hessian
   forward-over-reverse (the default), forward-over-forward and reverse-over-reverse,
   jax.hessian without jit, torch.autograd.functional.hessian(vectorize=True),
   autograd.hessian and the analytic Hessian in NumPy.

Every tool's result is checked against the analytic one (the max |difference| is printed;
a tool that disagrees reports ERROR with an AssertionError and is not timed). jax, torch
and autograd are optional: a missing one prints "not installed". An error in adcore prints
its traceback in place of the figure, and the script goes on.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from importlib import metadata

import numpy as np

import adcore
import adcore.numpy as anp

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # float64, as everyone else
except ImportError:
    jax = jnp = None
try:
    import torch
except ImportError:
    torch = None
try:
    import autograd
    import autograd.numpy as agnp
except ImportError:
    autograd = agnp = None

from timing import ERROR, MISSING, cell, guarded, race, ratio, row, verdict, warm_heap  # benchmarks/timing.py

RUNS = dict(repeat=7, passes=3, summary=statistics.median)  # 21 runs per contender
TOL = 1e-10  # max |result - analytic|: every tool computes the same float64 numbers up to rounding
COLD_FLAG = "--cold-heap-jacobian"  # the child process of section 1's cold-heap column


def version(name, module):
    if not module:
        return f"{name} {MISSING}"
    return f"{name} {getattr(module, '__version__', None) or metadata.version(name)}"


def cold_heap():
    """{name: ms} of section 1 timed in a child process whose malloc keeps glibc's initial
    128 KiB thresholds (a 320 KB temporary is a fresh mmap, or freshly faulted-in heap, on
    every call), or {} where malloc is not glibc's or the child failed."""
    if platform.libc_ver()[0] != "glibc":
        return {}
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    run = subprocess.run([sys.executable, __file__, COLD_FLAG], env=env, capture_output=True, text=True)
    lines = run.stdout.strip().splitlines()
    try:
        times = json.loads(lines[-1])
    except (IndexError, ValueError):
        print("  !! cold-heap child failed:\n    " + "\n    ".join(lines + run.stderr.splitlines()))
        return {}
    for line in lines[:-1]:  # the tracebacks of contenders that failed there
        print(f"  (cold heap) {line}")
    return times


def checked(contenders, reference):
    """{name: max |result - reference|} (or MISSING / ERROR); a contender that raises or
    disagrees is replaced by ERROR in `contenders`, so it is not timed."""
    errors = {}
    for name, f in contenders.items():

        def check(name=name, f=f):
            err = float(np.max(np.abs(np.asarray(f(), dtype=np.float64) - reference)))
            assert err <= TOL, f"{name} disagrees with the analytic result: max error {err:.1e} > {TOL:.0e}"
            return err

        errors[name] = guarded(name, check, callable(f))
        if errors[name] is ERROR:
            contenders[name] = ERROR
    return errors


def timed(contenders, number):
    """{name: ms per call}: the median of 21 runs of `number` calls (or MISSING / ERROR)."""
    return {n: t * 1e3 if isinstance(t, float) else t for n, t in race(contenders, number, **RUNS).items()}


# ----------------------------------------------------------------------------- 1. Jacobian
N_JAC = 200
JAC_TARGET_MS = 0.5
JAC_ANCHORS = ("jax.jacfwd", "torch", "autograd")


def jac_problem():
    """(W, x, {name: thunk returning the 200x200 Jacobian, or None for a missing library})."""
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((N_JAC, N_JAC)) / np.sqrt(N_JAC), rng.standard_normal(N_JAC)

    def adcore_f(x):
        return anp.tanh(W @ x) + x**2

    def analytic():
        t = np.tanh(W @ x)
        return (1 - t * t)[:, None] * W + np.diag(2 * x)

    fwd = adcore.jacobian(adcore_f, backend="forward")
    rev = adcore.jacobian(adcore_f, backend="reverse")
    contenders = {"adcore forward": lambda: fwd(x), "adcore reverse": lambda: rev(x), "jax.jacfwd": None}
    if jax:
        Wj, xj = jnp.asarray(W), jnp.asarray(x)
        jac = jax.jacfwd(lambda x: jnp.tanh(Wj @ x) + x**2)
        contenders["jax.jacfwd"] = lambda: jac(xj).block_until_ready()
    contenders["torch"] = None
    if torch:
        Wt, xt = torch.from_numpy(W), torch.from_numpy(x)
        contenders["torch"] = lambda: torch.autograd.functional.jacobian(
            lambda x: torch.tanh(Wt @ x) + x**2, xt, vectorize=True
        )
    ag = autograd and autograd.jacobian(lambda x: agnp.tanh(W @ x) + x**2)
    contenders["autograd"] = ag and (lambda: ag(x))
    contenders["numpy analytic"] = analytic
    return W, x, contenders


def jac_times(number=20):
    """(max errors, ms per call) of section 1, in this process's heap."""
    W, x, contenders = jac_problem()
    reference = np.diag(1 - np.tanh(W @ x) ** 2) @ W + np.diag(2 * x)  # as written, not as timed
    errors = checked(contenders, reference)
    return errors, timed(contenders, number)


def bench_jacobian():
    print(f"\n1. Jacobian of f(x) = tanh(W @ x) + x**2, n = {N_JAC}, W a fixed random {N_JAC}x{N_JAC}")
    print("   [ms per call; ÷adcore: this time / adcore forward's, > 1 when adcore is ahead]")
    errors, ms = jac_times()
    cold = cold_heap()
    earlier = {"jax.jacfwd": "1.23", "torch": "3.26", "autograd": "5.63", "numpy analytic": "0.03"}
    heads = ("ms", "÷adcore", "÷jax", "max |ΔJ|", "earlier", "cold ms", "cold ÷adc")
    row("contender", *(cell(h, 11) for h in heads), "   target")
    me, cold_me = ms["adcore forward"], cold.get("adcore forward", "-")
    for name, v in ms.items():
        target = f"   ≤ {JAC_TARGET_MS} ms  {verdict(v, JAC_TARGET_MS)}" if name == "adcore forward" else ""
        c = cold.get(name, "-")
        if not isinstance(v, float):  # not installed, or failed (its traceback is above)
            row(name, cell(v, 11), target)
            continue
        row(
            name,
            cell(v, 11, "{:.3f}"),
            cell(ratio(v, me), 11),
            cell(ratio(v, ms["jax.jacfwd"]), 11),
            cell(errors[name], 11, "{:.1e}"),
            cell(earlier.get(name, ""), 11),
            cell(c, 11, "{:.3f}"),
            cell(ratio(c, cold_me), 11),
            target,
        )
    ran = [n for n in JAC_ANCHORS if isinstance(ms[n], float)]
    behind = [n for n in ran if not (isinstance(me, float) and me < ms[n])]
    met = verdict(me, JAC_TARGET_MS) == "OK" and not behind
    print(
        f"  target: adcore forward ≤ {JAC_TARGET_MS} ms and ahead of {', '.join(ran) or '(no anchor ran)'}: "
        + ("OK" if met else "MISS" + (f", behind {', '.join(behind)}" if behind else ""))
        + f"   (cold heap: {verdict(cold_me, JAC_TARGET_MS)})"
    )
    print(f"  (max |ΔJ|: against diag(1 - tanh²(W x)) W + diag(2x) formed literally; must be ≤ {TOL:.0e})")


# ----------------------------------------------------------------------------- 2. Hessian
N_HESS = 100


def hess_problem():
    """(A, x, {name: thunk returning the 100x100 Hessian, or None for a missing library})."""
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((N_HESS, N_HESS)) / np.sqrt(N_HESS), rng.standard_normal(N_HESS)

    def adcore_f(x):
        return anp.sum(anp.tanh(A @ x) ** 2) + 0.5 * (x @ x)

    def analytic():
        t = np.tanh(A @ x)
        return A.T @ ((2 * (1 - t * t) * (1 - 3 * t * t))[:, None] * A) + np.eye(N_HESS)

    fwd_rev = adcore.hessian(adcore_f)  # the default: forward over reverse
    fwd_fwd = adcore.hessian(adcore_f, backend="forward")
    rev_rev = adcore.hessian(adcore_f, backend="reverse")
    contenders = {
        "adcore fwd-over-rev": lambda: fwd_rev(x),
        "adcore fwd-over-fwd": lambda: fwd_fwd(x),
        "adcore rev-over-rev": lambda: rev_rev(x),
        "jax.hessian": None,
        "torch": None,
    }
    if jax:
        Aj, xj = jnp.asarray(A), jnp.asarray(x)
        hess = jax.hessian(lambda x: jnp.sum(jnp.tanh(Aj @ x) ** 2) + 0.5 * (x @ x))
        contenders["jax.hessian"] = lambda: hess(xj).block_until_ready()
    if torch:
        At, xt = torch.from_numpy(A), torch.from_numpy(x)
        contenders["torch"] = lambda: torch.autograd.functional.hessian(
            lambda x: (torch.tanh(At @ x) ** 2).sum() + 0.5 * (x @ x), xt, vectorize=True
        )
    ag = autograd and autograd.hessian(lambda x: agnp.sum(agnp.tanh(A @ x) ** 2) + 0.5 * (x @ x))
    contenders["autograd"] = ag and (lambda: ag(x))
    contenders["numpy analytic"] = analytic
    return A, x, contenders


def bench_hessian():
    print(
        f"\n2. Hessian of f(x) = sum(tanh(A @ x)**2) + x·x/2, n = {N_HESS}, A a fixed random {N_HESS}x{N_HESS}"
    )
    print("   dense: Aᵀ diag(2(1-t²)(1-3t²)) A + I, t = tanh(A x)   [ms per call; ÷adcore: ÷ fwd-over-rev's]")
    A, x, contenders = hess_problem()
    t = np.tanh(A @ x)
    errors = checked(contenders, A.T @ np.diag(2 * (1 - t * t) * (1 - 3 * t * t)) @ A + np.eye(N_HESS))
    ms = timed(contenders, number=3)
    row("contender", *(cell(h, 10) for h in ("ms", "÷adcore", "÷jax", "max |ΔH|")))
    for name, v in ms.items():
        if not isinstance(v, float):  # not installed, or failed (its traceback is above)
            row(name, cell(v, 10))
            continue
        row(
            name,
            cell(v, 10, "{:.3f}"),
            cell(ratio(v, ms["adcore fwd-over-rev"]), 10),
            cell(ratio(v, ms["jax.hessian"]), 10),
            cell(errors[name], 10, "{:.1e}"),
        )
    print(
        "  (fwd-over-rev is adcore.hessian's default; torch: vectorize=True, i.e. vmapped reverse over reverse)"
    )


if __name__ == "__main__":
    if sys.argv[1:] == [COLD_FLAG]:  # the child of cold_heap(): section 1's times, as JSON
        print(json.dumps(jac_times()[1]))
        sys.exit()
    versions = ", ".join(version(n, m) for n, m in (("jax", jax), ("torch", torch), ("autograd", autograd)))
    print(
        f"adcore forward-mode benchmark (python {sys.version.split()[0]}, numpy {np.__version__}, {versions})"
    )
    heap = "warm (glibc malloc keeps freed memory)" if warm_heap() else "as is (malloc is not glibc's)"
    print(f"backends: {', '.join(adcore.backends())}; heap: {heap}")
    for section in (bench_jacobian, bench_hessian):
        guarded(section.__name__, section)
