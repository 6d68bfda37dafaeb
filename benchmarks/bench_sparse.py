"""Sparse Jacobians (issue 21): adcore's dense and sparse Jacobians against SciPy's grouped differences.

Run by hand (not part of the tests):  python benchmarks/bench_sparse.py [--quick]   (about 3 minutes)

Problems (benchmarks/sparse_problems.py): the 2-D Brusselator's right-hand side at N = 32 and N = 64
(2N^2 variables, 6 non-zeros per row) and GradBench's bundle adjustment ba1, ba2, ba3 (3p residuals of
11n + 3m + p variables, 15 non-zeros in a reprojection row). For each it prints, in one run:

1. The pattern and its coloring: the size and non-zeros of the Jacobian, the detection time
   (`adcore.jacobian_sparsity`, global), whether the detected pattern equals the problem's analytic
   one, the coloring time and the number of colors against the lower bound (column coloring, which
   forward and numeric use: the most non-zeros in a row; row coloring, which reverse uses: the most
   in a column).
2. Jacobian times in ms: adcore's dense Jacobian (forward; numeric, central differences), sparse
   one-shot (`adcore.jacobian(f, backend=..., sparse=True)(x)`: detection, coloring and evaluation
   every call), `adcore.prepare_jacobian` once and the prepared Jacobian per call (forward; numeric),
   and SciPy's `approx_derivative` with the same pattern and `group_columns`' grouping (its default
   2-point differences, one evaluation per group; 3-point, two, like adcore's central differences).
   sparsejac and asdex (JAX) print "not installed" when they are not importable.
3. Ratios against the issue's targets: sparse >= 100x faster than dense at Brusselator N = 64 (one-shot
   and prepared, each judged); colors within 10% of the lower bound; prepared sparse forward faster
   than SciPy's grouped differences on every problem. And the check of every result against the dense forward Jacobian or, where that
   does not fit in memory, bundle adjustment's blocks by two reverse sweeps (as GradBench's adcore
   tool computes them): the largest difference relative to the largest entry (forward: 0 or rounding).

Every figure is the minimum over runs in this one process: at least 5 runs and 0.5 s, or 3 runs for
a cell whose runs take more than 0.5 s. Dense Jacobians that would take more than 2 GB (bundle
adjustment: ba1's is 95529 x 55710) are skipped, saying why, as is a dense numeric Jacobian whose
first run takes more than 60 s. `--quick` runs Brusselator N = 32 and ba1 only.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sparse_problems import Brusselator, BundleAdjustment  # benchmarks/sparse_problems.py
from timing import ERROR, MISSING, guarded, warm_heap  # benchmarks/timing.py

import adcore

DENSE_LIMIT_BYTES = 2 << 30
DENSE_NUMERIC_LIMIT_S = 60.0
TARGET_SPEEDUP, TARGET_COLORS = 100.0, 1.10


def best(fn, min_runs: int = 5, min_seconds: float = 0.5, slow: float = 0.5) -> tuple[float, Any]:
    """(the minimum time of fn() over at least min_runs runs and min_seconds (3 runs when runs take more
    than `slow` s), what its last run returned)."""
    times: list[float] = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        enough = len(times) >= min_runs and time.perf_counter() - start >= min_seconds
        if enough or (len(times) >= 3 and min(times) > slow):
            return min(times), result


def timed(label: str, fn) -> tuple[Any, Any]:
    """best(fn): (seconds, result), or (ERROR, ERROR) with the traceback printed."""
    print(f"    {label}", flush=True)
    measured = guarded(label, lambda: best(fn))
    return (ERROR, ERROR) if measured is ERROR else measured


@dataclass
class Row:
    """One problem's figures: times in seconds (or MISSING, ERROR, a reason), patterns and checks."""

    name: str
    problem: Any
    x: np.ndarray
    cells: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def problems(quick: bool) -> list[tuple[str, Any]]:
    made = [("bruss N=32", lambda: Brusselator(32)), ("ba1", lambda: BundleAdjustment.gradbench(1))]
    if not quick:
        made[1:1] = [("bruss N=64", lambda: Brusselator(64))]
        made += [
            ("ba2", lambda: BundleAdjustment.gradbench(2)),
            ("ba3", lambda: BundleAdjustment.gradbench(3)),
        ]
    return made


