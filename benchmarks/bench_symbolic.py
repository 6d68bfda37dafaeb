"""Side-by-side benchmark of adcore's symbolic backend against sympy's lambdify and a NumPy recurrence.

Run by hand (not part of the tests):  python benchmarks/bench_symbolic.py [--cold-heap]   (10 s; 20 s cold;
then 3 to 5 min for issue 15 class 11: the chains and workloads that hung the backend, each in its own
process against reverse, in benchmarks/symbolic_workloads.py, which also runs alone)

The logistic map l_{k+1} = 4 l_k (1 - l_k), l_1 = x, at n = 8 (the step applied 7 times),
differentiated on a 10^6-element float64 array x drawn uniform in (0, 1) with a fixed seed:
the derivative d l8(x) / dx, element by element, in ms per call. Contenders:

- adcore symbolic: `adcore.grad(lambda x: anp.sum(l8(x)), backend="symbolic")`, compiled
  (its second call onward: the derivative is traced, differentiated and compiled once per
  function and shapes, then evaluated over the array in chunks of
  `adcore_symbolic.derive.CHUNK` elements);
- sympy plain: `lambdify(x, diff(l8(x), x))` (the derivative's tree printed as it is);
- sympy cse=True: `lambdify(x, diff(l8(x), x), cse=True)`;
- numpy recurrence: v and dv together, dv = 4 (1 - 2v) dv and v = 4v (1 - v), from v = x, dv = 1.

Every figure is the best of several timeit-style runs taken in interleaved blocks
(benchmarks/timing.py; sympy plain, 1 to 2.5 s a call, is timed only twice), all in the
same run, so compare the ratios to the recurrence rather than absolute times across machines.
The issue's anchors, measured on its author's machine: sympy plain 1213 ms, cse=True 46.7 ms,
recurrence 11.9 ms. Target: adcore's compiled derivative ≤ 2× the recurrence. The NumPy
contenders' times depend on the heap (see timing.warm_heap): the script warms it, as
bench_forward.py does, unless run with --cold-heap.

Every contender's result is first checked against the recurrence: max |difference| ≤ 1e-12
× max |recurrence| (one that disagrees reports ERROR, with its AssertionError, and is not
timed). Also printed: adcore's first call (a fresh function, so the cache misses: trace,
differentiate, cse, compile and the first evaluation) next to sympy's diff + lambdify(cse=True)
+ first evaluation, and the compiled call's time for CHUNK from 2**12 to 2**16 (and the whole
array in one piece), the measurement behind CHUNK = 2**14.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import adcore_symbolic.derive as derive  # derive.CHUNK is read at every evaluation (evaluate_over)
import numpy as np
import symbolic_workloads  # benchmarks/symbolic_workloads.py: issue 15 class 11, chains and workloads
import sympy as sp
from adcore_symbolic import DEFAULT_MAX_NODES
from sympy.core.cache import clear_cache
from timing import ERROR, cell, guarded, race, ratio, row, warm_heap  # benchmarks/timing.py

import adcore
import adcore.numpy as anp

N = 10**6
STEPS = 7  # l8: l_1 = x, then 7 steps
SEED = 0
RTOL = 1e-12  # max |result - recurrence| / max |recurrence|
TARGET = 2.0  # adcore symbolic ÷ the recurrence
RUNS = dict(repeat=7, passes=3, summary=min)  # best of 21 runs
SLOW_RUNS = dict(repeat=1, passes=2, summary=min)  # sympy plain: best of 2
FIRST_CALLS = 5  # first-call timings, best of
CHUNKS = (2**12, 2**13, 2**14, 2**15, 2**16)
COLD_FLAG = "--cold-heap"  # leave malloc as it is

ADCORE, PLAIN, CSE, RECURRENCE = "adcore symbolic", "sympy plain", "sympy cse=True", "numpy recurrence"
ISSUE_MS = {PLAIN: 1213.0, CSE: 46.7, RECURRENCE: 11.9}  # the issue author's machine


def l8(x: Any) -> Any:
    """The logistic map's 8th iterate, on anything with * and -: arrays, adcore tracers, sympy."""
    for _ in range(STEPS):
        x = 4 * x * (1 - x)
    return x


def recurrence(x: np.ndarray) -> np.ndarray:
    """d l8 / dx by hand: the value and its derivative carried forward together."""
    v, dv = x, np.ones_like(x)
    for _ in range(STEPS):
        dv = 4 * (1 - 2 * v) * dv
        v = 4 * v * (1 - v)
    return dv


def adcore_grad() -> Callable[[np.ndarray], np.ndarray]:
    """A new function each time, so the symbolic backend's cache (per function) misses."""
    return adcore.grad(lambda x: anp.sum(l8(x)), backend="symbolic")


def sympy_lambdify(**options: Any) -> Callable[[np.ndarray], np.ndarray]:
    x = sp.Symbol("x")
    return sp.lambdify(x, sp.diff(l8(x), x), **options)


