"""The backward sweep: retain_graph (seed 001 第四个问题), freeing, fan-in/fan-out, long chains, dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse import Tensor
from adcore_reverse.backward import backward_pass

import adcore.numpy as anp
from adcore import GraphFreedError


def test_retain_graph_allows_a_second_backward():
    # y = x³: each backward adds 3x² = 12 at x = 2
    x = Tensor(2.0, requires_grad=True)
    y = x**3
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad == 24.0


def test_second_backward_without_retain_graph_raises_graph_freed():
    x = Tensor(2.0, requires_grad=True)
    y = np.sin(x) * x
    y.backward()
    with pytest.raises(GraphFreedError, match=r"'multiply'.*retain_graph=True"):
        y.backward()


def test_graph_freed_error_is_also_a_runtime_error():
    # torch raises RuntimeError("Trying to backward through the graph a second time ...")
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward()


def test_freed_shared_subgraph_is_detected_from_another_root():
    # a and b share y = sin(x); a.backward() frees y, so b.backward() must not silently stop at y
    x = Tensor(2.0, requires_grad=True)
    y = np.sin(x)
    a, b = y * 2.0, y * 3.0
    a.backward()
    with pytest.raises(GraphFreedError, match="'sin'"):
        b.backward()


def test_shared_subgraph_with_retain_graph_gives_both_gradients():
    x = Tensor(2.0, requires_grad=True)
    y = np.sin(x)
    a, b = y * 2.0, y * 3.0
    a.backward(retain_graph=True)
    b.backward()
    assert x.grad == pytest.approx(5 * np.cos(2.0))


def test_a_third_backward_fails_after_retain_then_free():
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(GraphFreedError):
        y.backward()
    assert x.grad == 8.0  # the failed call added nothing


def test_create_graph_retains_the_graph():
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    y.backward(create_graph=True)
    y.backward()
    assert float(x.grad.value) == 8.0


def test_diamond_sums_both_paths():
    # y = sin(x) · cos(x): dy/dx = cos² - sin²
    x = Tensor(0.3, requires_grad=True)
    (np.sin(x) * np.cos(x)).backward()
    assert x.grad == pytest.approx(np.cos(0.6), rel=1e-14)


def test_fan_out_of_one_leaf_into_many_uses():
    # y = x + x + ... (10 times) + x·x: dy/dx = 10 + 2x
    x = Tensor(1.5, requires_grad=True)
    y = x * x
    for _ in range(10):
        y = y + x
    y.backward()
    assert x.grad == 13.0


def test_backward_pass_returns_each_reached_leaf_once():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    y = (x * w + x).sum()
    reached = backward_pass(y, np.float64(1.0))
    assert sorted(id(leaf) for leaf, _ in reached) == sorted([id(x), id(w)])
    grads = {id(leaf): g for leaf, g in reached}
    np.testing.assert_array_equal(grads[id(x)], [4.0, 5.0])
    np.testing.assert_array_equal(grads[id(w)], [1.0, 2.0])


def test_long_chain_does_not_hit_the_recursion_limit():
    # DESIGN: graph walks are iterative; 10^5 multiplications by c give dy/dx = c^n
    n, c = 100_000, 1.0000001
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * c
    y.backward()
    assert x.grad == pytest.approx(c**n, rel=1e-9)


def test_stack_and_concatenate_of_many_traced_and_constant_inputs_match_forward():
    # their cotangents come from one call for all inputs (a Joint rule), not one rule call per input
    import adcore

    x = np.random.default_rng(3).standard_normal(4)
    rows = lambda x: [x * k if k % 3 else np.full(4, float(k)) for k in range(40)]  # noqa: E731
    for f in (
        lambda x: anp.stack(rows(x)) @ np.arange(4.0),
        lambda x: np.stack(rows(x), axis=-1).sum(axis=0),
        lambda x: np.concatenate([[1.0, 2.0], x, np.exp(x[:2]), np.ones(3), x[::-1] ** 2]),
        lambda x: np.concatenate([np.outer(x, x), np.zeros((4, 1)), x[:, None]], axis=-1).ravel(),
    ):
        np.testing.assert_allclose(
            adcore.jacobian(f, backend="reverse")(x), adcore.jacobian(f, backend="forward")(x), rtol=1e-12
        )
    # and their second derivatives, from the recorded sweep (create_graph)
    f = lambda x: anp.sum(np.stack([x**2, np.ones(4), np.sin(x)]) * np.concatenate([x[1:], x[:1] ** 3]))  # noqa: E731
    np.testing.assert_allclose(
        adcore.jacobian(adcore.grad(f), backend="reverse")(x), adcore.hessian(f)(x), rtol=1e-12, atol=1e-12
    )


def test_float32_leaf_gets_a_float32_grad_despite_float64_constants():
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (x * np.array([3.0, 4.0])).sum().backward()  # the product is promoted to float64
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, [3.0, 4.0])


def test_mixed_precision_leaves_each_keep_their_dtype():
    a = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    b = Tensor(np.array([3.0, 4.0], dtype=np.float64), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
    np.testing.assert_array_equal(b.grad, [1.0, 2.0])


# --- structural zeros under where (issue 15, class 13; zeros.py) ------------------------------


def _warnings_off():
    return np.errstate(divide="ignore", invalid="ignore")


def test_a_branch_read_by_two_wheres_is_zero_only_where_both_leave_it_out():
    # y = log(x) is taken by the first where at position 0, by the second at position 1, so every
    # position of y reaches the result: d/dx sum(log x) = 1/x, honestly inf at x = 0 (not 0)
    x = Tensor(np.array([0.0, 1.0]), requires_grad=True)
    c = np.array([True, False])
    with _warnings_off():
        y = anp.log(x)
        anp.sum(anp.where(c, y, 0.0) + anp.where(~c, y, 0.0)).backward()
    np.testing.assert_array_equal(x.grad, [np.inf, 1.0])


def test_a_hook_that_replaces_a_masked_gradient_drops_the_zeros():
    # the hook makes y's gradient 1 everywhere, so log's rule 1/x is used: inf at x = 0
    x = Tensor(0.0, requires_grad=True)
    with _warnings_off():
        y = anp.log(x)
        y.register_hook(lambda g: g + 1.0)
        anp.where(x > 0, y, 0.0).backward()
    assert x.grad == np.inf


def test_create_graph_through_the_where_trap_gives_zero_second_derivatives():
    x = Tensor(np.array([0.0, 2.0]), requires_grad=True)
    with _warnings_off():
        anp.sum(anp.where(x > 0, anp.log(x), 0.0)).backward(create_graph=True)
        g = x.grad
        np.testing.assert_array_equal(g.value, [0.0, 0.5])
        x.grad = None
        anp.sum(g).backward()
    np.testing.assert_array_equal(x.grad, [0.0, -0.25])  # d/dx (1/x) = -1/x² at 2; 0 at the untaken 0


def test_a_masked_cotangent_keeps_its_dtype():
    x = Tensor(np.array([0.0, 4.0], dtype=np.float32), requires_grad=True)
    with _warnings_off():
        anp.sum(anp.where(x > 0, anp.sqrt(x), 0.0)).backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, np.array([0.0, 0.25], np.float32))


def test_a_sums_plain_cotangent_is_broadcast_without_ops_and_a_traced_one_is_recorded():
    """expand (a reduction's cotangent, broadcast back over its input) computes a plain cotangent with
    NumPy directly and records a traced one (create_graph) as reshape and broadcast_to ops: both give
    the same numbers, and the traced one differentiates again."""
    from adcore_reverse.vjps.table import expand

    x = np.zeros((2, 3))
    plain = expand(np.array([1.0, 2.0]), x, 1)
    assert plain.__class__ is np.ndarray and np.array_equal(plain, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    g = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    traced = expand(g, x, 1)
    assert traced.op == "broadcast_to" and np.array_equal(traced.value, plain)
    anp.sum(traced * np.arange(6.0).reshape(2, 3)).backward()
    assert np.array_equal(g.grad, [3.0, 12.0])
