"""Properties of forward mode on random inputs (hypothesis): a JVP is linear in its tangent,
equals the Jacobian times the tangent, and the Jacobian equals reverse mode's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adcore
import adcore.numpy as anp

FUNCTIONS = {
    "elementwise": lambda x: anp.sin(x) * anp.exp(-x * x) + anp.tanh(x) ** 3,
    "reductions": lambda x: anp.logsumexp(x, axis=-1) * anp.sum(x**2) - anp.max(x, axis=-1),
    "matmul": lambda x: anp.matmul(anp.reshape(x, (-1, 1)), anp.reshape(anp.cos(x), (1, -1))),
    "softmax": lambda x: anp.softmax(x, axis=-1) * anp.sigmoid(x[..., :1]),
    "indexing": lambda x: anp.concatenate([x[..., ::-1], anp.relu(x) * 2.0], axis=-1)[..., 1:],
}

arrays = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4),
    elements=st.floats(-3, 3, allow_nan=False, width=64),
)


@st.composite
def points_and_tangents(draw):
    x = draw(arrays)
    tangent = hnp.arrays(np.float64, x.shape, elements=st.floats(-2, 2, allow_nan=False))
    return x, draw(tangent), draw(tangent), draw(st.sampled_from(sorted(FUNCTIONS)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(points_and_tangents(), st.floats(-2, 2), st.floats(-2, 2))
def test_jvp_is_linear_in_the_tangent(case, a, b):
    x, u, v, name = case
    f = FUNCTIONS[name]
    _, ju = adcore.jvp(f, (x,), (u,))
    _, jv = adcore.jvp(f, (x,), (v,))
    _, jw = adcore.jvp(f, (x,), (a * u + b * v,))
    np.testing.assert_allclose(jw, a * ju + b * jv, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(points_and_tangents())
def test_jvp_is_the_jacobian_times_the_tangent_and_the_jacobian_is_reverses(case):
    x, u, _, name = case
    f = FUNCTIONS[name]
    out, ju = adcore.jvp(f, (x,), (u,))
    forward = adcore.jacobian(f, backend="forward")(x)
    reverse = adcore.jacobian(f, backend="reverse")(x)
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)
    flat = forward.reshape(np.size(out), x.size)
    np.testing.assert_allclose(ju, (flat @ u.ravel()).reshape(np.shape(out)), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(out, f(x))
