"""The sparse benchmark's problems (benchmarks/sparse_problems.py): the Brusselator against a loop written
as DifferentialEquations.jl's tutorial writes it, bundle adjustment against GradBench's manual tool on ba1,
and each problem's analytic pattern against the non-zeros of a dense Jacobian."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import adcore

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import sparse_problems as problems  # noqa: E402  (needs the path above)
from sparse_problems import Brusselator, BundleAdjustment, synthetic_ba  # noqa: E402

# GradBench's manual tool (C++) on ba1: `tools/manual/bin/ba ba1.json objective` and `... jacobian`
BA1_REPROJ = [0.10133583791446145, -0.06896776592448106]
BA1_W_ERR = 0.826092651516
BA1_JACOBIAN_COLS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 539, 540, 541, 23867]  # row 0's 15 BASparseMat entries
BA1_JACOBIAN_ROW0 = [
    -461.4463210015994, 178.86792801444557, -19.42391647220627, -3.0615983420410324, 6.392457556226442,
    -3.340282281299017, 0.2647602492070315, 0.417022, 0.0, 243.62824566082992, 676.4867782658685,
    3.0615983420410324, -6.392457556226442, 3.340282281299017, 0.24299878163373023,
]  # fmt: skip
BA1_LAST = -0.834044  # d (1 - w^2) / dw = -2w, the last entry


def brusselator_loop(N: int, t: float, state: np.ndarray) -> np.ndarray:
    """brusselator_2d_loop of DifferentialEquations.jl's tutorial, element by element (0-based indices)."""
    grid = np.linspace(0, 1, N)
    alpha = 10.0 / (grid[1] - grid[0]) ** 2
    u, v = state.reshape(2, N, N)
    du, dv = np.empty((N, N)), np.empty((N, N))
    for i in range(N):
        for j in range(N):
            x, y = grid[i], grid[j]
            forcing = 5.0 if (x - 0.3) ** 2 + (y - 0.6) ** 2 <= 0.1**2 and t >= 1.1 else 0.0
            ip1, im1, jp1, jm1 = (i + 1) % N, (i - 1) % N, (j + 1) % N, (j - 1) % N
            lap_u = u[im1, j] + u[ip1, j] + u[i, jp1] + u[i, jm1] - 4 * u[i, j]
            lap_v = v[im1, j] + v[ip1, j] + v[i, jp1] + v[i, jm1] - 4 * v[i, j]
            du[i, j] = alpha * lap_u + 1.0 + u[i, j] ** 2 * v[i, j] - 4.4 * u[i, j] + forcing
            dv[i, j] = alpha * lap_v + 3.4 * u[i, j] - u[i, j] ** 2 * v[i, j]
    return np.concatenate([du.ravel(), dv.ravel()])


@pytest.mark.parametrize("N", [3, 7, 11])
@pytest.mark.parametrize("t", [0.0, 2.0])
def test_the_brusselator_is_the_tutorials_loop(N: int, t: float) -> None:
    problem = Brusselator(N)
    state = np.random.default_rng(N).uniform(0, 3, problem.size)
    assert np.allclose(problem.rhs(t, state), brusselator_loop(N, t, state), rtol=1e-13, atol=1e-9)


def test_the_brusselator_forcing_is_switched_on_at_1_1_in_its_disc() -> None:
    problem = Brusselator(11)  # grid step 0.1: (0.3, 0.6) and, by rounding, some of its neighbours
    state = problem.y0
    difference = problem.rhs(1.2, state) - problem.rhs(1.0, state)
    forced = np.flatnonzero(difference)
    i, j = np.divmod(forced, 11)
    assert 3 * 11 + 6 in forced and np.all(difference[forced] == 5.0)
    assert np.all((i / 10 - 0.3) ** 2 + (j / 10 - 0.6) ** 2 <= 0.01 + 1e-12)
    assert problem.size == 242 and problem.alpha == pytest.approx(1000.0)


def test_the_brusselator_starts_from_the_tutorials_state() -> None:
    problem = Brusselator(5)
    u0, v0 = problem.y0.reshape(2, 5, 5)
    assert u0[2, 2] == pytest.approx(22 * 0.25**1.5) and v0[2, 2] == pytest.approx(27 * 0.25**1.5)
    assert np.all(u0[:, 0] == 0) and np.all(v0[0, :] == 0)  # u varies with y (second index), v with x