def point(problem: Any) -> np.ndarray:
    return problem.y0 if isinstance(problem, Brusselator) else problem.x0


# ---- measuring one problem -------------------------------------------------------------------------------


def measure(name: str, problem: Any) -> Row:
    row = Row(name, problem, point(problem))
    f, x, c = problem.f, row.x, row.cells
    m = f(x).size
    c["n"], c["m"] = x.size, m
    print(f"  {name}: {m} x {x.size}", flush=True)

    # 1. pattern and colorings
    c["detect"], pattern = timed(f"{name} detection", lambda: adcore.jacobian_sparsity(f)(x))
    analytic = problem.pattern()
    if pattern is ERROR:
        row.notes.append("detection failed: SciPy's columns use the analytic pattern")
        pattern_for_scipy = analytic
    else:
        c["pattern"] = compare_patterns(pattern, analytic)
        pattern_for_scipy = pattern
    c["nnz"] = pattern_for_scipy.nnz
    colorings_of(name, pattern_for_scipy, c)

    # 2. Jacobians
    dense_bytes = 8 * m * x.size
    dense_fits = dense_bytes <= DENSE_LIMIT_BYTES
    reference = None
    if dense_fits:
        dense_forward = lambda: adcore.jacobian(f, backend="forward")(x)  # noqa: E731
        c["dense forward"], reference = timed(f"{name} dense forward", dense_forward)
        c["dense numeric"] = dense_numeric(name, f, x)
    else:
        why = f"no: {dense_bytes / 2**30:.0f} GB"
        c["dense forward"] = c["dense numeric"] = why
        row.notes.append(f"dense Jacobians skipped: {m} x {x.size} float64 is {dense_bytes / 2**30:.1f} GB")

    for backend in ("forward", "numeric"):
        one_shot = lambda backend=backend: adcore.jacobian(f, backend=backend, sparse=True)(x)  # noqa: E731
        c[f"one-shot {backend}"], _ = timed(f"{name} one-shot {backend}", one_shot)
        c[f"prepare {backend}"], prep = timed(f"{name} prepare {backend}", lambda b=backend: prepare(f, x, b))
        if prep is ERROR:
            c[f"prepared {backend}"] = ERROR
            continue
        c[f"prepared {backend}"], c[f"J {backend}"] = timed(f"{name} prepared {backend}", lambda p=prep: p(x))

    groups = guarded(f"{name} group_columns", lambda: group_columns(pattern_for_scipy))
    for method in ("2-point", "3-point"):
        scipy_call = lambda method=method: approx_derivative(f, x, method, pattern_for_scipy, groups)  # noqa: E731
        if groups is ERROR:
            c[f"scipy {method}"] = ERROR
            continue
        c[f"scipy {method}"], c[f"J scipy {method}"] = timed(f"{name} scipy {method}", scipy_call)
        c["scipy groups"] = int(groups.max()) + 1
    for anchor in ("sparsejac", "asdex"):
        c[anchor] = MISSING if importlib.util.find_spec(anchor) is None else "not wired"

    check(row, reference)
    return row


def colorings_of(name: str, pattern: Any, c: dict) -> None:
    """The column coloring's time, and colors and lower bound of the column and row colorings (the row
    coloring once, untimed: ba3's takes seconds, 2262 colors that reverse mode would sweep)."""
    try:
        from adcore_sparsity.coloring import column_coloring, row_coloring
    except ImportError as missing:
        print(f"  !! {name}: no coloring ({missing})")
        c["column"] = c["row"] = ERROR
        return
    c["color"], column = timed(f"{name} column coloring", lambda: column_coloring(pattern))
    row = guarded(f"{name} row coloring", lambda: row_coloring(pattern))
    c["column"] = column if column is ERROR else (column.ncolors, column.lower_bound)
    c["row"] = row if row is ERROR else (row.ncolors, row.lower_bound)


