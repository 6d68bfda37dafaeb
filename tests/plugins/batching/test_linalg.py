"""The batch rules of contractions, linear algebra, decompositions, FFTs and convolutions against a
loop: for each op's samples, drawn three times (one batch of three examples), the rule on the
stacked inputs (batch axis first, second, last; one input not batched) equals the op on each
example, stacked; then the same through adcore.vmap, nested, under grad and around grad."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from batch_rule_cases import SIZE, batches, cases, check, layouts

import adcore
import adcore.numpy as anp
from adcore.errors import AdcoreError
from adcore.plugins import get_registry

# LAPACK once per matrix of a stack, NumPy's elementwise products, pocketfft once per line: the
# same computation as the loop's, so the same bits
EXACT = {
    "cross", "matrix_power", "inv", "det", "logabsdet", "slogdet_packed", "cholesky",
    "eigh_packed", "eigvalsh", "svd_packed", "svdvals", "qr_packed", "pinv", "eig_packed", "eigvals",
    "fftn", "ifftn", "rfftn", "irfftn",
}  # fmt: skip
# one BLAS product (or einsum) of the whole batch sums in another order than the loop's products,
# one factorization solving every example's b as columns substitutes in another order: the last bits
ROUNDED = {
    "matmul", "dot", "einsum", "vdot", "inner", "tensordot", "kron", "multi_dot",
    "solve", "solve_triangular", "cho_solve", "lstsq_solution", "lstsq_residuals",
    "convolve", "correlate",
}  # fmt: skip

# NumPy's lstsq takes one matrix a, no stack: a batched a is the loop's
LOOPS = {
    "lstsq_solution": lambda dims: dims[0] is not None,
    "lstsq_residuals": lambda dims: dims[0] is not None,
}


DTYPES = (np.float64, np.float32, np.complex128)


@pytest.mark.parametrize(("name", "dtype", "k"), cases(sorted(EXACT | ROUNDED), DTYPES))
def test_rule_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    looped = [not check(name, examples, params, dims, name in EXACT) for dims in layouts(examples)]
    assert looped == [LOOPS.get(name, lambda dims: False)(dims) for dims in layouts(examples)]


# --- through adcore.vmap ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXACT | ROUNDED))
def test_vmap_of_the_op_matches_the_loop(name: str) -> None:
    op = get_registry().ops[name]
    for examples, params in batches(name):
        stacked = [np.stack(inputs) for inputs in zip(*examples)]
        out = adcore.vmap(functools.partial(op, **params))(*stacked)
        expected = np.stack([op.impl(*ex, **params) for ex in examples])
        assert out.dtype == expected.dtype
        if name in EXACT:
            np.testing.assert_array_equal(out, expected)
        else:
            np.testing.assert_allclose(
                out, expected, rtol=1e-12, atol=1e-13 * np.max(np.abs(expected), initial=0)
            )


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    z = anp.tanh(x @ w1 + b1) @ w2
    return -anp.sum(y * anp.log_softmax(z, axis=-1))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_per_example_gradients_of_an_mlp(backend: str) -> None:
    """The issue's benchmark in small: vmap(grad) through matmul's shared-weights products and the
    per-example outer products of the weight gradients."""
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((6, 5)), rng.standard_normal(5), rng.standard_normal((5, 3)))
    x, y = rng.standard_normal((4, 6)), np.eye(3)[[0, 2, 1, 2]]
    grad = adcore.grad(_mlp_loss, backend=backend)
    batched = adcore.vmap(grad, in_axes=(None, 0, 0))(params, x, y)
    looped = [grad(params, x[i], y[i]) for i in range(4)]
    for k, g in enumerate(batched):
        np.testing.assert_allclose(g, np.stack([lg[k] for lg in looped]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_gradient_through_vmap(backend: str) -> None:
    """The rules on an outer transformation's tracers: grad of a vmapped matmul, einsum and solve."""
    rng = np.random.default_rng(1)
    w, xs = rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal((5, 3))

    def batched(w):
        def one(x):
            return anp.linalg.solve(w, anp.einsum("ij,j->i", w, x)) + w @ x

        return anp.sum(anp.tanh(adcore.vmap(one)(xs)))

    def looped(w):
        return sum(anp.sum(anp.tanh(anp.linalg.solve(w, anp.einsum("ij,j->i", w, x)) + w @ x)) for x in xs)

    np.testing.assert_allclose(
        adcore.grad(batched, backend=backend)(w), adcore.grad(looped, backend=backend)(w), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (lambda x: np.ones((4, 2)) @ x, np.ones((2, 3))),  # 3 against 2: matmul's mismatch
        (lambda x: anp.fft.fftn(x, axes=(-2,)), np.ones((2, 4))),  # an axis each example lacks
        (lambda x: anp.fft.fftn(x, s=(2, 2)), np.ones((3, 4))),
        (lambda x: anp.cross(x, x, axisa=-2), np.ones((2, 3))),
        (lambda x: anp.convolve(x, x), np.ones((2, 0))),
    ],
)
def test_calls_the_op_refuses_raise_as_the_loop_does(f, x) -> None:
    """A negative axis past an example's axes would name the batch axis: the rule leaves such calls
    to the loop, whose first example raises the op's error (np.matmul's own ValueError for matmul),
    not a number."""
    with pytest.raises((AdcoreError, ValueError)):
        adcore.vmap(f)(x)


