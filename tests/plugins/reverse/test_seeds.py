"""The seeds' worked examples, through both doors: `adcore.differentiate`/`grad` and `Tensor.backward`.

Seed 001 (测试用例 1-3): f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (2, 5). By hand,
df/dx1 = 1/x1 + x2 = 5.5 and df/dx2 = x1 - cos(x2) = 2 - cos(5) = 1.71633781453677...;
the seed prints 5.5 and 1.716.

Seed 003 (应用示例): d = (a*b)**c with a=10, b=5, c=2 prints gradients 500.0 and 1000.0.

Seed 001 (张量广播规律): gradients of broadcast binary ops are reduced back to each
input's shape, derived there by hand for a 2x1 with a 2x2 (add and multiply) and a
2x1 matmul a 4x1x3.
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse import Tensor

import adcore

# --- f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (2, 5), seed 001 测试用例 ---------------------
X1, X2 = 2.0, 5.0
DF_DX1 = 1 / X1 + X2  # = 5.5, the seed's oracle
DF_DX2 = X1 - np.cos(X2)  # = 1.71633781453677..., the seed prints 1.716


def f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def test_f_through_differentiate_both_arguments():
    g1, g2 = adcore.differentiate(f, argnums=(0, 1))(X1, X2)
    assert g1 == pytest.approx(DF_DX1, rel=1e-15)
    assert g2 == pytest.approx(DF_DX2, rel=1e-15)


def test_f_through_grad_one_argument_at_a_time():
    assert adcore.grad(f, argnums=0)(X1, X2) == pytest.approx(DF_DX1, rel=1e-15)
    assert adcore.grad(f, argnums=1)(X1, X2) == pytest.approx(DF_DX2, rel=1e-15)


def test_case1_both_tensors():
    x1 = Tensor(2, requires_grad=True)
    x2 = Tensor(5, requires_grad=True)
    out = f(x1, x2)
    out.backward()
    assert float(out.value) == pytest.approx(np.log(2) + 10 - np.sin(5))
    assert x1.grad == pytest.approx(DF_DX1, rel=1e-15)
    assert x2.grad == pytest.approx(DF_DX2, rel=1e-15)
    # the seed's printed oracle, to the digits it prints
    assert (round(float(x1.grad), 5), round(float(x2.grad), 3)) == (5.5, 1.716)
    assert x2.grad == pytest.approx(1.71633781453677, abs=1e-14)


def test_case2_x2_a_plain_constant():
    x1 = Tensor(2, requires_grad=True)
    f(x1, 5).backward()
    assert x1.grad == pytest.approx(DF_DX1, rel=1e-15)


def test_case3_x1_a_plain_constant():
    x2 = Tensor(5, requires_grad=True)
    f(2, x2).backward()
    assert x2.grad == pytest.approx(DF_DX2, rel=1e-15)


def test_case3_through_grad_with_x1_left_out_of_argnums():
    assert adcore.grad(f, argnums=1)(2, 5.0) == pytest.approx(DF_DX2, rel=1e-15)


# --- (a*b)**c at a=10, b=5, c=2, seed 003 ------------------------------------------------------
# d/da = c (ab)^(c-1) b = 500, d/db = c (ab)^(c-1) a = 1000, d/dc = (ab)^c log(ab) = 2500 log 50


def test_power_of_product_with_constant_exponent():
    a = Tensor(10.0, requires_grad=True)
    b = Tensor(5.0, requires_grad=True)
    d = (a * b) ** 2
    d.backward()
    assert float(d.value) == 2500.0
    assert a.grad == pytest.approx(500.0, rel=1e-15)
    assert b.grad == pytest.approx(1000.0, rel=1e-15)


def test_power_of_product_with_exponent_a_tensor_too():
    a, b, c = (Tensor(v, requires_grad=True) for v in (10.0, 5.0, 2.0))
    ((a * b) ** c).backward()
    assert (a.grad, b.grad) == (pytest.approx(500.0), pytest.approx(1000.0))
    assert c.grad == pytest.approx(2500 * np.log(50), rel=1e-14)


def test_power_of_product_through_grad():
    grads = adcore.grad(lambda a, b, c: (a * b) ** c, argnums=(0, 1, 2))(10.0, 5.0, 2.0)
    np.testing.assert_allclose(grads, [500.0, 1000.0, 2500 * np.log(50)], rtol=1e-14)


# --- broadcasting, seed 001 张量广播规律 ---------------------------------------------------------
# The upstream gradient ∇c l is a fixed array G of c's shape: l = sum(G * c), so that
# backward(grad=G) and grad(lambda a, b: sum(G * op(a, b))) both mean "∇c l = G".

RNG = np.random.default_rng(1)
A21 = RNG.normal(size=(2, 1))
B22 = RNG.normal(size=(2, 2))
G22 = RNG.normal(size=(2, 2))
B413 = RNG.normal(size=(4, 1, 3))
G423 = RNG.normal(size=(4, 2, 3))


def _elementwise_expected(op):
    """The seed's reductions: add ∇a = ReducedSum(∇c, dim=1), ∇b = ∇c;
    multiply ∇a = ReducedSum(∇c ⊗ b, dim=1), ∇b = ∇c ⊗ a (a keeps its 2x1 shape)."""
    if op == "add":
        return G22.sum(axis=1, keepdims=True), G22
    return (G22 * B22).sum(axis=1, keepdims=True), G22 * A21


def _apply(op, a, b):
    return a + b if op == "add" else a * b


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_elementwise_2x1_with_2x2_through_backward(op):
    a = Tensor(A21, requires_grad=True)
    b = Tensor(B22, requires_grad=True)
    c = _apply(op, a, b)
    assert c.shape == (2, 2)
    c.backward(grad=G22)
    ga, gb = _elementwise_expected(op)
    assert a.grad.shape == (2, 1) and b.grad.shape == (2, 2)
    np.testing.assert_allclose(a.grad, ga, rtol=1e-14)
    np.testing.assert_allclose(b.grad, gb, rtol=1e-14)


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_elementwise_2x1_with_2x2_through_grad(op):
    ga, gb = adcore.grad(lambda a, b: np.sum(G22 * _apply(op, a, b)), argnums=(0, 1))(A21, B22)
    ea, eb = _elementwise_expected(op)
    np.testing.assert_allclose(ga, ea, rtol=1e-14)
    np.testing.assert_allclose(gb, eb, rtol=1e-14)


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_elementwise_2x1_with_2x2_through_jacobian(op):
    ja, jb = adcore.jacobian(lambda a, b: _apply(op, a, b), argnums=(0, 1))(A21, B22)
    assert ja.shape == (2, 2, 2, 1) and jb.shape == (2, 2, 2, 2)
    ea, eb = _elementwise_expected(op)
    np.testing.assert_allclose(np.tensordot(G22, ja, axes=2), ea, rtol=1e-14)
    np.testing.assert_allclose(np.tensordot(G22, jb, axes=2), eb, rtol=1e-14)


def test_elementwise_seed_formula_for_single_entries():
    # ∂l/∂x1 = ∂l/∂ỹ11 y11 + ∂l/∂ỹ12 y12 and ∂l/∂y11 = ∂l/∂ỹ11 x1, written out as in the seed
    a = Tensor(A21, requires_grad=True)
    b = Tensor(B22, requires_grad=True)
    (a * b).backward(grad=G22)
    assert a.grad[0, 0] == pytest.approx(G22[0, 0] * B22[0, 0] + G22[0, 1] * B22[0, 1])
    assert b.grad[0, 0] == pytest.approx(G22[0, 0] * A21[0, 0])


def _matmul_expected():
    """The seed's reductions: ∇a = ReducedSum(∇c × bᵀ, dim=0), ∇b = aᵀ × ∇c (ᵀ swaps the last two axes)."""
    ga = np.sum(G423 @ np.swapaxes(B413, -1, -2), axis=0)
    gb = A21.T @ G423
    return ga, gb


