"""Gradients through np.fft, scipy.integrate.odeint and scipy.stats: adcore against PyTorch and HIPS autograd.

Run by hand (not part of the tests):  python benchmarks/bench_scipy.py   (about 5 minutes)

Three workloads, float64, CPU, each a scalar loss written once per tool:

1. spectral: a spectral filter's least-squares loss at n = 2^20,
   sum((irfft(rfft(x) * H, n) - target)^2), gradient w.r.t. x: adcore reverse (np.fft.rfft /
   irfft on traced values) against torch.fft with autograd and autograd's numpy.fft.
2. odeint: the damped oscillator y'' = -k y - c y' at 10^4 output times on [0, 2] (rtol = atol =
   1e-8 for the solve), loss mean(position^2), gradient w.r.t. y0, k, c: adcore's adjoint against
   autograd.scipy.integrate.odeint (the same adjoint; torch has no odeint). One run each for the
   time (autograd takes about a minute), then one under tracemalloc for the peak memory of the
   whole gradient call. adcore's derivative solves use 1e-10 (its default), autograd's the call's.
   Both gradients are checked against the closed-form solution's (differentiated by autograd).
3. mvn: sum of multivariate_normal.logpdf of 10 points at d = 500, gradient w.r.t. mean and cov:
   adcore_scipy.stats.multivariate_normal against torch.distributions.MultivariateNormal and
   autograd.scipy.stats.multivariate_normal. Gradients w.r.t. a symmetric cov are compared
   symmetrized (a tool may return G or its transpose: both give the same derivative along
   symmetric directions).

Every tool's gradient is first checked against adcore's (max relative difference printed; one off
by more than TOL reports ERROR and is not timed). Figures are medians of `timing.race` runs, in ms;
ratios adcore/torch and adcore/autograd against the issue's targets: <= 1.2x torch where torch has
the function, <= 0.5x autograd. torch and autograd are optional ("not installed").
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc

from timing import one_blas_thread  # noqa: E402  (before NumPy loads)

one_blas_thread()

import numpy as np  # noqa: E402

import adcore  # noqa: E402
import adcore.numpy as anp  # noqa: E402

try:
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:
    torch = None
try:
    import autograd
    import autograd.numpy as agnp
    from autograd.builtins import tuple as ag_tuple
    from autograd.scipy.integrate import odeint as ag_odeint
    from autograd.scipy.stats import multivariate_normal as ag_mvn
except ImportError:
    autograd = None

from timing import ERROR, MISSING, cell, guarded, race, ratio, row, verdict, warm_heap  # noqa: E402

RUNS = dict(repeat=3, passes=3, summary=statistics.median)
TOL = 1e-8
TORCH_TARGET, AUTOGRAD_TARGET = 1.2, 0.5
WIDTH = 14


def max_relative(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def checked(name, got, reference, tol=TOL):
    """got's max relative difference to adcore's gradient(s); ERROR beyond tol."""
    if got in (MISSING, ERROR):
        return got
    worst = max(max_relative(g, r) for g, r in zip(got, reference))
    print(f"  {name}: max relative difference {worst:.1e}")
    return worst if worst <= tol else ERROR


def ms(x):
    return x * 1e3 if isinstance(x, float) else x


def report(title, times, torch_has_it=True):
    print(f"\n{title}")
    row("", *(cell(h, WIDTH) for h in ("adcore ms", "torch ms", "autograd ms", "÷ torch", "÷ autograd")))
    a, t, g = (ms(times.get(k, MISSING)) for k in ("adcore", "torch", "autograd"))
    vs_torch, vs_autograd = ratio(a, t), ratio(a, g)
    row("", *(cell(v, WIDTH) for v in (a, t if torch_has_it else "no odeint", g, vs_torch, vs_autograd)))
    if torch_has_it:
        print(f"  target <= {TORCH_TARGET}x torch: {verdict(vs_torch, TORCH_TARGET)}", end="; ")
    print(f"target <= {AUTOGRAD_TARGET}x autograd: {verdict(vs_autograd, AUTOGRAD_TARGET)}")


# ----------------------------------------------------------------------------- 1. spectral loss
def spectral():
    n = 2**20
    rng = np.random.default_rng(0)
    x, target = rng.standard_normal(n), rng.standard_normal(n)
    H = 1.0 / (1.0 + (np.arange(n // 2 + 1) / 1000.0) ** 2)  # a low-pass filter

    def loss(x):
        return np.sum((np.fft.irfft(np.fft.rfft(x) * H, n) - target) ** 2)

    adcore_grad = adcore.grad(loss)
    reference = (adcore_grad(x),)
    contenders = {"adcore": lambda: adcore_grad(x)}
    if torch is not None:
        tx, tH, tt = (torch.from_numpy(a) for a in (x, H, target))

        def torch_grad():
            v = tx.clone().requires_grad_(True)
            out = torch.sum((torch.fft.irfft(torch.fft.rfft(v) * tH, n) - tt) ** 2)
            (g,) = torch.autograd.grad(out, v)
            return g

        got = guarded("torch", lambda: (torch_grad().numpy(),))
        contenders["torch"] = torch_grad if checked("torch to adcore's", got, reference) != ERROR else ERROR
    if autograd is not None:
        ag = autograd.grad(lambda x: agnp.sum((agnp.fft.irfft(agnp.fft.rfft(x) * H, n) - target) ** 2))
        got = guarded("autograd", lambda: (ag(x),))
        contenders["autograd"] = (
            (lambda: ag(x)) if checked("autograd to adcore's", got, reference) != ERROR else ERROR
        )
    report("1. spectral filter loss, n = 2^20: gradient w.r.t. x", race(contenders, number=1, **RUNS))


# ----------------------------------------------------------------------------- 2. odeint
M, SPAN, ODE_TOL, ODE_CHECK = 10_000, 2.0, 1e-8, 1e-3


def odeint_problem():
    from adcore_scipy.integrate import odeint

    times = np.linspace(0.0, SPAN, M)

    def oscillator(y, t, k, c):
        return anp.stack([y[1], -k * y[0] - c * y[1]])

    def loss(y0, k, c):
        ys = odeint(oscillator, y0, times, args=(k, c), rtol=ODE_TOL, atol=ODE_TOL)
        return anp.mean(ys[:, 0] ** 2)

    args = (np.array([1.0, 0.0]), 2.0, 0.3)
    contenders = {"adcore": lambda: adcore.grad(loss, argnums=(0, 1, 2))(*args)}
    if autograd is not None:

        def ag_oscillator(y, t, k, c):
            return agnp.array([y[1], -k * y[0] - c * y[1]])

        def ag_loss(y0, k, c):
            ys = ag_odeint(ag_oscillator, y0, times, ag_tuple((k, c)), rtol=ODE_TOL, atol=ODE_TOL)
            return agnp.mean(ys[:, 0] ** 2)

        contenders["autograd"] = lambda: autograd.grad(ag_loss, (0, 1, 2))(*args)
    return contenders


def once(fn):
    """((wall seconds, CPU seconds of this process) of one call, its result)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - start, time.process_time() - cpu), out


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def closed_form_gradient(y0, k, c):
    """The exact gradient of the loss, from the underdamped solution e^(-ct/2) (A cos wt + B sin wt)
    differentiated by autograd (None without autograd)."""
    if autograd is None:
        return None
    times = np.linspace(0.0, SPAN, M)

    def loss(y0, k, c):
        w = agnp.sqrt(k - c**2 / 4)
        a, b = y0[0], (y0[1] + c * y0[0] / 2) / w
        return agnp.mean(
            (agnp.exp(-c * times / 2) * (a * agnp.cos(w * times) + b * agnp.sin(w * times))) ** 2
        )

    return autograd.grad(loss, (0, 1, 2))(np.asarray(y0, float), k, c)