def test_outer_product_matmuls_are_the_loops_bits() -> None:
    """A contracted axis of length 1 (a per-example weight gradient g x^T) batched is einsum's
    one-term sums: the loop's matmul bits, zeros' signs included."""
    rng = np.random.default_rng(2)
    g, x = rng.standard_normal((4, 5, 1)), rng.standard_normal((4, 1, 3))
    g[0, 0, 0], x[1, 0, 2] = -0.0, 0.0
    out, out_dim = get_registry().rules["batch"]["matmul"]((0, 0), g, x)
    expected = np.stack([gi @ xi for gi, xi in zip(g, x)])
    assert out_dim == 0
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


@pytest.mark.parametrize(
    "f",
    [
        lambda a: a @ [1.0, 2.0],
        lambda a: np.dot([1.0, -1.0], a),
        lambda a: anp.linalg.solve(a, [1.0, 2.0]),
        lambda a: anp.einsum("ij,j->i", a, [1.0, 2.0]),
        lambda a: anp.convolve(a[0], [1.0, 2.0]),
        lambda a: np.dot(a, 2.0),
    ],
)
def test_constants_given_as_lists_and_numbers(f) -> None:
    a = np.random.default_rng(3).uniform(-1, 1, (4, 2, 2)) + 2 * np.eye(2)
    np.testing.assert_allclose(adcore.vmap(f)(a), np.stack([f(x) for x in a]), rtol=1e-14)


def test_nested_vmap() -> None:
    """The rules on an outer vmap's tracers: batched matmul of batched matrices and a shared vector,
    and a batched solve with a shared matrix (out_dim past the batch)."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 5))
    out = adcore.vmap(adcore.vmap(lambda x, y: x @ y, in_axes=(0, None)), in_axes=(None, 0))(a[0], b)
    np.testing.assert_allclose(out, np.einsum("jkl,il->ijk", a[0], b), rtol=1e-12)
    m, xs = rng.standard_normal((4, 4)) + 4 * np.eye(4), rng.standard_normal((3, 2, 4))
    out = adcore.vmap(adcore.vmap(lambda x: anp.linalg.solve(m, x)), in_axes=1)(xs)
    np.testing.assert_allclose(out, np.linalg.solve(m, np.moveaxis(xs, 1, 0)[..., None])[..., 0], rtol=1e-12)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(EXACT | ROUNDED))
def test_gradient_of_the_vmapped_op(name: str, backend: str) -> None:
    """Each rule on an outer transformation's tracers: the gradient of a weighted sum of the
    vmapped op equals the gradient of the same sum over a loop."""
    op = get_registry().ops[name]
    examples, params = batches(name)[-1 if name in ("lstsq_solution", "lstsq_residuals") else 0]
    stacked = tuple(np.stack(inputs) for inputs in zip(*examples))
    shape = np.shape(np.stack([op.impl(*ex, **params) for ex in examples]))
    weights = np.random.default_rng(5).uniform(-1, 1, shape)

    def batched(*xs):
        return anp.sum(anp.real(adcore.vmap(functools.partial(op, **params))(*xs)) * weights)

    def looped(*xs):
        outs = [op(*(x[i] for x in xs), **params) for i in range(SIZE)]
        return anp.sum(anp.real(anp.stack(outs)) * weights)

    argnums = tuple(range(len(stacked)))
    got = adcore.grad(batched, argnums=argnums, backend=backend)(*stacked)
    expected = adcore.grad(looped, argnums=argnums, backend=backend)(*stacked)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(EXACT | ROUNDED))
def test_per_example_gradients_of_the_op(name: str, backend: str) -> None:
    """vmap(grad) of a weighted sum of the op: the op's derivative rules run on batched values
    (through these rules, or the loop where a rule reads a value), equal to a loop of grad."""
    op = get_registry().ops[name]
    examples, params = batches(name)[-1 if name in ("lstsq_solution", "lstsq_residuals") else 0]
    weights = np.random.default_rng(5).uniform(-1, 1, np.shape(op.impl(*examples[0], **params)))

    def loss(*xs):
        return anp.sum(anp.real(op(*xs, **params)) * weights)

    grad = adcore.grad(loss, argnums=tuple(range(len(examples[0]))), backend=backend)
    got = adcore.vmap(grad)(*(np.stack(inputs) for inputs in zip(*examples)))
    expected = [grad(*ex) for ex in examples]
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, np.stack([e[k] for e in expected]), rtol=1e-10, atol=1e-12)
