"""GradBench's ba eval: bundle adjustment's residuals and their sparse Jacobian (ADBench's BASparseMat).

Observation i's two reprojection residuals depend on its camera (11 parameters), its point (3) and its
weight (1); its weight residual on its weight alone. The residuals are computed for all observations at
once (vectorized over the observation axis), so the Jacobian's nonzero blocks come out of a few passes:

- reverse: one trace of the residuals, then two sweeps, one per residual component (cotangent [1, 0] and
  [0, 1] for every observation); a sweep gives every observation's 15 partials of that component;
- forward and numeric: the Jacobian with respect to one shift of the 15 parameters shared by all
  observations (f(cams + shift[:11], ...)): observation i's residual moves only with its own parameters, so
  its derivative along the shared shift is its block. Forward mode pushes the 15 directions in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "the residuals are vectorized over p >= 31843 observations, so sympy holds 2p expressions; "
        "10 observations take ~5 s and 1000 pass the backend's 100000-node guard (ExpressionTooLargeError)"
    ),
}

N_CAM = 11  # rotation (3, angle-axis), centre (3), focal length, principal point (2), radial distortion (2)
N_BLOCK = N_CAM + 3 + 1  # one residual row's nonzeros: camera, point, weight
# the tools whose backend pulls back (source's default mode too): each observation's rows are its own,
# so one pullback per residual component gives every block (a Jacobian would pull back 2p rows)
PULLBACK_TOOLS = ("reverse", "source", "source-compiled")


@dataclass
class BA:
    """The replicated problem: n cameras, m points, p observations, and the backend to differentiate with."""

    n: int
    m: int
    cams: np.ndarray  # (n, 11)
    points: np.ndarray  # (m, 3)
    weights: np.ndarray  # (p,)
    feats: np.ndarray  # (p, 2)
    obs: np.ndarray  # (p, 2): camera and point index of each observation
    backend: str


def prepare(input: dict[str, Any], backend: str) -> BA:
    n, m, p = input["n"], input["m"], input["p"]
    observation = np.arange(p)
    return BA(
        n=n,
        m=m,
        cams=np.tile(np.asarray(input["cam"], dtype=float), (n, 1)),
        points=np.tile(np.asarray(input["x"], dtype=float), (m, 1)),
        weights=np.full(p, float(input["w"])),
        feats=np.tile(np.asarray(input["feat"], dtype=float), (p, 1)),
        obs=np.stack([observation % n, observation % m], axis=1),
        backend=backend,
    )


def rodrigues_rotate(rot, X):
    """Each row of X rotated by its row of rot (angle-axis); the first-order formula where the angle is 0."""
    sqtheta = np.sum(rot * rot, axis=1, keepdims=True)
    turning = sqtheta != 0
    theta = np.sqrt(np.where(turning, sqtheta, 1.0))  # no 0/0 in the branch np.where discards
    axis = rot / theta
    cos, sin = np.cos(theta), np.sin(theta)
    rotated = (
        X * cos + np.cross(axis, X) * sin + axis * (np.sum(axis * X, axis=1, keepdims=True) * (1.0 - cos))
    )
    return np.where(turning, rotated, X + np.cross(rot, X))


def project(cams, X):
    """Each observation's point seen by its camera: rotate, divide by depth, distort, scale, shift."""
    Xcam = rodrigues_rotate(cams[:, 0:3], X - cams[:, 3:6])
    proj = Xcam[:, 0:2] / Xcam[:, 2:3]
    rsq = np.sum(proj * proj, axis=1, keepdims=True)
    distortion = 1.0 + cams[:, 9:10] * rsq + cams[:, 10:11] * rsq * rsq
    return proj * distortion * cams[:, 6:7] + cams[:, 7:9]


def reprojection_error(cams, X, w, feats):
    """(p, 2): each observation's weighted distance from its projected point to its feature."""
    return w[:, None] * (project(cams, X) - feats)


def weight_error(w):
    return 1.0 - w * w


def objective(ba: BA) -> dict[str, Any]:
    reproj = reprojection_error(ba.cams[ba.obs[:, 0]], ba.points[ba.obs[:, 1]], ba.weights, ba.feats)
    w_err = weight_error(ba.weights)
    # the eval compares one observation's values and the counts (the data are one observation replicated)
    return {
        "reproj_error": {"elements": reproj[0], "repeated": len(reproj)},
        "w_err": {"element": w_err[0], "repeated": len(w_err)},
    }


def reprojection_blocks(ba: BA, cams, X) -> np.ndarray:
    """(p, 2, 15): each observation's residuals' partials by its camera, point and weight."""
    if ba.backend in PULLBACK_TOOLS:
        _, pullback = adcore.vjp(reprojection_error, cams, X, ba.weights, ba.feats, **options(ba.backend))
        rows = []
        for component in np.eye(2):
            d_cams, d_X, d_w, _ = pullback(np.broadcast_to(component, (len(X), 2)))
            rows.append(np.concatenate([d_cams, d_X, d_w[:, None]], axis=1))
        return np.stack(rows, axis=1)

    def shifted(shift):
        return reprojection_error(
            cams + shift[:N_CAM], X + shift[N_CAM : N_CAM + 3], ba.weights + shift[-1], ba.feats
        )

    return adcore.jacobian(shifted, **options(ba.backend))(np.zeros(N_BLOCK))


def weight_partials(ba: BA) -> np.ndarray:
    """(p,): each weight residual's partial by its weight."""
    if ba.backend in PULLBACK_TOOLS:
        _, pullback = adcore.vjp(weight_error, ba.weights, **options(ba.backend))
        return pullback(np.ones_like(ba.weights))[0]
    return adcore.jacobian(lambda shift: weight_error(ba.weights + shift), **options(ba.backend))(0.0)


def jacobian(ba: BA) -> dict[str, Any]:
    """The (3p) x (11n + 3m + p) Jacobian in compressed rows, as BASparseMat builds it; sent as the eval asks:
    the first 30 and the last entry of rows, cols and vals."""
    p = len(ba.weights)
    cam_index, point_index = ba.obs[:, 0], ba.obs[:, 1]
    blocks = reprojection_blocks(ba, ba.cams[cam_index], ba.points[point_index])
    w_partials = weight_partials(ba)

    weight_column = N_CAM * ba.n + 3 * ba.m
    block_columns = np.concatenate(
        [
            N_CAM * cam_index[:, None] + np.arange(N_CAM),
            N_CAM * ba.n + 3 * point_index[:, None] + np.arange(3),
            weight_column + np.arange(p)[:, None],
        ],
        axis=1,
    )  # (p, 15): the same columns for both residual rows of an observation
    cols = np.concatenate([np.repeat(block_columns, 2, axis=0).ravel(), weight_column + np.arange(p)])
    vals = np.concatenate([np.reshape(blocks, -1), np.reshape(w_partials, -1)])
    row_lengths = np.concatenate([np.full(2 * p, N_BLOCK), np.ones(p, dtype=int)])
    rows = np.concatenate([[0], np.cumsum(row_lengths)])

    def sent(entries: np.ndarray) -> np.ndarray:
        return np.concatenate([entries[:30], entries[-1:]])

    return {"rows": sent(rows), "cols": sent(cols), "vals": sent(vals)}
