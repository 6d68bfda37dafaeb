"""Gradients through linear algebra: adcore's reverse mode against PyTorch eager and HIPS autograd.

Run by hand (not part of the tests):  python benchmarks/bench_linalg.py

Five workloads, each a scalar loss written once per tool in that tool's NumPy-like API
(adcore: plain NumPy called on traced values), float64, CPU:

1. gp500, gp2000: the negative log marginal likelihood of a Gaussian process with an RBF
   kernel on n = 500 / 2000 points in 2-D, by Cholesky and a triangular solve:
   0.5 |L^-1 y|^2 + sum(log diag L) + n/2 log(2 pi); gradient w.r.t. the three log
   hyperparameters (lengthscale, variance, noise).
2. slogdet500: log|det A| of a 500x500 matrix, gradient w.r.t. A (A^-T).
3. eigh300: a spectral loss of a symmetric 300x300 matrix S = (A + A^T)/2 with distinct
   eigenvalues, sum(w^2) + sum(V[0]^2 * w) (invariant to the eigenvectors' signs), gradient
   w.r.t. A: eigenvalues and eigenvectors both carry a derivative.
4. einsum: the bilinear form einsum('bi,ij,bj->', X, W, Y), X, Y 256x512, W 512x512,
   gradient w.r.t. X and W.

Every tool's gradient is first checked against adcore's (the max relative difference is
printed; one off by more than 1e-8 reports ERROR and is not timed). Then each figure is
the median of 15 runs taken in interleaved blocks (`timing.race`; 5 single runs for
gp2000), in ms; the ratios adcore/torch and adcore/autograd close each row, against
issue 17's targets: adcore reverse <= 1.2x torch and <= 0.5x autograd. torch and autograd
are optional: a missing one prints "not installed". All three use one BLAS thread (set
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before running to change it).
"""

from __future__ import annotations

import os
import statistics
from importlib import metadata

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
    import autograd.scipy.linalg as agsl
except ImportError:
    autograd = agnp = agsl = None

from timing import ERROR, MISSING, cell, guarded, race, ratio, row, verdict, warm_heap  # noqa: E402

RUNS = dict(repeat=5, passes=3, summary=statistics.median)  # 15 runs per contender
LONG_RUNS = dict(repeat=1, passes=5, summary=statistics.median)  # gp2000: autograd takes seconds a call
TOL = 1e-8  # max |difference| / max |adcore's gradient|
TORCH_TARGET, AUTOGRAD_TARGET = 1.2, 0.5
LOG_2PI = np.log(2 * np.pi)
WIDTH = 14


# ----------------------------------------------------------------------------- the losses
def gp_nlml(theta, X, y):
    """adcore: plain NumPy, with a triangular solve where adcore has one."""
    lengthscale, variance, noise = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = variance * np.exp(-0.5 * sq / lengthscale**2) + noise * np.eye(len(y))
    L = np.linalg.cholesky(K)
    a = _lower_solve(L, y)
    return 0.5 * np.dot(a, a) + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * LOG_2PI


def _lower_solve(L, y):
    """L^-1 y: adcore's triangular solve (scipy.linalg.solve_triangular's signature) where adcore
    has one, else np.linalg.solve."""
    solve_triangular = getattr(anp, "solve_triangular", None)
    if solve_triangular is not None:
        return solve_triangular(L, y, lower=True)
    return np.linalg.solve(L, y)


def torch_gp_nlml(theta, X, y):
    lengthscale, variance, noise = torch.exp(theta[0]), torch.exp(theta[1]), torch.exp(theta[2])
    sq = torch.sum((X[:, None, :] - X[None, :, :]) ** 2, dim=-1)
    K = variance * torch.exp(-0.5 * sq / lengthscale**2) + noise * torch.eye(len(y), dtype=X.dtype)
    L = torch.linalg.cholesky(K)
    a = torch.linalg.solve_triangular(L, y[:, None], upper=False)[:, 0]
    return 0.5 * torch.dot(a, a) + torch.sum(torch.log(torch.diagonal(L))) + 0.5 * len(y) * LOG_2PI


def autograd_gp_nlml(theta, X, y):
    lengthscale, variance, noise = agnp.exp(theta[0]), agnp.exp(theta[1]), agnp.exp(theta[2])
    sq = agnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = variance * agnp.exp(-0.5 * sq / lengthscale**2) + noise * agnp.eye(len(y))
    L = agnp.linalg.cholesky(K)
    a = agsl.solve_triangular(L, y, lower=True)
    return 0.5 * agnp.dot(a, a) + agnp.sum(agnp.log(agnp.diag(L))) + 0.5 * len(y) * LOG_2PI


def log_abs_det(A, linalg=np.linalg):
    return linalg.slogdet(A)[1]


def spectral_loss(A, lib=np):
    w, V = lib.linalg.eigh((A + A.T) / 2)
    return lib.sum(w**2) + lib.sum(V[0] ** 2 * w)


def bilinear(X, W, Y, lib=np):
    return lib.einsum("bi,ij,bj->", X, W, Y)


