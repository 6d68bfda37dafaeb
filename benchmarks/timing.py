"""What the benchmark scripts share: the race that times contenders, failure isolation and table cells.

Not a test helper and not part of adcore: the scripts next to this file import it by
its bare name (`from timing import race`), as `python benchmarks/bench_*.py` puts this
directory first on sys.path.
"""

from __future__ import annotations

import ctypes
import os
import platform
import timeit
import traceback

MISSING, ERROR = "not installed", "ERROR"


def mlp_data(sizes, batch, dtype):
    """(params [W1, b1, W2, b2, ...], X (batch, sizes[0]), one-hot Y (batch, sizes[-1])) of a
    dense MLP, C-contiguous in `dtype`: the same numbers for every contender and script."""
    import numpy as np  # (this module loads before NumPy: see one_blas_thread)

    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), 0.1 * rng.standard_normal(n_out)]
    X = rng.standard_normal((batch, sizes[0]))
    Y = np.eye(sizes[-1])[rng.integers(0, sizes[-1], batch)]
    params = [np.ascontiguousarray(p, dtype=dtype) for p in params]
    return params, np.ascontiguousarray(X, dtype=dtype), np.ascontiguousarray(Y, dtype=dtype)


def one_blas_thread() -> None:
    """One BLAS thread for NumPy (adcore, autograd) and torch alike, unless the environment says
    otherwise: on a small shared machine OpenBLAS's second thread spins waiting for a busy core (a
    500x500 Cholesky took 0.7 s with two threads under load, 9 ms with one), and the load of the
    moment would decide the times. Call it before NumPy is imported (this module imports none)."""
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(threads, "1")


def race(contenders, number, repeat=5, passes=3, summary=min):
    """{name: seconds per call}: `summary` (min, or statistics.median) of timeit-style runs of `number` calls.

    contenders is {name: fn, or None when its library is missing, or ERROR when it already
    failed}. Each contender gets a block of `repeat` runs in turn, and the whole round is
    done `passes` times, so a burst of load on this noisy machine does not decide a figure.
    (Blocks, not one run per contender in turn: torch's and OpenBLAS's threads slow each
    other down right after a switch.) A contender that raises reports ERROR, with its traceback.
    """
    live = {n: f for n, f in contenders.items() if callable(f) and guarded(n, f) is not ERROR}  # warm-up
    runs = {name: [] for name in live}
    for _ in range(passes):
        for name, f in live.items():
            runs[name] += [t / number for t in timeit.repeat(f, number=number, repeat=repeat)]
    return {
        n: summary(runs[n]) if n in runs else MISSING if f is None else ERROR for n, f in contenders.items()
    }


def guarded(label, thunk, available=True):
    """thunk(), or MISSING / ERROR (with the traceback printed) so one failure does not stop the rest."""
    if not available:
        return MISSING
    try:
        return thunk()
    except Exception:
        print(f"  !! {label} raised:\n    " + traceback.format_exc().rstrip().replace("\n", "\n    "))
        return ERROR


def ms_of(times):
    """race's {name: seconds} in milliseconds (MISSING and ERROR as they are)."""
    return {n: t * 1e3 if isinstance(t, float) else t for n, t in times.items()}


def leaves(result):
    """The arrays and numbers of a result made of nested tuples and lists, in order."""
    return (
        [leaf for item in result for leaf in leaves(item)] if isinstance(result, (tuple, list)) else [result]
    )


def checked(contenders, reference, tol):
    """Replace by ERROR (and say why) each contender whose result is not within tol of the reference:
    max |difference| <= tol * max |reference| over the leaves of both (nested tuples and lists)."""
    import numpy as np  # (this module loads before NumPy: see one_blas_thread)

    reference = [np.asarray(r, dtype=np.float64) for r in leaves(reference)]
    scale = max(float(np.max(np.abs(r))) for r in reference)
    for name, f in contenders.items():
        if not callable(f):
            continue

        def check(f=f, name=name):
            got = leaves(f())
            assert len(got) == len(reference), (
                f"{name} gives {len(got)} arrays, the reference {len(reference)}"
            )
            err = max(
                float(np.max(np.abs(np.asarray(g, dtype=np.float64) - r))) for g, r in zip(got, reference)
            )
            assert err <= tol * scale, f"{name} disagrees with the reference: max error {err:.1e}"
            return err

        if guarded(name, check) is ERROR:
            contenders[name] = ERROR


def cell(v, width=14, fmt="{:.2f}"):
    return (fmt.format(v) if isinstance(v, float) else str(v)).rjust(width)


def ratio(a, b):
    return a / b if isinstance(a, float) and isinstance(b, float) else "-"


def verdict(v, target):
    return ("OK" if v <= target else "MISS") if isinstance(v, float) else "-"


def row(name, *cells):
    print(f"  {name:<22}" + "".join(cells))


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def warm_heap(trim_bytes: int = 64 << 20) -> bool:
    """Keep freed memory in glibc's heap for reuse; False where malloc is not glibc's (left as is).

    A large NumPy temporary is served from the heap once glibc's dynamic mmap threshold has
    grown past it, but the heap's free top goes back to the OS when it exceeds the trim
    threshold, so whether each call page-faults in fresh memory depends on what the process
    allocated before: the same computation can take 2 to 4 times as long. Warm: the mmap
    threshold at glibc's ceiling (32 MiB) and the trim threshold at `trim_bytes` (glibc's
    dynamic ceiling, 64 MiB, by default), the state a long-running NumPy process is in.
    """
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, trim_bytes))
