"""The sparse-Jacobian benchmark's problems, each a function of one flat float vector: a 2-D Brusselator's
right-hand side and GradBench's bundle adjustment residuals.

Plain NumPy code, as an adcore user writes it; `benchmarks/bench_sparse.py`, `tests/test_sparse_scipy.py`
and `tests/benchmarks/test_sparse_problems.py` import it (with this directory on sys.path).

- `Brusselator(N)`: the 2-D Brusselator reaction-diffusion system of DifferentialEquations.jl's stiff-ODE
  tutorial (`brusselator_2d_loop`; Hairer & Wanner, Solving ODEs II, section IV.10): u and v on an N x N
  grid of the unit square with periodic boundaries, 2N^2 variables,

      u' = alpha (Laplacian u) + B + u^2 v - (A + 1) u + f(x, y, t)
      v' = alpha (Laplacian v) + A u - u^2 v

  with that tutorial's parameters A = 3.4, B = 1, alpha = 10 / dx^2 (dx = 1 / (N - 1), the grid
  linspace(0, 1, N)), the 5-point Laplacian with periodic wrap (np.roll), the forcing f = 5 in the disc
  of radius 0.1 about (0.3, 0.6) from t = 1.1 on, and its initial state u = 22 (y(1 - y))^1.5,
  v = 27 (x(1 - x))^1.5. The Jacobian has 6 non-zeros per row (a stencil of 5 and the other species).
- `BundleAdjustment`: the residuals of GradBench's ba eval (benchmarks/gradbench/adcore_tool/ba.py, the
  same reprojection and weight errors), as one function of the flat vector (cameras (n, 11), points
  (m, 3), weights (p,)) and rows (the 2p reprojection residuals observation by observation, then the
  p weight residuals): ADBench's BASparseMat layout. `BundleAdjustment.gradbench(k)` reads GradBench's
  baK data (one observation replicated p times, as the eval builds it), `synthetic_ba` makes a small
  problem with noise that a solver can reduce.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

GRADBENCH = Path(__file__).resolve().parent / "gradbench"
if str(GRADBENCH) not in sys.path:
    sys.path.insert(0, str(GRADBENCH))

from adcore_tool import ba as gradbench_ba  # noqa: E402  (needs the path above)

BA_DATA = GRADBENCH / "upstream" / "evals" / "ba" / "data"

# ---- the 2-D Brusselator --------------------------------------------------------------------------------

A, B, ALPHA = 3.4, 1.0, 10.0


def laplacian(u):
    """The periodic 5-point Laplacian of a 2-D grid, without the 1 / dx^2."""
    return (
        np.roll(u, 1, axis=0)
        + np.roll(u, -1, axis=0)
        + np.roll(u, 1, axis=1)
        + np.roll(u, -1, axis=1)
        - 4 * u
    )


class Brusselator:
    """The 2-D Brusselator on an N x N periodic grid: `rhs(t, state)` for solve_ivp, `f(state)` at t = 0."""

    def __init__(self, N: int) -> None:
        self.N = N
        grid = np.linspace(0.0, 1.0, N)
        self.alpha = ALPHA / (grid[1] - grid[0]) ** 2
        x, y = np.meshgrid(grid, grid, indexing="ij")  # state[0][i, j] is u at (grid[i], grid[j])
        self.spot = ((x - 0.3) ** 2 + (y - 0.6) ** 2 <= 0.1**2).astype(float)
        self.y0 = np.concatenate([np.ravel(22 * (y * (1 - y)) ** 1.5), np.ravel(27 * (x * (1 - x)) ** 1.5)])

    @property
    def size(self) -> int:
        return 2 * self.N**2

    def forcing(self, t: float):
        """5 in the disc from t = 1.1 on: np.where, not `if`, so t may be traced (a global pattern holds
        for every t, and an `if` on it raises adcore.ValueDependentError)."""
        return np.where(t >= 1.1, 5.0 * self.spot, 0.0)

    def rhs(self, t: float, state):
        """d state / dt: state is (u, v) flattened, 2N^2 values."""
        grid = np.reshape(state, (2, self.N, self.N))
        u, v = grid[0], grid[1]
        uuv = u * u * v
        du = self.alpha * laplacian(u) + B + uuv - (A + 1) * u + self.forcing(t)
        dv = self.alpha * laplacian(v) + A * u - uuv
        return np.concatenate([np.ravel(du), np.ravel(dv)])

    def f(self, state):
        """The right-hand side at t = 0: the function whose Jacobian the benchmark takes."""
        return self.rhs(0.0, state)

    def pattern(self):
        """The Jacobian's non-zeros, from the stencil: each row's 5 neighbours and the other species."""
        N = self.N
        species, i, j = (np.ravel(a) for a in np.indices((2, N, N)))
        row = np.ravel_multi_index((species, i, j), (2, N, N))
        neighbours = [
            (species, (i + di) % N, (j + dj) % N) for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))
        ]
        columns = [np.ravel_multi_index(c, (2, N, N)) for c in neighbours]
        columns.append(np.ravel_multi_index((1 - species, i, j), (2, N, N)))
        return _boolean(np.tile(row, len(columns)), np.concatenate(columns), (self.size, self.size))


# ---- bundle adjustment ----------------------------------------------------------------------------------

N_CAM = gradbench_ba.N_CAM  # 11 parameters per camera


class BundleAdjustment:
    """Bundle adjustment's residuals as a function of one flat vector (cameras, points, weights)."""

    def __init__(self, cams: np.ndarray, points: np.ndarray, weights: np.ndarray, feats: np.ndarray, obs):
        self.cams, self.points, self.weights = cams, points, weights
        self.feats, self.obs = feats, np.asarray(obs)
        self.n, self.m, self.p = len(cams), len(points), len(weights)
        self.x0 = np.concatenate([np.ravel(cams), np.ravel(points), weights])

    @classmethod
    def gradbench(cls, k: int) -> BundleAdjustment:
        """GradBench's baK (k = 1..20), replicated as the eval's tools replicate it."""
        (path,) = BA_DATA.glob(f"ba{k}_*.txt")
        data = gradbench_ba.prepare(read_ba(path), backend="none")
        return cls(data.cams, data.points, data.weights, data.feats, data.obs)

    @property
    def size(self) -> int:
        return self.x0.size

    def unpack(self, params):
        """(cams (n, 11), points (m, 3), weights (p,)) from the flat vector."""
        n_cams, n_points = N_CAM * self.n, 3 * self.m
        cams = np.reshape(params[:n_cams], (self.n, N_CAM))
        points = np.reshape(params[n_cams : n_cams + n_points], (self.m, 3))
        return cams, points, params[n_cams + n_points :]

    def f(self, params):
        """(3p,): each observation's two reprojection residuals, then each weight's residual."""
        cams, points, weights = self.unpack(params)
        reproj = gradbench_ba.reprojection_error(
            cams[self.obs[:, 0]], points[self.obs[:, 1]], weights, self.feats
        )
        return np.concatenate([np.ravel(reproj), gradbench_ba.weight_error(weights)])

    def reference_jacobian(self, params=None):
        """The Jacobian (csr_array) in BASparseMat's structure (15 entries in a reprojection row), its blocks
        computed as GradBench's adcore tool does: two reverse sweeps over all observations at once."""
        import scipy.sparse

        cams, points, weights = self.unpack(self.x0 if params is None else params)
        data = gradbench_ba.BA(self.n, self.m, cams, points, weights, self.feats, self.obs, backend="reverse")
        blocks = gradbench_ba.reprojection_blocks(data, cams[self.obs[:, 0]], points[self.obs[:, 1]])
        block_columns = np.concatenate(
            [
                N_CAM * self.obs[:, :1] + np.arange(N_CAM),
                N_CAM * self.n + 3 * self.obs[:, 1:2] + np.arange(3),
                N_CAM * self.n + 3 * self.m + np.arange(self.p)[:, None],
            ],
            axis=1,
        )  # (p, 15): the columns of both of an observation's rows
        weight_columns = N_CAM * self.n + 3 * self.m + np.arange(self.p)
        values = np.concatenate([np.ravel(blocks), gradbench_ba.weight_partials(data)])
        columns = np.concatenate([np.ravel(np.repeat(block_columns, 2, axis=0)), weight_columns])
        row_starts = np.concatenate(
            [np.arange(0, 2 * self.p * 15, 15), 2 * self.p * 15 + np.arange(self.p + 1)]
        )
        return scipy.sparse.csr_array((values, columns, row_starts), shape=(3 * self.p, self.size))

    def pattern(self):
        """The Jacobian's non-zeros: an observation's residuals depend on its camera (but the principal
        point's x on the first only, its y on the second), its point and its weight; a weight residual
        on its weight. (ADBench's BASparseMat stores all 15 camera, point and weight entries.)"""
        p, obs = self.p, self.obs
        weight_column = N_CAM * self.n + 3 * self.m + np.arange(p)
        rows, cols = [], []
        for component, skipped in ((0, 8), (1, 7)):
            camera = [c for c in range(N_CAM) if c != skipped]
            block = np.concatenate(
                [
                    N_CAM * obs[:, :1] + np.array(camera),
                    N_CAM * self.n + 3 * obs[:, 1:2] + np.arange(3),
                    weight_column[:, None],
                ],
                axis=1,
            )
            rows.append(np.repeat(2 * np.arange(p) + component, block.shape[1]))
            cols.append(np.ravel(block))
        rows.append(2 * p + np.arange(p))
        cols.append(weight_column)
        return _boolean(np.concatenate(rows), np.concatenate(cols), (3 * p, self.size))