def odeint_bench():
    contenders = odeint_problem()
    times, results = {}, {}
    for name, fn in contenders.items():
        found = guarded(name, lambda fn=fn: once(fn))
        times[name], results[name] = (found, found) if found in (MISSING, ERROR) else found
    # each tool against the exact gradient: the solves' accuracy (rtol 1e-8) bounds both; autograd's
    # backward solves at the call's atol meet an adjoint of size ~1/M, so its error is larger
    exact = closed_form_gradient(np.array([1.0, 0.0]), 2.0, 0.3)
    if exact is not None:
        for name, got in results.items():
            if checked(f"{name} to the closed form's", got, exact, ODE_CHECK) == ERROR:
                times[name] = ERROR
    wall = {name: v if v in (MISSING, ERROR) else v[0] for name, v in times.items()}
    cpu = {name: v if v in (MISSING, ERROR) else v[1] for name, v in times.items()}
    report(f"2. odeint adjoint, {M} output times: gradient w.r.t. y0, k, c (one run, wall)", wall, False)
    # on a shared machine the wall time is the load's as much as the tool's: the CPU time too
    report("   the same runs' CPU time (time.process_time)", cpu, False)
    peaks = {name: guarded(name, lambda fn=fn: peak_bytes(fn)) for name, fn in contenders.items()}
    a, g = peaks.get("adcore"), peaks.get("autograd", MISSING)
    to_mb = lambda v: v / 1e6 if isinstance(v, int) else v  # noqa: E731
    print(
        f"  peak memory (tracemalloc, whole gradient call): adcore {cell(to_mb(a), 8)} MB, "
        f"autograd {cell(to_mb(g), 8)} MB; outputs stored: {M * 2 * 8 / 1e6:.2f} MB"
    )


