"""Issue 15 class 11 for bench_symbolic.py: the code that made the symbolic backend hang, timed
against reverse on the same workload. Each workload runs in its own process with a time limit,
so a derivative that still hangs (as on the code before the fix) is stopped and reported.

    python benchmarks/symbolic_workloads.py [--limit SECONDS]   # the whole table (3 to 5 min)
    python benchmarks/symbolic_workloads.py NAME N              # one workload, as JSON (the child)

Workloads (symbolic's figure is its first call: trace, derivative, compile, evaluation; a
refusal is the time until ExpressionTooLargeError; reverse is timed on the same call):

- chain x*x+sin(x): x = x*x + sin(x), n times, d/dx at -0.5 (3 traced ops a level);
- chain sin(x)*0.5+x*0.5: n times, d/dx at 0.3 (4 traced ops a level);
- logreg: logistic regression's loss on scikit-learn's breast-cancer data (first N rows of
  569, 30 standardized features), its gradient in the 30 weights;
- mlp 3-4-2: mean squared error of tanh(X W1 + b1) W2 + b2 on 100 random rows, its gradient
  in all four parameters;
- rk4: a pendulum (theta'' = -9.81 sin theta) integrated N RK4 steps of 0.1 from (1, 0), the
  Jacobian of the final state in the initial one;
- rosenbrock hessian: the full Hessian of Rosenbrock in 100 variables (reverse: reverse of reverse).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp

LIMIT_S = 60.0  # a workload still running after this is stopped
RTOL = 1e-9  # symbolic against reverse: max |difference| / max |reverse|


def chain_square_plus_sine(n: int) -> Callable[..., Any]:
    def f(x):
        for _ in range(n):
            x = x * x + anp.sin(x)
        return x

    return lambda backend, **o: adcore.grad(f, backend=backend, **o)(-0.5)


def chain_damped_sine(n: int) -> Callable[..., Any]:
    def f(x):
        for _ in range(n):
            x = anp.sin(x) * 0.5 + x * 0.5
        return x

    return lambda backend, **o: adcore.grad(f, backend=backend, **o)(0.3)


def logreg(rows: int) -> Callable[..., Any]:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X, y = data.data[:rows], data.target[:rows].astype(float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)

    def loss(w):
        p = 1 / (1 + anp.exp(-(X @ w)))
        return -anp.mean(y * anp.log(p) + (1 - y) * anp.log(1 - p))

    return lambda backend, **o: adcore.grad(loss, backend=backend, **o)(np.full(30, 0.01))


def mlp(rows: int) -> Callable[..., Any]:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(rows, 3)), rng.normal(size=(rows, 2))
    params = (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2)), rng.normal(size=2))

    def loss(W1, b1, W2, b2):
        return anp.mean((anp.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2)

    return lambda backend, **o: adcore.grad(loss, argnums=(0, 1, 2, 3), backend=backend, **o)(*params)


def rk4(steps: int, dt: float = 0.1) -> Callable[..., Any]:
    def field(y):
        return anp.stack([y[1], -9.81 * anp.sin(y[0])])

    def run(y):
        for _ in range(steps):
            k1 = field(y)
            k2 = field(y + dt / 2 * k1)
            k3 = field(y + dt / 2 * k2)
            k4 = field(y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    return lambda backend, **o: adcore.jacobian(run, backend=backend, **o)(np.array([1.0, 0.0]))


def rosenbrock_hessian(n: int) -> Callable[..., Any]:
    def f(x):
        return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    return lambda backend, **o: adcore.hessian(f, backend=backend, **o)(np.linspace(-1, 1, n))


WORKLOADS = {
    "chain x*x+sin(x)": chain_square_plus_sine,
    "chain sin(x)*0.5+x*0.5": chain_damped_sine,
    "logreg": logreg,
    "mlp 3-4-2": mlp,
    "rk4": rk4,
    "rosenbrock hessian": rosenbrock_hessian,
}
# (workload, N, traced ops per N for a per-op time or None): the table's rows
TABLE = [
    ("chain x*x+sin(x)", 100, 3),
    ("chain x*x+sin(x)", 1000, 3),
    ("chain sin(x)*0.5+x*0.5", 100, 4),
    ("chain sin(x)*0.5+x*0.5", 1000, 4),
    ("logreg", 100, None),
    ("logreg", 569, None),
    ("mlp 3-4-2", 100, None),
    ("rk4", 3, None),
    ("rk4", 4, None),
    ("rk4", 5, None),
    ("rk4", 10, None),
    ("rosenbrock hessian", 100, None),
]


def _flat(result: Any) -> np.ndarray:
    parts = result if isinstance(result, tuple) else (result,)
    return np.concatenate([np.ravel(np.asarray(p, dtype=float)) for p in parts])


def child(name: str, n: int) -> dict[str, Any]:
    """One workload in this process: {"symbolic": s or None, "refused": message, "reverse": s, "error": ...}."""
    from adcore_symbolic import ExpressionTooLargeError

    adcore.grad(lambda x: x * x, backend="symbolic")(1.0)  # imports sympy and the plugins first
    work = WORKLOADS[name](n)
    start = time.perf_counter()
    reference = _flat(work("reverse"))
    out: dict[str, Any] = {"reverse": time.perf_counter() - start}
    start = time.perf_counter()
    try:
        got = _flat(work("symbolic"))
    except ExpressionTooLargeError as e:
        out["refused"] = str(e).split(" the work ")[0].replace("backend 'symbolic': ", "")
        out["symbolic"] = time.perf_counter() - start
        return out
    out["symbolic"] = time.perf_counter() - start
    scale = max(float(np.max(np.abs(reference))), 1e-300)
    out["error"] = float(np.max(np.abs(got - reference))) / scale
    return out


def run_one(name: str, n: int, limit: float) -> dict[str, Any]:
    """child(name, n) in a fresh process, stopped after `limit` seconds ({"stopped": limit})."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, name, str(n)], capture_output=True, text=True, timeout=limit
        )
    except subprocess.TimeoutExpired:
        return {"stopped": limit}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def table(limit: float = LIMIT_S) -> str:
    """Print every row of TABLE; returns a one-line summary."""
    print(f"\nissue 15 class 11: code that hung symbolic, each in its own process, stopped after {limit:g} s")
    print("   [symbolic: its first call (trace, derivative, compile, evaluate) or the time to its refusal;")
    print("    reverse: the same call; ratio: symbolic / reverse; error: max|Δ| / max|reverse|]")
    print(
        f"{'workload':<30}{'symbolic s':>12}{'per op ms':>11}{'reverse ms':>12}{'ratio':>9}{'error':>10}  note"
    )
    hung = 0
    for name, n, ops in TABLE:
        r = run_one(name, n, limit)
        label = f"{name} n={n}"
        if "stopped" in r or "failed" in r:
            hung += "stopped" in r
            note = f"stopped after {limit:g} s" if "stopped" in r else f"failed: {r['failed'][:70]}"
            print(
                f"{label:<30}{'> ' + format(limit, 'g') if 'stopped' in r else '-':>12}{'':>11}{'':>12}{'':>9}{'':>10}  {note}"
            )
            continue
        per_op = f"{r['symbolic'] / (n * ops) * 1e3:.2f}" if ops else ""
        error = f"{r['error']:.0e}" if "error" in r else ""
        note = (
            f"refused: {r['refused']}"
            if "refused" in r
            else ("OK" if r.get("error", 1) <= RTOL else "DISAGREES")
        )
        print(
            f"{label:<30}{r['symbolic']:>12.2f}{per_op:>11}{r['reverse'] * 1e3:>12.1f}"
            f"{r['symbolic'] / r['reverse']:>9.0f}{error:>10}  {note}"
        )
    return f"class 11: {len(TABLE) - hung} of {len(TABLE)} workloads answered or refused within {limit:g} s"


if __name__ == "__main__":
    if len(sys.argv) == 3 and not sys.argv[1].startswith("--"):
        print(json.dumps(child(sys.argv[1], int(sys.argv[2]))))
    else:
        limit = float(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else LIMIT_S
        print(table(limit))