def test_matmul_2x1_with_4x1x3_through_backward():
    a = Tensor(A21, requires_grad=True)
    b = Tensor(B413, requires_grad=True)
    c = a @ b
    assert c.shape == (4, 2, 3)
    c.backward(grad=G423)
    ga, gb = _matmul_expected()
    assert a.grad.shape == (2, 1) and b.grad.shape == (4, 1, 3)
    np.testing.assert_allclose(a.grad, ga, rtol=1e-13)
    np.testing.assert_allclose(b.grad, gb, rtol=1e-13)


def test_matmul_seed_formula_for_single_entries():
    # ∂l/∂x1 = Σ_i Σ_j ∂l/∂z_1ij y_ij and ∂l/∂y11 = Σ_i ∂l/∂z_i11 x_i, as written in the seed
    # (z_kij is c[i, k, j] and y_ij is b[i, 0, j] in NumPy's indexing)
    a = Tensor(A21, requires_grad=True)
    b = Tensor(B413, requires_grad=True)
    (a @ b).backward(grad=G423)
    assert a.grad[0, 0] == pytest.approx(np.sum(G423[:, 0, :] * B413[:, 0, :]))
    assert b.grad[0, 0, 0] == pytest.approx(np.sum(G423[0, :, 0] * A21[:, 0]))


def test_matmul_2x1_with_4x1x3_through_grad():
    ga, gb = adcore.grad(lambda a, b: np.sum(G423 * (a @ b)), argnums=(0, 1))(A21, B413)
    ea, eb = _matmul_expected()
    np.testing.assert_allclose(ga, ea, rtol=1e-13)
    np.testing.assert_allclose(gb, eb, rtol=1e-13)


def test_matmul_2x1_with_4x1x3_through_jacobian():
    ja, jb = adcore.jacobian(lambda a, b: a @ b, argnums=(0, 1))(A21, B413)
    assert ja.shape == (4, 2, 3, 2, 1) and jb.shape == (4, 2, 3, 4, 1, 3)
    ea, eb = _matmul_expected()
    np.testing.assert_allclose(np.tensordot(G423, ja, axes=3), ea, rtol=1e-13)
    np.testing.assert_allclose(np.tensordot(G423, jb, axes=3), eb, rtol=1e-13)
