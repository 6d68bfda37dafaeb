"""The sparsity plugin's rules and coloring on large inputs: their times, once asserted by the tests.

Run by hand (not part of the tests):  python benchmarks/bench_sparsity_rules.py   (a few seconds)

The tests (tests/plugins/sparsity/) check what these calls return (sparse patterns, exact non-zeros,
valid colorings at the lower bound); a bound on their wall time failed on a loaded two-core machine,
so the times are here, each the best of 5 runs after one unmeasured run (numba's compile, caches),
beside the bound the tests used to assert ("was < 1 s").
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from adcore_sparsity.coloring import column_coloring
from adcore_sparsity.extend import Unknown
from adcore_sparsity.rules import RULES

import adcore

RUNS = 5


def unknown(x) -> Unknown:
    return Unknown(np.shape(x), np.asarray(x).dtype)


def tridiagonal(n: int) -> np.ndarray:
    return np.eye(n, k=-1) + 2 * np.eye(n) + np.eye(n, k=1)


def best(fn: Callable[[], object]) -> float:
    """Seconds: the best of RUNS runs, after one unmeasured run."""
    fn()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def multi_dot_chain(n: int = 60) -> None:
    t, x = tridiagonal(n), np.ones((n, n))
    out = adcore.ops["multi_dot"].impl(t, x, t, t)
    RULES["multi_dot"](unknown(out), t, unknown(x), t, t)


def matmul_patterns(n: int = 200) -> None:
    a, x = tridiagonal(n), np.ones(n)
    RULES["matmul"](unknown(a @ x), a, unknown(x))
    RULES["matmul"](unknown(x @ a), unknown(x), a)


def elementwise(n: int = 200_000) -> None:
    x = Unknown((n,), np.float64)
    RULES["sin"](x, x)
    RULES["multiply"](x, x, Unknown((1,), np.float64))
    RULES["maximum"](np.ones(n), np.linspace(-1, 1, n), np.zeros(n))


X300 = np.random.default_rng(0).random((300, 300))


def reductions() -> None:
    RULES["sum"](Unknown((300,), np.float64), unknown(X300), axis=1)
    RULES["max"](np.max(X300, axis=0), X300, axis=0)
    RULES["median"](np.median(X300, axis=1), X300, axis=1)


def diff_and_cumsum() -> None:
    RULES["diff"](Unknown((100, 998), np.float64), Unknown((100, 1000), np.float64), n=2, axis=1)
    RULES["cumsum"](Unknown((1000, 40), np.float64), Unknown((1000, 40), np.float64), axis=1)


def gathers() -> None:
    x = np.zeros(100_000)
    index = (np.arange(0, 100_000, 7),)
    RULES["getitem"](unknown(x[index]), unknown(x), index=index)
    RULES["getitem"](unknown(x[5:-5:3]), unknown(x), index=slice(5, -5, 3))


def laplacian_2d(size: int = 91) -> sp.csr_array:
    path = sp.diags_array([np.ones(size - 1), np.ones(size), np.ones(size - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(size)
    return sp.csr_array((sp.kron(eye, path) + sp.kron(path, eye)) != 0)


def bundle_adjustment(cameras: int = 50, points: int = 8000, observations: int = 30000) -> sp.csr_array:
    rng = np.random.default_rng(0)
    camera, point = rng.integers(0, cameras, observations), rng.integers(0, points, observations)
    columns = np.concatenate(
        [camera[:, None] * 11 + np.arange(11), cameras * 11 + point[:, None] * 3 + np.arange(3)], axis=1
    )
    rows, cols = np.repeat(np.arange(2 * observations), 14), np.repeat(columns, 2, axis=0).ravel()
    return sp.csr_array(
        (np.ones(rows.size, bool), (rows, cols)), shape=(2 * observations, cameras * 11 + points * 3)
    )


LAPLACIAN, BUNDLE = laplacian_2d(), bundle_adjustment()

CASES = [
    ("multi_dot of four 60x60, one traced (test_contractions)", multi_dot_chain, 3.0),
    ("two 200x200 matmul patterns (test_contractions)", matmul_patterns, 1.0),
    ("sin, multiply, maximum of 2e5 elements (test_elementwise)", elementwise, 1.0),
    ("sum, max, median of 300x300 (test_reductions)", reductions, 1.0),
    ("diff of 1e5, cumsum of 4e4 elements (test_cumulative)", diff_and_cumsum, 1.0),
    ("two gathers from 1e5 elements (test_shapes)", gathers, 1.0),
    ("column coloring, laplacian 8281 (test_coloring)", lambda: column_coloring(LAPLACIAN), 1.0),
    ("column coloring, bundle adjustment (test_coloring)", lambda: column_coloring(BUNDLE), 1.0),
]


def main() -> None:
    print(f"{'case':62} {'best s':>9} {'was <':>6}")
    for label, fn, bound in CASES:
        seconds = best(fn)
        print(f"{label:62} {seconds:9.4f} {bound:6.1f}{'' if seconds < bound else '  (over)'}")


if __name__ == "__main__":
    main()
