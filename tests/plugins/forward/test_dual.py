"""Dual and ForwardTrace: what travels with a tangent batch, checked against the reverse backend.

The registry-wide rule checks (tests/ops/test_jvps.py) use the op samples; these cover
the batch-axis cases the samples do not: matmul's promotions and broadcasting, NumPy's
advanced indexing when it moves axes to the front, NumPy functions called on Duals.
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_forward import Dual, ForwardTrace
from traceable_ops import OPAQUE_SIN, SCALED_SIN, SOFTPLUS, TraceableOps, sigmoid

import adcore
import adcore.numpy as anp
from adcore.core import new_trace

RNG = np.random.default_rng(7)


def _same_jacobian(f, *args, argnums=0):
    forward = adcore.jacobian(f, backend="forward", argnums=argnums)(*args)
    reverse = adcore.jacobian(f, backend="reverse", argnums=argnums)(*args)
    for got, want in zip(*((forward, reverse) if isinstance(argnums, tuple) else ((forward,), (reverse,)))):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


MATMUL_SHAPES = [
    ((3,), (3,)),  # vector . vector -> 0-d
    ((3,), (3, 4)),  # row vector
    ((2, 3), (3,)),  # matrix-vector (the benchmark's case)
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),  # a stack of matrices
    ((3,), (5, 3, 4)),  # a vector against a stack
    ((5, 2, 3), (3,)),
    ((5, 1, 2, 3), (4, 3, 2)),  # broadcasting stack axes
]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES)
def test_matmul_tangents_for_both_inputs_match_reverse(a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    _same_jacobian(lambda a, b: anp.matmul(a, b), a, b, argnums=(0, 1))


@pytest.mark.parametrize(
    "index",
    [
        (np.array([0, 2]), slice(None), np.array([1, 0])),  # arrays apart: NumPy puts their axis first
        (np.array([[0], [2]]), slice(1, 3), 1),  # an int counts as an advanced index here
        (slice(None), np.array([0, 1]), np.array([1, 1])),  # adjacent: the axis stays in place
        (Ellipsis, np.array([0, 1])),
        (np.array([True, False, True]), slice(None), 0),
        ([0, 1, 1],),
        (None, 1, slice(None, None, 2)),
    ],
)
def test_indexing_tangents_match_reverse(index):
    x = RNG.standard_normal((3, 4, 2))
    _same_jacobian(lambda x: x[index] * 2.0, x)
    # and scatter_add, getitem's transpose, through the same indices
    shape = x[index].shape
    v = RNG.standard_normal(shape)
    _same_jacobian(lambda v: anp.scatter_add(v, index=index, shape=x.shape), v)


def test_scatter_add_broadcasts_its_values_like_numpy():
    v = RNG.standard_normal((2,))  # lands on a (3, 2) region
    _same_jacobian(lambda v: anp.scatter_add(v, index=(slice(0, 3), 0), shape=(4, 3, 2)), v)


def test_broadcasting_binary_ops_line_the_tangent_up_under_the_output():
    x, y = RNG.standard_normal((3,)), RNG.standard_normal((3, 3))  # B = 3 = a length of y: no silent mix-up
    for f in (anp.add, anp.subtract, anp.multiply, anp.divide, anp.maximum, anp.minimum, anp.arctan2):
        _same_jacobian(lambda x, y, f=f: f(x, y), x, y, argnums=(0, 1))
    _same_jacobian(lambda x, y: anp.power(anp.abs(x) + 1, y), x, y, argnums=(0, 1))
    c = RNG.random((3, 3)) > 0.5
    _same_jacobian(lambda x, y: anp.where(c, x, y), x, y, argnums=(0, 1))


def test_reductions_along_each_axis_and_with_keepdims():
    x = RNG.standard_normal((2, 3, 4))
    for op in (anp.sum, anp.mean, anp.prod, anp.max, anp.min, anp.logsumexp):
        for axis in (None, 0, 1, -1, (0, 2)):
            for keepdims in (False, True):
                _same_jacobian(lambda x, op=op, a=axis, k=keepdims: op(x, axis=a, keepdims=k), x)


def test_numpy_functions_on_duals_are_traced():
    x = RNG.standard_normal((2, 3))
    _same_jacobian(lambda x: np.sum(np.sin(x) * np.transpose(x).T, axis=0) + np.max(x), x)
    _same_jacobian(lambda x: np.concatenate([x, np.exp(x)], axis=1)[:, 1:] @ np.ones(5), x)


def test_stack_and_concatenate_of_many_traced_and_constant_inputs_match_reverse():
    # their tangent is built in one op from all inputs' tangents (dual.py), zeros for constants
    x = RNG.standard_normal((4,))
    rows = lambda x: [x * k if k % 3 else np.full(4, float(k)) for k in range(40)]  # noqa: E731
    _same_jacobian(lambda x: anp.stack(rows(x)) @ np.arange(4.0), x)
    _same_jacobian(lambda x: np.stack(rows(x), axis=1).sum(axis=0), x)
    _same_jacobian(lambda x: np.concatenate([[1.0, 2.0], x, np.exp(x[:2]), np.ones(3)]), x)
    m = RNG.standard_normal((2, 3))
    _same_jacobian(lambda m: np.concatenate([m, np.zeros((2, 1)), m**2], axis=-1), m)
    no_tangent = adcore.jacobian(lambda y: np.stack([x, x]), backend="forward")(1.0)
    assert type(no_tangent) is np.ndarray


def test_hessian_through_stack_and_concatenate_matches_reverse_over_reverse():
    x = RNG.standard_normal((3,))
    f = lambda x: anp.sum(np.stack([x**2, np.sin(x), np.ones(3)]) * np.concatenate([x[:1], x[1:] * x[0]]))  # noqa: E731
    np.testing.assert_allclose(
        adcore.hessian(f)(x), adcore.jacobian(adcore.grad(f), backend="reverse")(x), rtol=1e-12, atol=1e-12
    )


def test_a_result_no_tangent_reaches_is_a_plain_constant():
    x = np.array([0.5, -2.0])
    with new_trace(ForwardTrace, batch=2) as trace:
        d = Dual(x, np.eye(2), trace)
        assert not isinstance(anp.sign(d), Dual)  # sign has a None rule: no tangent flows
        assert not isinstance(anp.stop_gradient(d), Dual)
        y = anp.sin(d)
        assert isinstance(y, Dual) and y.tangent.shape == (2, 2)
        assert y.shape == (2,) and y.dtype == np.float64
        np.testing.assert_allclose(y.tangent, np.diag(np.cos(x)))
    assert "Dual(" in repr(y) and "tangent=" in repr(y)


def test_tangents_keep_float32_where_a_rule_mixes_in_float64():
    x = np.array([[0.5, -2.0], [1.0, 3.0]], dtype=np.float32)
    with new_trace(ForwardTrace, batch=4) as trace:
        d = Dual(x, np.eye(4, dtype=np.float32).reshape(4, 2, 2), trace)
        for y in (anp.relu(d), anp.max(d, axis=0), anp.maximum(d, np.float32(0.7)), anp.clip(d, -1, 1)):
            assert y.tangent.dtype == np.float32


def test_a_dual_of_a_finished_trace_is_a_constant_to_a_new_one():
    with new_trace(ForwardTrace, batch=1) as old:
        stale = Dual(np.array(2.0), np.ones((1,)), old)
    # a leaked Dual is not differentiated by a later, unrelated transformation
    f = lambda x: x * stale  # noqa: E731
    assert adcore.grad(f, backend="forward")(3.0) == 2.0


# --- traceable ops (OpSpec.traceable): with no jvp rule, the tangents go through the body ----


def test_a_traceable_op_without_a_jvp_rule_is_differentiated_through_its_body(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    x = np.array([-30.0, -1.0, 0.0, 2.5])
    jac = adcore.jacobian(SOFTPLUS, backend="forward")(x)
    np.testing.assert_allclose(jac, np.diag(sigmoid(x)), rtol=1e-14)  # d softplus / dx is the sigmoid
    # a vjp rule is no jvp rule: forward differentiates scaled_sin's body, d/dx x sin(y) = sin(y)
    gx, gy = adcore.grad(SCALED_SIN, argnums=(0, 1), backend="forward")(1.5, 0.4)
    assert (gx, gy) == (pytest.approx(np.sin(0.4)), pytest.approx(1.5 * np.cos(0.4)))
    h = adcore.hessian(lambda x: SOFTPLUS(x))(0.7)  # forward over reverse, both through the body
    assert h == pytest.approx(sigmoid(0.7) * (1 - sigmoid(0.7)), rel=1e-14)


def test_an_op_neither_traceable_nor_with_a_jvp_rule_is_refused_and_the_next_call_works(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    with pytest.raises(
        adcore.MissingRuleError, match=r"'opaque_sin' has no 'jvp' rule.*backends that can: numeric"
    ):
        adcore.grad(OPAQUE_SIN, backend="forward")(0.3)
    assert adcore.grad(SOFTPLUS, backend="forward")(0.3) == pytest.approx(sigmoid(0.3), rel=1e-14)
