"""Newton-CG on Rosenbrock-100 with adcore.grad and adcore.hvp, next to torch's hvp.

Run by hand (not part of the tests):  python benchmarks/bench_hvp.py

scipy.optimize.minimize(method="Newton-CG") from x0 = -1 (every coordinate) to the
minimum at ones, with `jac` the gradient and `hessp` the Hessian-vector product:
adcore.grad(f) and adcore.hvp(f) (forward over reverse: no Hessian is built), against
the same minimisation with torch.autograd.grad and torch.autograd.functional.hvp
(float64, CPU). Both runs take the same iterations; each line prints nit, the final f,
the gradient and Hessian-vector evaluations, and the median wall time of a few runs;
then the ratio adcore / torch. Also one hvp call alone, in µs.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import scipy.optimize

import adcore
import adcore.numpy as anp

N = 100
X0 = np.full(N, -1.0)
RUNS = 5


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def adcore_problem():
    """f, jac and hessp for scipy, from adcore."""
    return rosenbrock, adcore.grad(rosenbrock), adcore.hvp(rosenbrock)


def torch_problem():
    """f, jac and hessp for scipy, from torch.autograd (None when torch is not installed)."""
    try:
        import torch
    except ImportError:
        return None

    def f_t(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def fun(x):
        return float(f_t(torch.from_numpy(x)))

    def jac(x):
        xt = torch.from_numpy(x).requires_grad_(True)
        return torch.autograd.grad(f_t(xt), xt)[0].numpy()

    def hessp(x, v):
        return torch.autograd.functional.hvp(f_t, torch.from_numpy(x), torch.from_numpy(v))[1].numpy()

    return fun, jac, hessp


def minimise(problem):
    fun, jac, hessp = problem
    return scipy.optimize.minimize(fun, X0, method="Newton-CG", jac=jac, hessp=hessp, options={"xtol": 1e-10})


def timed(problem) -> tuple:
    """The result of one minimisation and the median wall time of RUNS of them."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        result = minimise(problem)
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def report(name: str, result, seconds: float) -> None:
    distance = float(np.max(np.abs(result.x - 1.0)))
    print(
        f"  {name:<8} nit {result.nit:4d}  f {result.fun:.3e}  |x - 1|max {distance:.1e}  "
        f"grads {result.njev:4d}  hvps {result.nhev:5d}  wall {seconds * 1e3:8.1f} ms  "
        f"{'converged' if result.success and distance < 1e-6 else 'NOT CONVERGED'}"
    )


def one_hvp_us(hessp) -> float:
    x, v = np.linspace(-1, 1, N), np.ones(N)
    hessp(x, v)
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(200):
            hessp(x, v)
        runs.append((time.perf_counter() - start) / 200 * 1e6)
    return statistics.median(runs)


def main() -> None:
    print(f"Newton-CG on Rosenbrock-{N} from x0 = -1, scipy {scipy.__version__}, median of {RUNS} runs")
    ours = adcore_problem()
    result, seconds = timed(ours)
    report("adcore", result, seconds)
    theirs = torch_problem()
    if theirs is None:
        print("  torch    not installed")
        return
    t_result, t_seconds = timed(theirs)
    report("torch", t_result, t_seconds)
    print(f"  adcore / torch wall time: {seconds / t_seconds:.2f}x")
    a_us, t_us = one_hvp_us(ours[2]), one_hvp_us(theirs[2])
    print(f"  one hvp: adcore {a_us:.0f} us, torch {t_us:.0f} us, {a_us / t_us:.2f}x")


if __name__ == "__main__":
    main()