def dense_numeric(name: str, f, x: np.ndarray) -> Any:
    """The dense numeric Jacobian's time, or why it was skipped (its first run over 60 s)."""
    print(f"    {name} dense numeric", flush=True)
    t0 = time.perf_counter()
    first = guarded(f"{name} dense numeric", lambda: adcore.jacobian(f, backend="numeric")(x))
    elapsed = time.perf_counter() - t0
    if first is ERROR:
        return ERROR
    if elapsed > DENSE_NUMERIC_LIMIT_S:
        return f"no: {elapsed:.0f} s"
    seconds, _ = timed(f"{name} dense numeric", lambda: adcore.jacobian(f, backend="numeric")(x))
    return min(elapsed, seconds) if isinstance(seconds, float) else seconds


def prepare(f, x: np.ndarray, backend: str):
    return adcore.prepare_jacobian(f, x, backend=backend, sparse=True)


def group_columns(pattern):
    from scipy.optimize._numdiff import group_columns as scipy_group_columns

    return scipy_group_columns(pattern)


def approx_derivative(f, x: np.ndarray, method: str, pattern, groups):
    from scipy.optimize._numdiff import approx_derivative as scipy_approx_derivative

    return scipy_approx_derivative(f, x, method=method, sparsity=(pattern, groups))


def compare_patterns(detected, analytic) -> str:
    """'exact', 'superset (+k)' or 'MISSES k' (a detected pattern must hold every analytic entry)."""
    detected, analytic = detected.astype(bool).tocsr(), analytic.astype(bool).tocsr()
    if detected.shape != analytic.shape:
        return f"SHAPE {detected.shape}"
    missed = (analytic > detected).nnz
    extra = (detected > analytic).nnz
    return f"MISSES {missed}" if missed else "exact" if not extra else f"superset (+{extra})"


def check(row: Row, reference) -> None:
    """Each sparse result against the dense forward Jacobian, or bundle adjustment's blocks by reverse mode."""
    c = row.cells
    if reference is None or reference is ERROR:
        reference = guarded(f"{row.name} reference", lambda: row.problem.reference_jacobian(row.x))
        c["reference"] = "ba blocks"
    else:
        c["reference"] = "dense fwd"
    if reference is ERROR:
        return
    dense_reference = not hasattr(reference, "tocsr")
    scale = float(np.max(np.abs(reference if dense_reference else reference.data)))
    for key in ("J forward", "J numeric", "J scipy 2-point", "J scipy 3-point"):
        result = c.get(key)
        if result is None or result is ERROR:
            continue
        difference = (result.toarray() if dense_reference else result) - reference
        largest = float(np.max(np.abs(difference))) if dense_reference else float(abs(difference).max())
        c[f"error {key[2:]}"] = largest / scale


# ---- the tables ------------------------------------------------------------------------------------------


def ms(v: Any, width: int = 11) -> str:
    return (f"{v * 1e3:.3g}" if isinstance(v, float) else str(v)).rjust(width)


def text(v: Any, width: int = 11) -> str:
    return str(v).rjust(width)


def colors(v: Any) -> str:
    return f"{v[0]}/{v[1]}" if isinstance(v, tuple) else str(v)


def ratio(a: Any, b: Any) -> Any:
    return a / b if isinstance(a, float) and isinstance(b, float) else "-"


def times(r: Any, digits: str = ".3g") -> str:
    return f"{r:{digits}}x" if isinstance(r, float) else str(r)


