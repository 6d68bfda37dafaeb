"""SciPy's solvers driven by adcore's prepared sparse Jacobians: least_squares on a small bundle adjustment
and solve_ivp's BDF on the 2-D Brusselator at N = 32 (the problems of benchmarks/sparse_problems.py),
each against the same solver with SciPy's own grouped finite differences on the analytic pattern."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import adcore

pytest.importorskip("adcore_sparsity")
scipy_optimize = pytest.importorskip("scipy.optimize")
scipy_integrate = pytest.importorskip("scipy.integrate")

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from sparse_problems import Brusselator, synthetic_ba  # noqa: E402  (needs the path above)


class Timed:
    """A Jacobian function that counts its calls and the time they take."""

    def __init__(self, jacobian) -> None:
        self.jacobian, self.calls, self.seconds = jacobian, 0, 0.0

    def __call__(self, *args):
        start = time.perf_counter()
        result = self.jacobian(*args)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return result


def test_least_squares_reduces_bundle_adjustments_cost_with_the_prepared_sparse_jacobian() -> None:
    problem = synthetic_ba(n=3, m=20, p=60)
    prepared = adcore.prepare_jacobian(problem.f, problem.x0, backend="forward", sparse=True)
    assert prepared.pattern.shape == problem.pattern().shape
    assert (problem.pattern() > prepared.pattern).nnz == 0  # the detected pattern holds every non-zero
    jacobian = Timed(prepared)
    solver = dict(method="trf", x_scale="jac", tr_solver="lsmr", max_nfev=10)

    fit = scipy_optimize.least_squares(problem.f, problem.x0, jac=jacobian, **solver)
    grouped = scipy_optimize.least_squares(problem.f, problem.x0, jac_sparsity=problem.pattern(), **solver)

    initial = 0.5 * np.sum(problem.f(problem.x0) ** 2)
    assert fit.status >= 0 and jacobian.calls == fit.njev > 0
    assert fit.cost < 0.05 * initial  # from about 300 to under 5 in ten evaluations
    assert fit.cost <= 1.01 * grouped.cost  # as well as differences (4.003 against 4.000 here)
    # the prepared Jacobian at the solution (a point it was not prepared at) is the dense one
    dense = adcore.jacobian(problem.f, backend="reverse")(fit.x)
    assert np.allclose(prepared(fit.x).toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())


def test_solve_ivp_bdf_on_the_brusselator_with_adcores_sparse_jacobian_matches_scipys_differences() -> None:
    problem = Brusselator(32)
    # t is a float argument not differentiated: the pattern holds for every t
    prepared = adcore.prepare_jacobian(
        problem.rhs, 0.0, problem.y0, argnums=1, backend="forward", sparse=True
    )
    assert prepared.pattern.shape == (2048, 2048) and (prepared.pattern != problem.pattern()).nnz == 0
    jacobian = Timed(prepared)
    times = np.linspace(0.0, 0.1, 6)
    tolerances = dict(rtol=1e-6, atol=1e-8)

    ours = scipy_integrate.solve_ivp(
        problem.rhs, (0.0, 0.1), problem.y0, method="BDF", jac=jacobian, t_eval=times, **tolerances
    )
    theirs = scipy_integrate.solve_ivp(
        problem.rhs,
        (0.0, 0.1),
        problem.y0,
        method="BDF",
        jac_sparsity=problem.pattern(),
        t_eval=times,
        **tolerances,
    )

    assert ours.success and theirs.success
    assert jacobian.calls == ours.njev <= theirs.njev
    # the same solution to the solvers' tolerance (each is within about rtol |y| + atol of the truth)
    assert np.all(
        np.abs(ours.y - theirs.y) <= 10 * (tolerances["rtol"] * np.abs(theirs.y) + tolerances["atol"])
    )
    # each evaluation is exact: the Jacobian at the last state against the dense forward one
    dense = adcore.jacobian(problem.f, backend="forward")(ours.y[:, -1])
    assert np.array_equal(prepared(0.1, ours.y[:, -1]).toarray(), dense)
