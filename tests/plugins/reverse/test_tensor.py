"""Tensor: the eager API (seed 001's Zhangliang, modelled on torch.Tensor): operators, NumPy
interop, backward, .grad accumulation, detach, hooks (seed 001 hook技术)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse import Tensor, no_grad
from traceable_ops import OPAQUE_SIN, SCALED_SIN, SOFTPLUS, TraceableOps, sigmoid

import adcore
import adcore.numpy as anp
from adcore import GradientError, InvalidInputError
from adcore.errors import InvalidValueError, StateChangedError, TracerConversionError

X = np.array([[1.0, 2.0], [3.0, 4.0]])
U = np.array([[0.5, -1.0], [2.0, 0.25]])


def _leaf(value=X):
    return Tensor(np.array(value, dtype=float), requires_grad=True)


# --- construction ------------------------------------------------------------------


def test_python_numbers_become_float64():
    assert Tensor(2).dtype == np.float64
    assert Tensor(2.5, requires_grad=True).dtype == np.float64


def test_float32_data_stays_float32():
    assert Tensor(np.ones(3, dtype=np.float32), requires_grad=True).dtype == np.float32


@pytest.mark.parametrize("data", [np.arange(3), np.int32(4), np.array([True, False])])
def test_integer_tensor_cannot_require_grad(data):
    with pytest.raises(InvalidInputError, match="float"):
        Tensor(data, requires_grad=True)


def test_integer_tensor_without_grad_is_fine():
    t = Tensor(np.arange(3))
    assert t.dtype.kind == "i" and not t.requires_grad


def test_requires_grad_underscore_on_an_integer_leaf_errors():
    with pytest.raises(InvalidInputError, match="float"):
        Tensor(np.arange(3)).requires_grad_()


def test_requires_grad_underscore_on_a_leaf():
    t = Tensor(X).requires_grad_()
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad, 2 * X)


def test_requires_grad_underscore_on_a_non_leaf_errors():
    y = _leaf() * 2.0
    with pytest.raises(GradientError, match="leaf"):
        y.requires_grad_(False)


def test_leaf_and_op_bookkeeping():
    x = _leaf()
    y = np.sin(x)
    assert x.is_leaf and x.op is None
    assert not y.is_leaf and y.op == "sin"
    assert y.shape == (2, 2) and y.ndim == 2 and y.size == 4 and y.dtype == np.float64
    np.testing.assert_array_equal(y.numpy(), np.sin(X))
    np.testing.assert_array_equal(y.data, np.sin(X))


def test_repr_names_the_op_or_requires_grad():
    assert "requires_grad=True" in repr(_leaf())
    assert "op=multiply" in repr(_leaf() * 2.0)


# --- operators and NumPy interop: value as NumPy's, gradient of the sum as derived by hand ---

ELEMENTWISE = [
    # (name, f on arrays and Tensors alike, d/dx of f elementwise)
    ("x + u", lambda x: x + U, lambda x: np.ones_like(x)),
    ("u + x", lambda x: U + x, lambda x: np.ones_like(x)),
    ("x - u", lambda x: x - U, lambda x: np.ones_like(x)),
    ("2 - x", lambda x: 2.0 - x, lambda x: -np.ones_like(x)),
    ("x * u", lambda x: x * U, lambda x: U),
    ("x / u", lambda x: x / U, lambda x: 1 / U),
    ("1 / x", lambda x: 1.0 / x, lambda x: -1 / x**2),
    ("x ** 3", lambda x: x**3, lambda x: 3 * x**2),
    ("2 ** x", lambda x: 2.0**x, lambda x: np.log(2) * 2.0**x),
    ("-x", lambda x: -x, lambda x: -np.ones_like(x)),
    ("abs(-x)", lambda x: abs(-x), lambda x: np.ones_like(x)),
    ("np.sin", np.sin, np.cos),
    ("np.exp", np.exp, np.exp),
    ("np.log", np.log, lambda x: 1 / x),
    ("np.tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    ("np.sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x)),
]


@pytest.mark.parametrize("name, fn, dfn", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_operator_value_and_gradient(name, fn, dfn):
    x = _leaf()
    y = fn(x)
    assert isinstance(y, Tensor)
    np.testing.assert_allclose(y.value, fn(X), rtol=1e-15)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, dfn(X), rtol=1e-14)


def test_ndarray_on_the_left_gives_a_tensor():
    x = _leaf()
    y = U * x  # ndarray.__mul__ defers to Tensor.__array_ufunc__
    assert isinstance(y, Tensor)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, U)


def test_matmul_operator_and_np_matmul():
    # L = sum(t @ u): dL/dt = 1 uᵀ, dL/du = tᵀ 1
    t, u = _leaf(X), _leaf(U)
    y = t @ u
    np.testing.assert_allclose(y.value, X @ U)
    y.sum().backward()
    ones = np.ones((2, 2))
    np.testing.assert_allclose(t.grad, ones @ U.T)
    np.testing.assert_allclose(u.grad, X.T @ ones)
    assert np.matmul(t, u).op == "matmul"


def test_sum_method_and_np_sum_with_axis():
    x = _leaf()
    assert float(x.sum().value) == 10.0
    col = np.sum(x, axis=0)
    np.testing.assert_array_equal(col.value, [4.0, 6.0])
    (col * np.array([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(x.grad, [[1.0, 10.0], [1.0, 10.0]])


def test_mean_method():
    x = _leaf()
    x.mean().backward()
    np.testing.assert_array_equal(x.grad, np.full((2, 2), 0.25))


def test_indexing_sends_the_gradient_to_the_indexed_row_only():
    x = _leaf()
    row = x[0]
    np.testing.assert_array_equal(row.value, [1.0, 2.0])
    (row * np.array([3.0, 5.0])).sum().backward()
    np.testing.assert_array_equal(x.grad, [[3.0, 5.0], [0.0, 0.0]])


def test_transpose_and_reshape():
    x = _leaf()
    np.testing.assert_array_equal(x.T.value, X.T)
    flat = x.reshape(4)
    assert flat.shape == (4,)
    (flat * np.arange(4.0)).sum().backward()
    np.testing.assert_array_equal(x.grad, np.arange(4.0).reshape(2, 2))


def test_len_and_iteration_go_through_rows():
    x = _leaf()
    rows = list(x)
    assert len(x) == 2 and len(rows) == 2
    (rows[1] * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 0.0], [2.0, 2.0]])


def test_comparisons_give_plain_boolean_arrays():
    x = _leaf()
    mask = x > 2.0
    assert isinstance(mask, np.ndarray) and mask.dtype == bool
    np.testing.assert_array_equal(mask, X > 2.0)


def test_np_asarray_refuses_to_cut_a_tensor_out_of_the_graph():
    with pytest.raises(TypeError, match="silently cut it out of the derivative"):
        np.asarray(_leaf())


# --- backward and .grad --------------------------------------------------------------


def test_grad_accumulates_over_two_backward_calls():
    x = _leaf()
    (x * x).sum().backward()
    (3.0 * x).sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * X + 3)


def test_grad_can_be_reset_between_calls():
    x = _leaf()
    (x * x).sum().backward()
    x.grad = None
    (3.0 * x).sum().backward()
    np.testing.assert_array_equal(x.grad, np.full((2, 2), 3.0))


def test_non_scalar_backward_with_a_seed():
    # y = x², seed v: x.grad = v · 2x
    x = _leaf()
    v = np.array([[1.0, -1.0], [0.5, 2.0]])
    (x * x).backward(grad=v)
    np.testing.assert_array_equal(x.grad, v * 2 * X)


def test_seed_may_be_a_tensor():
    x = _leaf()
    v = np.array([[1.0, -1.0], [0.5, 2.0]])
    (x * x).backward(grad=Tensor(v))
    np.testing.assert_array_equal(x.grad, v * 2 * X)


def test_non_scalar_backward_without_a_seed_errors():
    x = _leaf()
    with pytest.raises(GradientError, match=r"shape \(2, 2\)"):
        (x * x).backward()
    assert x.grad is None


@pytest.mark.parametrize("seed_shape", [(3, 2, 2), (1,), (2,)])
def test_seed_of_the_wrong_shape_errors(seed_shape):
    # torch: "Mismatch in shape: grad_output[0] has a shape of ... and output[0] has a shape of ..."
    x = _leaf()
    with pytest.raises(GradientError, match="shape"):
        (x * x).backward(grad=np.ones(seed_shape))
    assert x.grad is None


def test_scalar_backward_seeds_with_one():
    x = Tensor(3.0, requires_grad=True)
    (x * x).backward()
    assert x.grad == 6.0


def test_backward_of_a_tensor_that_does_not_require_grad_errors():
    t = Tensor(X)
    with pytest.raises(GradientError, match="does not require grad"):
        (t * t).sum().backward()


def test_constant_tensor_operand_gets_no_grad():
    x, c = _leaf(), Tensor(U)
    (x * c).sum().backward()
    np.testing.assert_array_equal(x.grad, U)
    assert c.grad is None


def test_intermediate_tensors_keep_no_grad():
    x = _leaf()
    y = x * 2.0
    (y * y).sum().backward()
    assert y.grad is None  # as torch: only leaves accumulate .grad
    np.testing.assert_array_equal(x.grad, 8 * X)


# --- detach -------------------------------------------------------------------------------


def test_detach_is_a_new_leaf_with_the_same_value():
    y = _leaf() * 2.0
    d = y.detach()
    assert isinstance(d, Tensor) and d.is_leaf and not d.requires_grad
    np.testing.assert_array_equal(d.value, 2 * X)


def test_detach_stops_the_gradient():
    # y = x · detach(x): dy/dx = x, not 2x
    x = _leaf()
    (x * x.detach()).sum().backward()
    np.testing.assert_array_equal(x.grad, X)


# --- hooks (seed 001 hook技术; torch.Tensor.register_hook) ---------------------------------


def test_hook_on_an_intermediate_sees_its_gradient_while_grad_stays_none():
    # the seed's example: y.grad is None after backward, but y's hook captured dl/dy.
    # z = x + y, o = w @ z: do/dz = w
    x = _leaf([0.0, 1.0, 2.0, 3.0])
    y = _leaf([4.0, 5.0, 6.0, 7.0])
    w = _leaf([1.0, 2.0, 3.0, 4.0])
    z = x + y
    grad_list = []
    z.register_hook(grad_list.append)
    (w @ z).backward()
    assert z.grad is None
    assert len(grad_list) == 1
    np.testing.assert_array_equal(grad_list[0], [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(x.grad, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(w.grad, [4.0, 6.0, 8.0, 10.0])


def test_hook_on_a_tensor_used_twice_sees_the_total_once():
    # y = 3x, z = y² + y: dz/dy = 2y + 1 = 13 at x = 2, dz/dx = 3 · 13
    x = Tensor(2.0, requires_grad=True)
    y = x * 3.0
    calls = []
    y.register_hook(calls.append)
    (y * y + y).backward()
    assert calls == [13.0]
    assert x.grad == 39.0


def test_hook_return_value_replaces_the_gradient_downstream():
    x = Tensor(2.0, requires_grad=True)
    y = x * 3.0
    y.register_hook(lambda g: g * 10)
    y.backward()
    assert x.grad == 30.0


def test_hook_returning_none_keeps_the_gradient():
    x = Tensor(2.0, requires_grad=True)
    y = x * 3.0
    y.register_hook(lambda g: None)
    y.backward()
    assert x.grad == 3.0


def test_hook_on_a_leaf_changes_what_is_accumulated():
    x = Tensor(2.0, requires_grad=True)
    x.register_hook(lambda g: -g)
    (x * x).backward()
    assert x.grad == -4.0


def test_hooks_chain_in_registration_order():
    # (2x · 2) + 1 at x = 2
    x = Tensor(2.0, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g + 1)
    (x * x).backward()
    assert x.grad == 9.0


def test_remover_removes_the_hook():
    x = Tensor(2.0, requires_grad=True)
    calls = []
    remove = x.register_hook(lambda g: calls.append(g) or g * 100)
    y = x * x
    y.backward(retain_graph=True)
    remove()
    y.backward()
    assert calls == [4.0]
    assert x.grad == 400.0 + 4.0


def test_hook_on_a_tensor_that_does_not_require_grad_errors():
    with pytest.raises(GradientError, match="does not require grad"):
        Tensor(X).register_hook(print)
    with no_grad():
        y = _leaf() * 2.0
    with pytest.raises(GradientError):
        y.register_hook(print)


# --- issue 15, class 8: hooks are checked at registration and at call -------------------------


def test_registering_a_non_callable_hook_is_a_typed_error_at_once():
    x = Tensor(2.0, requires_grad=True)
    with pytest.raises(InvalidInputError, match="callable"):
        x.register_hook(3.0)
    (x * x).backward()  # the next call works, and no hook was left behind
    assert x.grad == 4.0


def test_a_leaf_hook_returning_another_shape_is_a_typed_error_naming_the_shape():
    x = _leaf([1.0, 2.0])
    x.register_hook(lambda g: np.ones(5))
    with pytest.raises(InvalidValueError, match=r"a leaf Tensor, shape \(2,\).*shape \(2,\)"):
        anp.sum(x * x).backward()
    assert x.grad is None  # nothing accumulated from the refused sweep
    y = _leaf([1.0, 2.0])
    anp.sum(y * y).backward()  # the next call works
    np.testing.assert_array_equal(y.grad, [2.0, 4.0])


def test_an_intermediate_hook_returning_another_shape_names_its_op():
    x = _leaf([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = anp.sum(x, axis=1)  # shape (3,)
    y.register_hook(lambda g: np.ones((3, 2)))
    with pytest.raises(InvalidValueError, match=r"op 'sum' made, shape \(3,\)"):
        anp.sum(y * 2.0).backward()
    assert x.grad is None


def test_a_hook_changing_the_dtype_is_a_typed_error():
    x = Tensor(np.float32(2.0), requires_grad=True)
    x.register_hook(lambda g: np.float64(1.0) * np.ones((), np.float64))
    with pytest.raises(InvalidValueError, match="dtype float32"):
        (x * x).backward()


def test_a_hook_returning_something_that_is_not_an_array_is_a_typed_error():
    x = Tensor(2.0, requires_grad=True)
    x.register_hook(lambda g: {"grad": g})
    with pytest.raises(InvalidValueError, match="dict"):
        (x * x).backward()


def test_a_hook_returning_a_python_number_takes_the_gradients_dtype():
    x = Tensor(np.float32(2.0), requires_grad=True)
    x.register_hook(lambda g: 1.5)
    (x * x).backward()
    assert x.grad == np.float32(1.5) and x.grad.dtype == np.float32


def test_removing_a_hook_twice_is_harmless():
    x = Tensor(2.0, requires_grad=True)
    remove = x.register_hook(lambda g: g * 0)
    remove()
    remove()
    (x * x).backward()
    assert x.grad == 4.0


# --- issue 15, class 5: in-place changes to data a graph saved ----------------------------------
# The graph keeps copies of what its backward reads, so .grad is the derivative of the
# computation as it ran; with create_graph the rules read the Tensors, so a change is refused.

W = np.array([0.1, 0.2])
EXP_W_TIMES_W = np.exp(W) * (1 + W)  # d/dw sum(exp(w) * w)


def test_a_leafs_data_changed_before_backward_keeps_the_gradient():
    w = Tensor(W.copy(), requires_grad=True)
    y = anp.sum(anp.exp(w) * w)
    w.data[...] = 5.0
    y.backward()
    np.testing.assert_allclose(w.grad, EXP_W_TIMES_W, rtol=1e-15)


def test_the_array_a_leaf_was_made_from_changed_before_backward():
    data = W.copy()
    w = Tensor(data, requires_grad=True)
    y = anp.sum(anp.exp(w) * w)
    data *= 7
    y.backward()
    np.testing.assert_allclose(w.grad, EXP_W_TIMES_W, rtol=1e-15)


def test_an_intermediates_data_changed_before_backward():
    # d/dw sum(exp(w)) = exp(w): exp's rule reads its output, which is changed here
    w = Tensor(W.copy(), requires_grad=True)
    z = anp.exp(w)
    y = anp.sum(z)
    z.data[...] = 7.0
    y.backward()
    np.testing.assert_allclose(w.grad, np.exp(W), rtol=1e-15)


def test_create_graph_after_an_in_place_change_is_a_typed_error_naming_the_op():
    w = Tensor(W.copy(), requires_grad=True)
    z = anp.exp(w)
    y = anp.sum(z)
    z.data[...] = 7.0
    with pytest.raises(StateChangedError, match=r"op 'sum'.*changed in place"):
        y.backward(create_graph=True)
    assert w.grad is None
    y.backward()  # the next call works: without create_graph the kept copies are used
    np.testing.assert_allclose(w.grad, np.exp(W), rtol=1e-15)


def test_a_constants_kept_copy_keeps_its_memory_layout_and_its_values():
    # a C-order copy of a Fortran-ordered constant transposes it: np.polynomial's polyvander
    # (1024, 128), used as `powers @ x`, took 1.5 ms of llsq's 2 ms gradient in that copy
    k = np.asfortranarray(U)
    w = _leaf(W)
    y = k @ w
    assert y._primals[0].flags.f_contiguous
    k[...] = 0.0  # the node's copy, not the caller's array, is what the backward reads
    anp.sum(y * y).backward()
    np.testing.assert_allclose(w.grad, 2 * U.T @ (U @ W), rtol=1e-15)


@pytest.mark.parametrize("read", [lambda x: x.numpy(), lambda x: x.data], ids=["numpy", "data"])
def test_reading_the_plain_value_inside_grad_is_refused_not_a_silent_cut(read):
    # x.numpy() * x would differentiate as a constant times x: 0.7 where the truth is 2 * 0.7
    with pytest.raises(TracerConversionError, match="backend 'reverse'.*stop_gradient"):
        adcore.grad(lambda x: read(x) * x)(0.7)
    assert adcore.grad(lambda x: x * x)(0.7) == pytest.approx(1.4)  # the next call works
    eager = Tensor(2.0, requires_grad=True)
    assert read(eager) == 2.0  # an eager Tensor's value stays readable


# --- traceable ops (OpSpec.traceable): with no vjp rule, the body is recorded op by op ------


def test_a_traceable_op_without_a_vjp_rule_is_differentiated_through_its_body(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    x = np.array([-30.0, -1.0, 0.0, 2.5])
    g = adcore.grad(lambda x: SOFTPLUS(x).sum())(x)
    np.testing.assert_allclose(g, sigmoid(x), rtol=1e-14)  # d softplus / dx is the sigmoid
    t = Tensor(x, requires_grad=True)  # the eager trace too
    SOFTPLUS(t).sum().backward()
    np.testing.assert_allclose(t.grad, sigmoid(x), rtol=1e-14)
    h = adcore.hessian(lambda x: SOFTPLUS(x), backend="reverse")(0.7)  # reverse over reverse
    assert h == pytest.approx(sigmoid(0.7) * (1 - sigmoid(0.7)), rel=1e-14)


def test_a_traceable_op_with_a_vjp_rule_uses_the_rule(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    gx, gy = adcore.grad(SCALED_SIN, argnums=(0, 1))(1.5, 0.4)
    assert gx == pytest.approx(2 * np.sin(0.4))  # the test rule's (twice the truth), not the body's
    assert gy == pytest.approx(1.5 * np.cos(0.4))


def test_an_op_neither_traceable_nor_with_a_vjp_rule_is_refused_and_the_next_call_works(register_plugin):
    register_plugin(TraceableOps(), "traceable_ops")
    with pytest.raises(
        adcore.MissingRuleError, match=r"'opaque_sin' has no 'vjp' rule.*backends that can: numeric"
    ):
        adcore.grad(OPAQUE_SIN)(0.3)
    assert adcore.grad(SOFTPLUS)(0.3) == pytest.approx(sigmoid(0.3), rel=1e-14)