def contenders(x: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
    """{name: thunk returning d l8 / dx at x}; adcore's is compiled by its first call."""
    g, plain, cse = adcore_grad(), sympy_lambdify(), sympy_lambdify(cse=True)
    return {
        ADCORE: lambda: g(x),
        PLAIN: lambda: plain(x),
        CSE: lambda: cse(x),
        RECURRENCE: lambda: recurrence(x),
    }


def checked(thunks: dict[str, Callable[[], np.ndarray]], reference: np.ndarray) -> dict[str, Any]:
    """{name: max |result - reference| / max |reference|} (or ERROR); a contender that raises
    or disagrees is replaced by ERROR in `thunks`, so it is not timed."""
    scale = float(np.max(np.abs(reference)))
    errors = {}
    for name, thunk in thunks.items():

        def check(name: str = name, thunk: Callable[[], np.ndarray] = thunk) -> float:
            err = float(np.max(np.abs(thunk() - reference))) / scale
            assert err <= RTOL, (
                f"{name} disagrees with the recurrence: max |difference| = {err:.1e} × max |recurrence|"
                f" > {RTOL:.0e}"
            )
            return err

        errors[name] = guarded(name, check)
        if errors[name] is ERROR:
            thunks[name] = ERROR
    return errors


def timed(thunks: dict[str, Any], runs: dict[str, Any]) -> dict[str, Any]:
    """{name: ms per call}: the best of `runs` (or ERROR)."""
    return {n: t * 1e3 if isinstance(t, float) else t for n, t in race(thunks, 1, **runs).items()}


def first_call_ms(build: Callable[[], Callable[[np.ndarray], np.ndarray]], x: np.ndarray) -> float:
    """ms to build the derivative and evaluate it once, best of FIRST_CALLS; sympy's cache is
    cleared before each, so nothing an earlier build traced or differentiated is reused."""
    times = []
    for _ in range(FIRST_CALLS):
        clear_cache()
        start = time.perf_counter()
        build()(x)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def chunk_sweep(x: np.ndarray) -> dict[int, Any]:
    """{CHUNK: ms per compiled call} of one compiled adcore derivative, CHUNK set in turn
    before each call (and restored), over CHUNKS and the whole array (CHUNK = N)."""
    g, saved = adcore_grad(), derive.CHUNK

    def at(chunk: int) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            derive.CHUNK = chunk
            return g(x)

        return run

    try:
        return timed({c: at(c) for c in (*CHUNKS, N)}, RUNS)
    finally:
        derive.CHUNK = saved


def print_table(ms: dict[str, Any], errors: dict[str, Any]) -> None:
    heads = ("ms", "÷recurrence", "issue ms", "issue ÷rec", "max|Δ|/max|r|")
    row("contender", *(cell(h, 14) for h in heads))
    for name, v in ms.items():
        issue = ISSUE_MS.get(name)
        anchor = (
            (cell(issue, 14, "{:.1f}"), cell(ratio(issue, ISSUE_MS[RECURRENCE]), 14))
            if issue
            else (cell("", 14), cell(f"target ≤ {TARGET:g}", 14))
        )
        if not isinstance(v, float):  # failed (its traceback is above)
            row(name, cell(v, 14), cell("", 14), *anchor)
            continue
        row(
            name,
            cell(v, 14, "{:.2f}"),
            cell(ratio(v, ms[RECURRENCE]), 14),
            *anchor,
            cell(errors[name], 14, "{:.1e}"),
        )
    print("  (sympy plain: lambdify(x, diff(l8(x), x)); sympy cse=True: the same, lambdify(..., cse=True);")
    print("   numpy recurrence: dv = 4(1 - 2v) dv, v = 4v(1 - v), 7 times from v = x, dv = 1: the reference)")


def print_first_call(x: np.ndarray, compiled_ms: Any, very_first_ms: float) -> None:
    ours = first_call_ms(adcore_grad, x)
    theirs = first_call_ms(lambda: sympy_lambdify(cse=True), x)
    calls = f" = {ours / compiled_ms:.1f} compiled calls" if isinstance(compiled_ms, float) else ""
    print(
        f"  adcore first call (fresh function: trace + diff + cse + compile + first evaluation): "
        f"{ours:.1f} ms{calls};\n"
        f"    sympy diff + lambdify(cse=True) + first evaluation: {theirs:.1f} ms "
        f"(adcore's first call takes {ours / theirs:.2f}× its time)\n"
        f"    (best of {FIRST_CALLS}, sympy's cache cleared before each; this process's very first call, "
        f"which also pays one-time imports (sympy's lambdify loads all of NumPy's namespace): "
        f"{very_first_ms:.1f} ms)"
    )


def print_chunks(x: np.ndarray) -> None:
    ms = chunk_sweep(x)
    fastest = min((c for c in CHUNKS if isinstance(ms[c], float)), key=ms.get, default=None)
    figures = ", ".join(
        f"{'whole array' if c == N else f'2**{c.bit_length() - 1}'} {cell(ms[c], 0, '{:.2f}')}"
        + (" (CHUNK)" if c == derive.CHUNK else "")
        for c in ms
    )
    best = f"2**{fastest.bit_length() - 1}" if fastest else "-"
    print(f"  CHUNK (elements), adcore's compiled call in ms: {figures}; fastest {best}")


def bench() -> str:
    print(f"\nd l8(x)/dx, the logistic map's 8th iterate, on {N:.0e} float64 elements uniform in (0, 1)")
    print("   [ms per call, best of several runs; ÷recurrence: this time / the recurrence's]")
    x = np.random.default_rng(SEED).uniform(0, 1, N)
    start = time.perf_counter()
    adcore_grad()(x)
    very_first_ms = (time.perf_counter() - start) * 1e3
    thunks = contenders(x)
    errors = checked(thunks, recurrence(x))
    slow = {PLAIN: thunks[PLAIN]}
    fast = {n: t for n, t in thunks.items() if n != PLAIN}
    ms = {**timed(fast, RUNS), **timed(slow, SLOW_RUNS)}
    ms = {n: ms[n] for n in thunks}
    print_table(ms, errors)
    guarded("first call", lambda: print_first_call(x, ms[ADCORE], very_first_ms))
    guarded("chunk sweep", lambda: print_chunks(x))
    r = ratio(ms[ADCORE], ms[RECURRENCE])
    if not isinstance(r, float):
        return f"logistic n=8 on 10^6: adcore symbolic ≤ {TARGET:g}× the recurrence: {ERROR}"
    return (
        f"logistic n=8 on 10^6: adcore symbolic {ms[ADCORE]:.2f} ms = {r:.2f}× the recurrence, "
        f"target ≤ {TARGET:g}×: {'OK' if r <= TARGET else 'MISSED'}"
    )


# --- the cache's cost: a cached call replays f on shape-only tracers (issue 15, class 6) ---------


def cache_workloads() -> dict[str, tuple[Callable[..., Any], tuple]]:
    """{name: (f, args)}: an elementwise loss (small and large), a full-mode function of few
    elements, and one over a constant data matrix the replay compares by its bytes."""
    rng = np.random.default_rng(SEED)
    data, labels = rng.normal(size=(50, 10)), rng.choice([-1.0, 1.0], size=50)
    return {
        "l8, 10^6 (elementwise)": (lambda x: anp.sum(l8(x)), (rng.uniform(0, 1, N),)),
        "l8, 10^3 (elementwise)": (lambda x: anp.sum(l8(x)), (rng.uniform(0, 1, 10**3),)),
        "rosenbrock 10 (full)": (
            lambda x: anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
            (rng.uniform(-1, 1, 10),),
        ),
        "logistic 50x10 (full)": (
            lambda w: anp.sum(anp.log1p(anp.exp(-labels * (data @ w)))),
            (rng.normal(size=10),),
        ),
    }


def cache_cost() -> str:
    """A cached call now (the key, f replayed against its recording, the evaluation) against
    what it cost before the replay (the evaluation alone), in one run."""
    print("\nthe cache's cost: a cached call, before (evaluate only) and now (key + replay of f + evaluate)")
    row("workload", cell("before ms", 12), cell("now ms", 12), cell("now/before", 12))
    ratios = [cache_cost_row(name, f, args) for name, (f, args) in cache_workloads().items()]
    return "cache's cost, now/before: " + ", ".join(f"{r:.2f}x" for r in ratios if isinstance(r, float))


def cache_cost_row(name: str, f: Callable[..., Any], args: tuple) -> Any:
    backend = adcore.api.get_backend("symbolic")

    def call() -> Any:  # what value_and_jacobian does, from the cache
        return backend.derivation(f, args, (0,), True, True, DEFAULT_MAX_NODES)

    compiled = call()
    hits = backend.derivations
    number = 3 if np.size(args[0]) >= N else 200
    ms = race({"before": lambda: compiled.evaluate(args), "now": lambda: call().evaluate(args)}, number)
    ms = {k: v * 1e3 for k, v in ms.items()}
    assert backend.derivations == hits, f"{name}: the replay missed"
    r = ratio(ms["now"], ms["before"])
    row(name, cell(ms["before"], 12, "{:.4f}"), cell(ms["now"], 12, "{:.4f}"), cell(r, 12))
    return r


if __name__ == "__main__":
    warm = sys.argv[1:] != [COLD_FLAG] and warm_heap(trim_bytes=1 << 30)
    heap = (
        "warm (glibc malloc keeps freed memory)"
        if warm
        else f"as is (malloc's defaults; {COLD_FLAG} or not glibc)"
    )
    print(
        f"adcore symbolic-backend benchmark (python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"sympy {sp.__version__}; CHUNK = 2**{derive.CHUNK.bit_length() - 1}; heap: {heap})"
    )
    print(f"\n{guarded('bench', bench)}")
    print(f"\n{guarded('cache cost', cache_cost)}")
    print(f"\n{guarded('class 11', symbolic_workloads.table)}")  # issue 15: code that hung symbolic
    print(
        f"(the issue's machine: sympy plain {ISSUE_MS[PLAIN]} ms, cse=True {ISSUE_MS[CSE]} ms, "
        f"recurrence {ISSUE_MS[RECURRENCE]} ms: the target was ≤ {TARGET * ISSUE_MS[RECURRENCE]:.1f} ms there)"
    )
