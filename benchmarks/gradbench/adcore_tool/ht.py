"""GradBench's ht eval: hand tracking's residuals (data points minus the skinned hand) and their Jacobian.

The hand is a linear-blend-skinned mesh: 26 pose parameters set each bone's rotation, the bones' transforms
are chained from the root, every vertex moves with the weighted blend of its bones' transforms, and a global
rotation and translation place the hand. In the "complicated" variant each data point is matched to a point
(u, v) inside a mesh triangle, and the Jacobian has the 2 columns of the point's own (u, v) first (the blocks
of a block-diagonal matrix, one 3 x 2 block per point) and then the 26 pose columns.

The (u, v) columns come out as the derivative along one shift added to every point's (u, v): point i's
residual moves only with its own (u, v), so its derivative along the shared shift is its block. Forward mode
(and numeric, by differences) takes the 26 + 2 directions in one Jacobian call; reverse sweeps once per
residual (3 per point: a tall Jacobian is reverse mode's bad case).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "skinning moves all 10000 mesh vertices by 22 bone transforms of the 26 pose parameters: its einsum "
        "is 30000 sympy sums of up to 88 products, still tracing after 150 s at the smallest size (as a "
        "blend then a sum, it passed the backend's 100000-node guard: ExpressionTooLargeError)"
    ),
}


@dataclass
class Hand:
    """The hand model, the data points with their correspondences, and the point being differentiated at."""

    parents: np.ndarray  # (bones,): each bone's parent, -1 for the root; parents come before children
    base_relatives: np.ndarray  # (bones, 4, 4): each bone's rest transform relative to its parent
    inverse_base_absolutes: np.ndarray  # (bones, 4, 4)
    base_positions: np.ndarray  # (vertices, 4): homogeneous rest positions
    weights: np.ndarray  # (vertices, bones): skinning weights
    triangles: np.ndarray  # (triangles, 3)
    is_mirrored: bool
    correspondences: np.ndarray  # (points,): the vertex (simple) or triangle (complicated) each point matches
    points: np.ndarray  # (points, 3)
    theta: np.ndarray  # (26,)
    us: np.ndarray  # (points, 2), or (0,) in the simple variant
    pose_index: np.ndarray  # (bones + 3, 3): where each pose parameter comes from in [theta, 0, 1]
    backend: str


def pose_index(n_theta: int, n_bones: int) -> np.ndarray:
    """Indices into [theta, 0, 1] of the pose parameters, one row each for the global rotation, the scale
    (all 1), the translation, then one row of Euler angles per bone: each finger's three bones take a
    flexion angle from theta, the first of them a spread angle as well (ADBench's to_pose_params)."""
    zero, one = n_theta, n_theta + 1
    index = np.full((n_bones + 3, 3), zero)
    index[0], index[1], index[2] = [0, 1, 2], one, [3, 4, 5]
    i_theta = 6
    for finger in range(5):
        for joint in range(3):
            row = 5 + 4 * finger + joint
            index[row, 0] = i_theta
            i_theta += 1
            if joint == 0:
                index[row, 1] = i_theta
                i_theta += 1
    return index


def prepare(input: dict[str, Any], backend: str) -> Hand:
    model, data = input["data"]["model"], input["data"]
    theta = np.asarray(input["theta"], dtype=float)
    parents = np.asarray(model["parents"], dtype=int)
    return Hand(
        parents=parents,
        base_relatives=np.asarray(model["base_relatives"], dtype=float),
        inverse_base_absolutes=np.asarray(model["inverse_base_absolutes"], dtype=float),
        base_positions=np.asarray(model["base_positions"], dtype=float),
        weights=np.asarray(model["weights"], dtype=float),
        triangles=np.asarray(model["triangles"], dtype=int),
        is_mirrored=bool(model["is_mirrored"]),
        correspondences=np.asarray(data["correspondences"], dtype=int),
        points=np.asarray(data["points"], dtype=float),
        theta=theta,
        us=np.asarray(input["us"], dtype=float),
        pose_index=pose_index(len(theta), len(parents)),
        backend=backend,
    )


def rotations_xyz(angles):
    """(n, 3, 3): Rz @ Ry @ Rx for each row of angles, stored in the order (x, z, y)."""
    cx, sx = np.cos(angles[:, 0]), np.sin(angles[:, 0])
    cy, sy = np.cos(angles[:, 2]), np.sin(angles[:, 2])
    cz, sz = np.cos(angles[:, 1]), np.sin(angles[:, 1])
    zero, one = np.zeros(len(angles)), np.ones(len(angles))

    def matrices(*entries):
        return np.reshape(np.stack(entries, axis=1), (-1, 3, 3))

    Rx = matrices(one, zero, zero, zero, cx, -sx, zero, sx, cx)
    Ry = matrices(cy, zero, sy, zero, one, zero, -sy, zero, cy)
    Rz = matrices(cz, -sz, zero, sz, cz, zero, zero, zero, one)
    return Rz @ Ry @ Rx


def angle_axis_rotation(angle_axis):
    """(3, 3): the rotation by |angle_axis| about its direction; the identity below an angle of 1e-4."""
    norm = np.sqrt(np.sum(angle_axis * angle_axis))
    turning = norm >= 1e-4
    angle = np.where(turning, norm, 1.0)  # no 0/0 in the branch np.where discards
    x, y, z = angle_axis / angle
    s, c = np.sin(angle), np.cos(angle)
    R = np.reshape(
        np.stack(
            [
                x * x + (1 - x * x) * c,
                x * y * (1 - c) - z * s,
                x * z * (1 - c) + y * s,
                x * y * (1 - c) + z * s,
                y * y + (1 - y * y) * c,
                y * z * (1 - c) - x * s,
                x * z * (1 - c) - y * s,
                z * y * (1 - c) + x * s,
                z * z + (1 - z * z) * c,
            ]
        ),
        (3, 3),
    )
    return np.where(turning, R, np.eye(3))


def skinned_vertices(hand: Hand, theta):
    """(vertices, 3): the posed hand's mesh."""
    pose = np.concatenate([theta, np.array([0.0, 1.0])])[hand.pose_index]
    rotations = rotations_xyz(pose[3:])
    relatives = np.concatenate(
        [hand.base_relatives[:, :, :3] @ rotations, hand.base_relatives[:, :, 3:]], axis=2
    )  # base_relative @ [[R, 0], [0, 1]]
    absolutes = []
    for bone, parent in enumerate(hand.parents):
        absolutes.append(relatives[bone] if parent == -1 else absolutes[parent] @ relatives[bone])
    transforms = np.stack(absolutes) @ hand.inverse_base_absolutes
    # the global rotation, column j scaled by the j-th scale (all 1)
    R = angle_axis_rotation(pose[0]) * pose[1]
    if hand.is_mirrored:
        R = R * np.array([-1.0, 1.0, 1.0])  # x mirrored before the rotation: R @ diag(-1, 1, 1)
    placed = R @ transforms[:, :3, :]  # each bone's transform, then the global rotation: composed once
    # each vertex's rest position through the weighted blend of its bones' placed transforms
    return np.einsum("vb,bij,vj->vi", hand.weights, placed, hand.base_positions) + pose[2]


def residuals_simple(hand: Hand, theta):
    """(points, 3): each data point minus the vertex it corresponds to."""
    return hand.points - skinned_vertices(hand, theta)[hand.correspondences]


def residuals_complicated(hand: Hand, theta, us):
    """(points, 3): each data point minus its point (u, v) on its triangle."""
    corners = skinned_vertices(hand, theta)[hand.triangles[hand.correspondences]]  # (points, 3 corners, 3)
    barycentric = np.concatenate([us, 1.0 - np.sum(us, axis=1, keepdims=True)], axis=1)  # (u, v, 1 - u - v)
    return hand.points - np.einsum("pk,pkj->pj", barycentric, corners)


def objective(hand: Hand) -> np.ndarray:
    if len(hand.us):
        return np.reshape(residuals_complicated(hand, hand.theta, hand.us), -1)
    return np.reshape(residuals_simple(hand, hand.theta), -1)


def jacobian(hand: Hand) -> np.ndarray:
    """(3 points, 2 + 26) complicated, (3 points, 26) simple: rows are residuals, point by point."""
    n_rows = 3 * len(hand.points)
    if not len(hand.us):
        J_theta = adcore.jacobian(lambda theta: residuals_simple(hand, theta), **options(hand.backend))(
            hand.theta
        )
        return np.reshape(J_theta, (n_rows, -1))

    def shifted(theta, shift):
        return residuals_complicated(hand, theta, hand.us + shift)

    J_theta, J_us = adcore.jacobian(shifted, argnums=(0, 1), **options(hand.backend))(hand.theta, np.zeros(2))
    return np.concatenate([np.reshape(J_us, (n_rows, 2)), np.reshape(J_theta, (n_rows, -1))], axis=1)