# ----------------------------------------------------------------------------- the problems
def gp_problem(n):
    rng = np.random.default_rng(n)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(n)
    return (np.log([1.0, 1.0, 0.1]), X, y), (0,), gp_nlml, torch_gp_nlml, autograd_gp_nlml


def slogdet_problem():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((500, 500)) + 20 * np.eye(500)
    return (
        (A,),
        (0,),
        log_abs_det,
        lambda A: log_abs_det(A, torch.linalg),
        lambda A: log_abs_det(A, agnp.linalg),
    )


def eigh_problem():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((300, 300)) / np.sqrt(300)
    return (A,), (0,), spectral_loss, lambda A: spectral_loss(A, torch), lambda A: spectral_loss(A, agnp)


def einsum_problem():
    rng = np.random.default_rng(3)
    X, W, Y = (
        rng.standard_normal((256, 512)),
        rng.standard_normal((512, 512)) / 20,
        rng.standard_normal((256, 512)),
    )
    return (
        (X, W, Y),
        (0, 1),
        bilinear,
        lambda X, W, Y: bilinear(X, W, Y, torch),
        lambda X, W, Y: bilinear(X, W, Y, agnp),
    )


WORKLOADS = {
    "gp500": lambda: gp_problem(500),
    "gp2000": lambda: gp_problem(2000),
    "slogdet500": slogdet_problem,
    "eigh300": eigh_problem,
    "einsum": einsum_problem,
}


def contenders(args, argnums, f, torch_f, autograd_f):
    """{name: thunk returning the gradients as a tuple of arrays, or None for a missing library}."""
    adcore_grad = adcore.grad(f, argnums=argnums)
    found = {"adcore": lambda: adcore_grad(*args), "torch": None, "autograd": None}
    if torch:
        tensors = [torch.from_numpy(a) for a in args]

        def torch_grad():
            leaves = [t.detach().requires_grad_(i in argnums) for i, t in enumerate(tensors)]
            return torch.autograd.grad(torch_f(*leaves), [leaves[i] for i in argnums])

        found["torch"] = torch_grad
    if autograd:
        autograd_grad = autograd.grad(autograd_f, argnum=argnums)
        found["autograd"] = lambda: autograd_grad(*args)
    return found


def checked(found):
    """{name: max relative difference from adcore's gradient}; a contender that raises or
    disagrees becomes ERROR in `found` (and is not timed)."""
    reference = guarded("adcore", found["adcore"])
    if reference is ERROR:
        found["adcore"] = ERROR
        return {name: ERROR if name == "adcore" else "-" for name in found}
    reference = [np.asarray(g) for g in reference]
    scale = max(float(np.max(np.abs(g))) for g in reference) or 1.0
    errors = {"adcore": 0.0}
    for name, thunk in found.items():
        if name == "adcore":
            continue

        def check(thunk=thunk, name=name):
            got = [np.asarray(g.detach() if hasattr(g, "detach") else g) for g in thunk()]
            err = max(float(np.max(np.abs(a - b))) for a, b in zip(got, reference)) / scale
            assert err <= TOL, f"{name} disagrees with adcore: max relative difference {err:.1e} > {TOL:.0e}"
            return err

        errors[name] = guarded(name, check, callable(thunk))
        if errors[name] is ERROR:
            found[name] = ERROR
    return errors


def version(name, module):
    return f"{name} {metadata.version(name)}" if module else f"{name} {MISSING}"


def main() -> None:
    warm_heap()
    print(
        f"adcore {adcore.__version__} reverse vs {version('torch', torch)} (CPU) and "
        f"{version('autograd', autograd)}, float64, {os.environ['OPENBLAS_NUM_THREADS']} BLAS thread(s); "
        "gradients in ms, median of 15 interleaved runs"
    )
    header = ("adcore", "torch", "autograd", "/torch", "target", "/autograd", "target", "max rel diff")
    row("workload", *(cell(h, WIDTH) for h in header))
    for name, build in WORKLOADS.items():
        found = contenders(*build())
        errors = checked(found)
        number, runs = (1, LONG_RUNS) if name == "gp2000" else (3, RUNS)
        times = {n: t * 1e3 if isinstance(t, float) else t for n, t in race(found, number, **runs).items()}
        vs_torch = ratio(times["adcore"], times["torch"])
        vs_autograd = ratio(times["adcore"], times["autograd"])
        worst = max((e for e in errors.values() if isinstance(e, float)), default="-")
        row(
            name,
            *(cell(times[n], WIDTH) for n in ("adcore", "torch", "autograd")),
            cell(vs_torch, WIDTH),
            cell(verdict(vs_torch, TORCH_TARGET), WIDTH),
            cell(vs_autograd, WIDTH),
            cell(verdict(vs_autograd, AUTOGRAD_TARGET), WIDTH),
            cell(worst, WIDTH, "{:.1e}"),
        )
    print(f"targets: adcore reverse <= {TORCH_TARGET}x torch and <= {AUTOGRAD_TARGET}x autograd (issue 17)")


if __name__ == "__main__":
    main()