def print_tables(rows: list[Row]) -> None:
    print(
        "\n1. Patterns and colorings: detection (global), the pattern against the analytic one, colors/lower"
        "\n   bound of the column and row colorings, and the groups of SciPy's group_columns (the same pattern)"
    )
    head = [
        "variables",
        "residuals",
        "non-zeros",
        "detect ms",
        "pattern",
        "color ms",
        "columns",
        "rows",
        "scipy",
    ]
    print(f"  {'problem':<12}" + "".join(h.rjust(13) for h in head))
    for r in rows:
        c = r.cells
        cells = [
            text(c["n"], 13),
            text(c["m"], 13),
            text(c.get("nnz", "-"), 13),
            ms(c.get("detect", ERROR), 13),
            text(c.get("pattern", ERROR), 13),
            ms(c.get("color", ERROR), 13),
            text(colors(c.get("column", ERROR)), 13),
            text(colors(c.get("row", ERROR)), 13),
            text(c.get("scipy groups", ERROR), 13),
        ]
        print(f"  {r.name:<12}" + "".join(cells))

    print("\n2. Jacobians, ms (min of runs; one-shot = detection + coloring + evaluation each call)")
    keys = [
        ("dense forward", "dense fwd"),
        ("dense numeric", "dense num"),
        ("one-shot forward", "1-shot fwd"),
        ("one-shot numeric", "1-shot num"),
        ("prepare forward", "prepare fwd"),
        ("prepared forward", "prep'd fwd"),
        ("prepared numeric", "prep'd num"),
        ("scipy 2-point", "scipy 2pt"),
        ("scipy 3-point", "scipy 3pt"),
        ("sparsejac", "sparsejac"),
        ("asdex", "asdex"),
    ]
    print(f"  {'problem':<12}" + "".join(label.rjust(14) for _, label in keys))
    for r in rows:
        print(f"  {r.name:<12}" + "".join(ms(r.cells.get(key, ERROR), 14) for key, _ in keys))

    print("\n3. Ratios and targets")
    head = [
        "dense/1-shot",
        ">=100x@N=64",
        "dense/prep'd",
        ">=100x@N=64",
        "colors/LB",
        "<=1.10",
        "scipy/prep'd",
        "> 1",
        "checked",
    ]
    print(f"  {'problem':<12}" + "".join(h.rjust(14) for h in head) + "  max error (/ max |J|)")
    verdicts = []
    for r in rows:
        c = r.cells
        speedup = ratio(c.get("dense forward"), c.get("one-shot forward"))
        prepared_speedup = ratio(c.get("dense forward"), c.get("prepared forward"))
        column = c.get("column")
        color_ratio = column[0] / column[1] if isinstance(column, tuple) else "-"
        versus_scipy = ratio(c.get("scipy 2-point"), c.get("prepared forward"))
        big = r.name == "bruss N=64"
        speed_ok, prepared_ok = (
            ("OK" if v >= TARGET_SPEEDUP else "MISS") if big and isinstance(v, float) else "-"
            for v in (speedup, prepared_speedup)
        )
        colors_ok = (
            ("OK" if color_ratio <= TARGET_COLORS else "MISS") if isinstance(color_ratio, float) else "-"
        )
        scipy_ok = ("OK" if versus_scipy > 1 else "MISS") if isinstance(versus_scipy, float) else "-"
        verdicts += [v for v in (speed_ok, prepared_ok, colors_ok, scipy_ok) if v != "-"]
        errors = ", ".join(
            f"{key[6:]} {c[key]:.1e}"
            for key in ("error forward", "error numeric", "error scipy 2-point")
            if key in c
        )
        cells = [
            times(speedup),
            speed_ok,
            times(prepared_speedup),
            prepared_ok,
            times(color_ratio, ".2f"),
            colors_ok,
            times(versus_scipy, ".2f"),
            scipy_ok,
            c.get("reference", "-"),
        ]
        print(f"  {r.name:<12}" + "".join(text(v, 14) for v in cells) + f"  {errors}")
    for r in rows:
        for note in r.notes:
            print(f"  note: {r.name}: {note}")
    misses = verdicts.count("MISS")
    print(f"\n  targets: {len(verdicts) - misses} OK, {misses} MISS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Brusselator N = 32 and ba1 only")
    args = parser.parse_args()
    warm_heap()
    print(f"adcore {adcore.__version__}, numpy {np.__version__}; backends {', '.join(adcore.backends())}")
    rows = [measure(name, make()) for name, make in problems(args.quick)]
    print_tables(rows)


if __name__ == "__main__":
    main()
