"""ht (hand tracking) for the jax-jacfwd tool. Not GradBench's: written for adcore's comparison.

A vectorised JAX port of GradBench's pytorch ht_objective and its C++ reference (ht.hpp): the
skinned hand model posed by theta, and the error of each data point against its model point.
The Jacobian is forward mode, `jax.jacfwd`, jit-compiled: the theta columns by `jacfwd` of the
whole objective; in the "complicated" variant (a barycentric `u` per point) each point's error
depends on its own `u` only, so the two `u` columns are `vmap` of `jacfwd` of one point's error.
Output as the eval's README and the C++ tool give it: rows are the 3 * points errors, columns
[u0, u1, theta...] (complicated) or [theta...] (simple).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from gradbench import wrap

jax.config.update("jax_enable_x64", True)

# theta's fixed order (ht.hpp's to_pose_params): global rotation, global translation, then per
# finger (thumb, index, middle, ring, pinky) 4 angles for its 3 bones starting at bone 2 + 4 f:
# two (x and z) on its first bone, one on each of the others.
FINGER_ANGLES = [(0, 0), (0, 1), (1, 0), (2, 0)]  # (bone offset in the finger, pose coordinate)


def pose_indices(bone_count):
    """Rows and columns of pose_params (bone_count + 3 rows of 3) that theta[6:] fills, in order."""
    rows, cols = [], []
    for finger in range(5):
        for bone, coordinate in FINGER_ANGLES:
            rows.append(3 + 2 + 4 * finger + bone)
            cols.append(coordinate)
    return np.array(rows), np.array(cols)


def to_pose_params(theta, bone_count):
    pose_params = jnp.zeros((bone_count + 3, 3), dtype=theta.dtype)
    pose_params = pose_params.at[0].set(theta[0:3]).at[1].set(1.0).at[2].set(theta[3:6])
    rows, cols = pose_indices(bone_count)
    return pose_params.at[rows, cols].set(theta[6:])


def euler_angles_to_rotation_matrices(xzy):
    """One rotation Rz @ Ry @ Rx per row of angles (x, z, y), as ht.hpp builds them."""
    tx, tz, ty = xzy[:, 0], xzy[:, 1], xzy[:, 2]
    zero, one = jnp.zeros_like(tx), jnp.ones_like(tx)

    def matrices(rows):
        return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)

    Rx = matrices([[one, zero, zero], [zero, jnp.cos(tx), -jnp.sin(tx)], [zero, jnp.sin(tx), jnp.cos(tx)]])
    Ry = matrices([[jnp.cos(ty), zero, jnp.sin(ty)], [zero, one, zero], [-jnp.sin(ty), zero, jnp.cos(ty)]])
    Rz = matrices([[jnp.cos(tz), -jnp.sin(tz), zero], [jnp.sin(tz), jnp.cos(tz), zero], [zero, zero, one]])
    return Rz @ Ry @ Rx


def angle_axis_to_rotation_matrix(angle_axis):
    n = jnp.sqrt(jnp.sum(angle_axis**2))
    safe_n = jnp.where(n < 0.0001, 1.0, n)
    x, y, z = angle_axis / safe_n
    s, c = jnp.sin(n), jnp.cos(n)
    R = jnp.array(
        [
            [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
            [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c],
        ]
    )
    return jnp.where(n < 0.0001, jnp.eye(3), R)


def skinned_vertex_positions(pose_params, model):
    bone_count = model["base_relatives"].shape[0]
    rotations = euler_angles_to_rotation_matrices(pose_params[3:])
    posed = jnp.zeros((bone_count, 4, 4)).at[:, :3, :3].set(rotations).at[:, 3, 3].set(1.0)
    relatives = model["base_relatives"] @ posed
    absolutes = []
    for i, parent in enumerate(model["parents"]):
        absolutes.append(relatives[i] if parent == -1 else absolutes[parent] @ relatives[i])
    transforms = jnp.stack(absolutes) @ model["inverse_base_absolutes"]
    blended = jnp.einsum("vb,bij->vij", model["weights"], transforms[:, :3, :])
    positions = jnp.einsum("vij,vj->vi", blended, model["base_positions"])
    if model["is_mirrored"]:
        positions = positions.at[:, 0].multiply(-1.0)
    R = angle_axis_to_rotation_matrix(pose_params[0]) * pose_params[1]
    return positions @ R.T + pose_params[2]


def point_error(u, point, corners):
    """One data point's error against the point u makes of its triangle's three corners."""
    return point - (u[0] * corners[0] + u[1] * corners[1] + (1.0 - u[0] - u[1]) * corners[2])


def vertices(theta, model):
    return skinned_vertex_positions(to_pose_params(theta, model["base_relatives"].shape[0]), model)


def objective_simple(theta, model, data):
    return (data["points"] - vertices(theta, model)[data["correspondences"]]).reshape(-1)


def objective_complicated(theta, us, model, data):
    corners = vertices(theta, model)[data["triangle_vertices"]]
    return jax.vmap(point_error)(us, data["points"], corners).reshape(-1)


@partial(jax.jit, static_argnums=[1])
def hand_objective(theta, model_static, model, data, us):
    model = model | dict(model_static)
    if us is None:
        return objective_simple(theta, model, data)
    return objective_complicated(theta, us, model, data)


@partial(jax.jit, static_argnums=[1])
def jacobian_fwd(theta, model_static, model, data, us):
    model = model | dict(model_static)
    if us is None:
        return jax.jacfwd(objective_simple)(theta, model, data)
    theta_columns = jax.jacfwd(objective_complicated)(theta, us, model, data)
    corners = vertices(theta, model)[data["triangle_vertices"]]
    u_columns = jax.vmap(jax.jacfwd(point_error))(us, data["points"], corners).reshape(-1, 2)
    return jnp.concatenate([u_columns, theta_columns], axis=1)


def prepare_input(input):
    """(theta, the model's static part (parents, mirroring) as a hashable tuple, arrays, data, us or None)."""
    model_json = input["data"]["model"]
    model = {
        name: np.array(model_json[name], dtype=np.float64)
        for name in ("base_relatives", "inverse_base_absolutes", "base_positions", "weights")
    }
    model_static = (
        ("parents", tuple(int(p) for p in model_json["parents"])),
        ("is_mirrored", model_json["is_mirrored"]),
    )
    correspondences = np.array(input["data"]["correspondences"], dtype=np.int64)
    data = {"points": np.array(input["data"]["points"], dtype=np.float64), "correspondences": correspondences}
    us = np.array(input["us"], dtype=np.float64).reshape(-1, 2)
    if len(us):
        data["triangle_vertices"] = np.array(model_json["triangles"], dtype=np.int64)[correspondences]
    theta = np.array(input["theta"], dtype=np.float64)
    return theta, model_static, model, data, us if len(us) else None


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def objective(input):
    return hand_objective(*input)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def jacobian(input):
    return jacobian_fwd(*input)
