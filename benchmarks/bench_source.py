"""adcore's source-transformation backend against its tape, jitted JAX, torch and autograd.

Run by hand (not part of the tests):  python benchmarks/bench_source.py [recurrence chain mlp]   (about a minute)

1. recurrence: `for _ in range(1000): x = np.sin(x) * a + x * b` on scalars, the gradient w.r.t.
   x, a and b, ms per call: `adcore.grad(f, backend="reverse")` (the tape), `backend="source"`
   (the generated Python), `backend="source", compile=True` (the generated code jitted by numba),
   `jax.jit(jax.grad(f))`, torch eager and autograd. Targets: source >= 5x faster than reverse;
   compiled >= 100x faster than reverse and within 2x of jax.jit.
2. chain: 1000 x `x = np.sin(x) * 1.0001 + 0.1` (3000 ops), d x_final / d x0; the same contenders
   and targets.
3. MLP 784-512-512-10 (bench_reverse.py's), batch 256, value and gradient w.r.t. all six weights and
   biases, float32 and float64: source against reverse (target: no slower), torch beside them.

The first call of source, source compiled and jax.jit is timed apart ("first call": the
transformation, numba's and XLA's compilation), with an empty source cache (a temporary
ADCORE_SOURCE_CACHE). Every contender's derivative is checked against adcore reverse before it
is timed (one that disagrees reports ERROR). jax, torch and autograd are optional: a missing
one prints "not installed". Without the source backend the script stops at once; a source
contender that fails prints its traceback and makes the script exit with status 1, so no
figure stands in for one that was not measured. One BLAS thread; every figure is timing.race's
best of interleaved blocks of timeit runs.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import warnings
from importlib import metadata

from timing import one_blas_thread  # noqa: E402  (before NumPy loads)

one_blas_thread()
CACHE = tempfile.mkdtemp(prefix="adcore-source-bench-")
os.environ["ADCORE_SOURCE_CACHE"] = CACHE  # first calls transform and compile from scratch

import numpy as np  # noqa: E402

import adcore  # noqa: E402

try:
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:
    torch = None
try:
    import autograd
    import autograd.numpy as agnp
except ImportError:
    autograd = agnp = None

from bench_reverse import BATCH, SIZES, adcore_loss, torch_value_and_grad  # noqa: E402  (the same MLP)
from timing import ERROR, MISSING, cell, checked, guarded, mlp_data, ms_of, race, ratio, row  # noqa: E402

REVERSE, SOURCE, COMPILED = "adcore reverse", "adcore source", "source compiled"
JIT = "jax.jit(jax.grad)"
SOURCE_CONTENDERS = (SOURCE, COMPILED)
failed: list[str] = []  # source contenders that raised or disagreed: the exit status says so


def jax_modules():
    """(jax, jax.numpy) with float64 on, or (None, None): jax is an anchor here, not a dependency."""
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jnp  # noqa: PLC0415
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


jax, jnp = jax_modules()


def at_least(v, target):
    return ("OK" if v >= target else "MISS") if isinstance(v, float) else "-"


def at_most(v, target):
    return ("OK" if v <= target else "MISS") if isinstance(v, float) else "-"


def first_call(name, f):
    """f() once, timed (ms), or ERROR; the SourceCompileWarnings it gives are printed (numba refused
    a construct, so the plain Python version ran and the 'compiled' figure is not numba's)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        got = guarded(name, f)
        ms = (time.perf_counter() - t0) * 1e3
    for w in caught:
        if type(w.message).__name__ == "SourceCompileWarning":
            print(f"  !! {name}: {w.message}")
    return ERROR if got is ERROR else ms


# ----------------------------------------------------------------------------- the scalar programs
STEPS = 1000


def recurrence(x, a, b):
    for _ in range(STEPS):
        x = np.sin(x) * a + x * b
    return x


def chain(x):
    for _ in range(STEPS):
        x = np.sin(x) * 1.0001 + 0.1
    return x


def recurrence_on(sin):
    """recurrence with another library's sin (torch.sin, jnp.sin, autograd's), for the anchors."""

    def f(x, a, b):
        for _ in range(STEPS):
            x = sin(x) * a + x * b
        return x

    return f


def chain_on(sin):
    def f(x):
        for _ in range(STEPS):
            x = sin(x) * 1.0001 + 0.1
        return x

    return f


def torch_grad(f, args):
    def call():
        xs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in args]
        return torch.autograd.grad(f(*xs), xs)

    return call