def test_bundle_adjustment_on_ba1_gives_gradbench_manuals_residuals() -> None:
    problem = BundleAdjustment.gradbench(1)
    assert (problem.n, problem.m, problem.p, problem.size) == (49, 7776, 31843, 11 * 49 + 3 * 7776 + 31843)
    residuals = problem.f(problem.x0)
    assert residuals.shape == (3 * 31843,)
    reproj, w_err = residuals[: 2 * problem.p].reshape(-1, 2), residuals[2 * problem.p :]
    assert np.allclose(reproj, BA1_REPROJ, rtol=1e-12) and np.allclose(w_err, BA1_W_ERR, rtol=1e-12)


def test_bundle_adjustment_pattern_is_ba_sparse_mats_structure_less_the_other_principal_point() -> None:
    problem = BundleAdjustment.gradbench(1)
    pattern = problem.pattern()
    assert pattern.shape == (3 * 31843, problem.size) and pattern.dtype == bool
    assert pattern[[0], :].indices.tolist() == [c for c in BA1_JACOBIAN_COLS if c != 8]
    assert pattern[[1], :].indices.tolist() == [c for c in BA1_JACOBIAN_COLS if c != 7]
    assert pattern[[3 * 31843 - 1], :].indices.tolist() == [problem.size - 1]
    assert pattern.nnz == 2 * 14 * 31843 + 31843


def test_bundle_adjustment_first_rows_jacobian_is_gradbench_manuals() -> None:
    """Row 0 of ba1's Jacobian by forward mode, on the variables it depends on (the data are one
    observation replicated, so observation 0's camera, point and weight are all it needs)."""
    problem = BundleAdjustment.gradbench(1)

    def first_rows(local):  # observation 0's residuals as a function of its 15 variables
        full = np.concatenate(
            [local[:11], problem.x0[11:539], local[11:14], problem.x0[542:23867], local[14:]]
        )
        return problem.f(full)[[0, 1, 2 * problem.p]]

    local = problem.x0[BA1_JACOBIAN_COLS]
    jacobian = adcore.jacobian(first_rows, backend="forward")(local)
    assert np.allclose(jacobian[0], BA1_JACOBIAN_ROW0, rtol=1e-10, atol=1e-12)
    assert jacobian[2, -1] == pytest.approx(BA1_LAST)


@pytest.mark.parametrize(
    "problem", [Brusselator(4), Brusselator(6), synthetic_ba(3, 8, 20)], ids=["bruss4", "bruss6", "ba"]
)
def test_each_analytic_pattern_is_the_dense_jacobians_non_zeros_at_a_generic_point(problem) -> None:
    x = (problem.x0 if isinstance(problem, BundleAdjustment) else 1.0) + np.random.default_rng(1).uniform(
        0.1, 0.5, problem.size
    )
    jacobian = adcore.jacobian(problem.f, backend="reverse")(x)
    assert np.array_equal(problem.pattern().toarray(), jacobian != 0)


def test_bundle_adjustments_reference_jacobian_is_the_dense_one_in_ba_sparse_mats_structure() -> None:
    problem = synthetic_ba(3, 8, 20)
    x = problem.x0 + np.random.default_rng(3).normal(0, 0.01, problem.size)
    reference = problem.reference_jacobian(x)
    assert reference.nnz == 20 * (2 * 15 + 1)  # BASparseMat stores 15 entries a reprojection row
    dense = adcore.jacobian(problem.f, backend="forward")(x)
    assert np.allclose(reference.toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())


def test_the_synthetic_problem_is_noisy_features_of_its_truth() -> None:
    problem = synthetic_ba(n=3, m=10, p=40, noise=0.5, seed=2)
    assert (problem.n, problem.m, problem.p) == (3, 10, 40)
    assert problem.obs[:, 0].tolist() == [i % 3 for i in range(40)]
    assert set(problem.obs[:, 1]) == set(range(10))
    start = np.sum(problem.f(problem.x0) ** 2)
    assert 1.0 < start < 1e6  # perturbed: clearly off, but not absurdly


def test_read_ba_reads_the_eval_input() -> None:
    (path,) = problems.BA_DATA.glob("ba1_*.txt")
    data = problems.read_ba(path)
    assert (data["n"], data["m"], data["p"], data["w"]) == (49, 7776, 31843, 0.417022)
    assert len(data["cam"]) == 11 and len(data["x"]) == 3 and len(data["feat"]) == 2