# ----------------------------------------------------------------------------- 3. multivariate normal
def mvn():
    from adcore_scipy.stats import multivariate_normal

    d, count = 500, 10
    rng = np.random.default_rng(3)
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    cov, mean = A @ A.T + np.eye(d), rng.standard_normal(d)
    X = mean + rng.standard_normal((count, d))

    def loss(mean, cov):
        return np.sum(multivariate_normal.logpdf(X, mean, cov))

    adcore_grad = adcore.grad(loss, argnums=(0, 1))

    def symmetrized(grads):
        g_mean, g_cov = (np.asarray(g) for g in grads)
        return g_mean, (g_cov + g_cov.T) / 2

    reference = symmetrized(adcore_grad(mean, cov))
    contenders = {"adcore": lambda: adcore_grad(mean, cov)}
    if torch is not None:
        tX = torch.from_numpy(X)

        def torch_grad():
            m = torch.from_numpy(mean).requires_grad_(True)
            c = torch.from_numpy(cov).requires_grad_(True)
            out = torch.distributions.MultivariateNormal(m, covariance_matrix=c).log_prob(tX).sum()
            return torch.autograd.grad(out, (m, c))

        got = guarded("torch", lambda: symmetrized([g.numpy() for g in torch_grad()]))
        contenders["torch"] = torch_grad if checked("torch to adcore's", got, reference) != ERROR else ERROR
    if autograd is not None:
        ag = autograd.grad(lambda m, c: agnp.sum(ag_mvn.logpdf(X, m, c)), (0, 1))
        got = guarded("autograd", lambda: symmetrized(ag(mean, cov)))
        contenders["autograd"] = (
            (lambda: ag(mean, cov)) if checked("autograd to adcore's", got, reference) != ERROR else ERROR
        )
    report(
        "3. multivariate_normal.logpdf, d = 500, 10 points: gradient w.r.t. mean and cov",
        race(contenders, number=1, **RUNS),
    )


if __name__ == "__main__":
    warm_heap()
    print(
        f"bench_scipy: torch {torch.__version__ if torch else MISSING}, "
        f"autograd {'installed' if autograd else MISSING}; targets <= {TORCH_TARGET}x torch, "
        f"<= {AUTOGRAD_TARGET}x autograd"
    )
    for section in (spectral, odeint_bench, mvn):
        guarded(section.__name__, section)