def bench_scalar(title, f, on, args):
    """One table: ms per gradient call, the speed-up over the tape, the ratio to jax.jit, the targets."""
    argnums = tuple(range(len(args)))
    print(f"\n{title}\n   [ms per call, best of runs]")
    grads = {
        REVERSE: adcore.grad(f, argnums, backend="reverse"),
        SOURCE: adcore.grad(f, argnums, backend="source"),
        COMPILED: adcore.grad(f, argnums, backend="source", compile=True),
    }
    contenders = {name: (lambda g=g: g(*args)) for name, g in grads.items()}
    contenders[JIT] = None
    if jax:
        jg = jax.jit(jax.grad(on(jnp.sin), argnums))
        contenders[JIT] = lambda: jax.block_until_ready(jg(*args))
    contenders["torch"] = torch and torch_grad(on(torch.sin), args)
    ag = autograd and autograd.grad(on(agnp.sin), argnum=argnums)
    contenders["autograd"] = ag and (lambda: ag(*args))

    first = {name: first_call(name, contenders[name]) for name in (SOURCE, COMPILED, JIT) if contenders[name]}
    contenders.update({name: ERROR for name, ms in first.items() if ms is ERROR})
    reference = guarded(REVERSE, contenders[REVERSE])
    if reference is ERROR:
        failed.append(f"{title.split(':')[0]} {REVERSE}")
        return
    checked(contenders, reference, 1e-9)
    slow = race({n: f for n, f in contenders.items() if n not in (COMPILED, JIT)}, number=2)
    fast = race({n: contenders[n] for n in (COMPILED, JIT)}, number=50)
    ms = ms_of({n: {**slow, **fast}[n] for n in contenders})
    failed.extend(f"{title.split(':')[0]} {n}" for n in SOURCE_CONTENDERS if ms[n] is ERROR)

    rev, jit = ms[REVERSE], ms[JIT]
    row(
        "contender",
        cell("ms"),
        cell("reverse÷this"),
        cell("this÷jax.jit"),
        cell("first call ms"),
        "   target",
    )
    for name, v in ms.items():
        speedup, vs_jit = ratio(rev, v), ratio(v, jit)
        target = ""
        if name == SOURCE:
            target = f"   ≥ 5x reverse {at_least(speedup, 5.0)}"
        elif name == COMPILED:
            target = f"   ≥ 100x reverse {at_least(speedup, 100.0)}, ≤ 2x jax.jit {at_most(vs_jit, 2.0)}"
        first_ms = first.get(name, "")
        row(name, cell(v, fmt="{:.3f}"), cell(speedup), cell(vs_jit), cell(first_ms, fmt="{:.0f}"), target)


def bench_recurrence():
    title = f"1. recurrence: {STEPS} x (x = sin(x)*a + x*b), gradient w.r.t. x, a, b"
    bench_scalar(title, recurrence, recurrence_on, (0.5, 0.9, 0.2))


def bench_chain():
    title = f"2. chain: {STEPS} x (x = sin(x)*1.0001 + 0.1), {3 * STEPS} ops, d x_final/d x0"
    bench_scalar(title, chain, chain_on, (0.5,))


# ----------------------------------------------------------------------------- 3. MLP
def mlp_one_dtype(dtype):
    """{contender: ms} of value_and_grad, each checked against adcore reverse."""
    params, X, Y = mlp_data(SIZES, BATCH, dtype)
    data = [*params, X, Y]
    argnums = tuple(range(len(params)))
    vg = {b: adcore.value_and_grad(adcore_loss, argnums, backend=b) for b in ("reverse", "source")}
    contenders = {REVERSE: lambda: vg["reverse"](*data), SOURCE: lambda: vg["source"](*data)}
    tdata = [torch.from_numpy(a) for a in data] if torch else None
    contenders["torch"] = torch and (lambda: torch_value_and_grad(*tdata))
    reference = guarded(f"{REVERSE} {dtype.__name__}", contenders[REVERSE])
    if reference is ERROR:
        failed.append(f"mlp {dtype.__name__} {REVERSE}")
        return None
    checked(contenders, reference, 1e-4 if dtype == np.float32 else 1e-10)
    ms = ms_of(race(contenders, number=2, repeat=5, passes=2))
    if ms[SOURCE] is ERROR:
        failed.append(f"mlp {dtype.__name__} {SOURCE}")
    return ms


def bench_mlp():
    print(f"\n3. MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, tanh, mean softmax cross-entropy")
    print("   value_and_grad w.r.t. all 6 weights/biases   [ms per call, best of runs]")
    rows = {dtype: mlp_one_dtype(dtype) for dtype in (np.float32, np.float64)}
    if None in rows.values():
        return
    row("contender", cell("f32 ms"), cell("f32 ÷reverse"), cell("f64 ms"), cell("f64 ÷reverse"), "   target")
    for name in rows[np.float32]:
        r32, r64 = (ratio(rows[d][name], rows[d][REVERSE]) for d in (np.float32, np.float64))
        target = (
            f"   ≤ 1.0x reverse: f32 {at_most(r32, 1.0)}  f64 {at_most(r64, 1.0)}" if name == SOURCE else ""
        )
        row(name, cell(rows[np.float32][name]), cell(r32), cell(rows[np.float64][name]), cell(r64), target)


def run(sections):
    if "source" not in adcore.backends():
        failed.append(
            f"every source row: adcore has no backend 'source' (only {', '.join(adcore.backends())})"
        )
        return
    anchors = [(m, mod) for m, mod in (("jax", jax), ("torch", torch), ("autograd", autograd))]
    versions = [
        f"numpy {np.__version__}",
        *(f"{m} {metadata.version(m) if mod else MISSING}" for m, mod in anchors),
    ]
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(f"adcore source-transformation benchmark; {', '.join(versions)}; {threads} BLAS thread(s)")
    for section in sections:
        section()


def main():
    sections = {"recurrence": bench_recurrence, "chain": bench_chain, "mlp": bench_mlp}
    try:
        run([sections[name] for name in sys.argv[1:] or sections])
    finally:
        shutil.rmtree(CACHE, ignore_errors=True)
    if failed:
        sys.exit(f"bench_source: no figure for {', '.join(failed)} (see the tracebacks above)")


if __name__ == "__main__":
    main()