def _boolean(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):
    """A boolean CSR pattern with an entry at each (row, col)."""
    import scipy.sparse

    entries = scipy.sparse.coo_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape).tocsr()
    entries.sum_duplicates()
    return entries


def read_ba(path: Path) -> dict:
    """A GradBench ba data file as the eval's input (n, m, p, one camera, point, weight and feature)."""
    lines = Path(path).read_text().splitlines()
    n, m, p = (int(v) for v in lines[0].split())
    return {
        "n": n,
        "m": m,
        "p": p,
        "cam": [float(v) for v in lines[1].split()],
        "x": [float(v) for v in lines[2].split()],
        "w": float(lines[3]),
        "feat": [float(v) for v in lines[4].split()],
    }


def synthetic_ba(
    n: int = 4, m: int = 30, p: int = 100, noise: float = 0.5, seed: int = 0
) -> BundleAdjustment:
    """A small random problem: cameras looking at a cloud of points, features projected from the true
    parameters plus `noise` pixels, and the starting point (`x0`) the true parameters perturbed."""
    rng = np.random.default_rng(seed)
    cams = np.zeros((n, N_CAM))
    cams[:, 0:3] = rng.normal(0.0, 0.05, (n, 3))  # small rotations
    centres = np.column_stack([rng.uniform(-1, 1, (n, 2)), np.full(n, -10.0)])  # behind the cloud
    cams[:, 3:6] = centres
    cams[:, 6] = rng.uniform(400, 600, n)  # focal lengths
    cams[:, 7:9] = rng.normal(0.0, 1.0, (n, 2))
    cams[:, 9:11] = rng.normal(0.0, 1e-3, (n, 2))
    points = rng.uniform(-1.0, 1.0, (m, 3))
    obs = np.column_stack([np.arange(p) % n, rng.permutation(np.arange(p) % m)])
    weights = np.ones(p)
    truth = BundleAdjustment(cams, points, weights, np.zeros((p, 2)), obs)
    feats = gradbench_ba.project(cams[obs[:, 0]], points[obs[:, 1]]) + rng.normal(0.0, noise, (p, 2))
    start = truth.x0 + np.concatenate(
        [rng.normal(0.0, 1e-3, N_CAM * n), rng.normal(0.0, 0.05, 3 * m), rng.normal(0.0, 0.05, p)]
    )
    problem = BundleAdjustment(*truth.unpack(start), feats, obs)
    return problem
