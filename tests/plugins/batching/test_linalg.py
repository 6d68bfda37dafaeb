"""The batch rules of contractions, linear algebra, decompositions and FFTs against a loop: for each
op's samples, drawn three times (one batch of three examples), the rule on the stacked inputs
(batch axis first, second, last; one input not batched) equals the op on each example, stacked."""

from __future__ import annotations

import numpy as np
import pytest

from adcore.plugins import get_registry

SIZE = 3

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


def batches(name: str, dtype: type = np.float64) -> list:
    """(examples, params) per sample of op `name`: the sample drawn SIZE times, same shapes and params."""
    op = get_registry().ops[name]
    draws = [op.samples(np.random.default_rng(seed), np.dtype(dtype)) for seed in range(SIZE)]
    out = []
    for group in zip(*draws):
        assert all(s.params == group[0].params for s in group)
        out.append(([tuple(np.asarray(x) for x in s.args) for s in group], dict(group[0].params)))
    return out


def layouts(examples: list) -> list[tuple]:
    """Batch axes for every input: first, second, last (as far as each example has axes), and with
    two inputs or more each left unbatched in turn."""
    ndims = [np.ndim(x) for x in examples[0]]
    out = [tuple(min(position, n) for n in ndims) for position in (0, 1)]
    out.append(tuple(ndims))
    if len(ndims) > 1:
        out += [tuple(None if i == j else 0 for i in range(len(ndims))) for j in range(len(ndims))]
    return list(dict.fromkeys(out))


def example_call(name: str, example: tuple, shared: tuple, dims: tuple, params: dict):
    """The op on one example, with the unbatched inputs (dims None) the shared ones."""
    args = (x if d is not None else y for x, y, d in zip(example, shared, dims))
    return get_registry().ops[name].impl(*args, **params)


def check(name: str, examples: list, params: dict, dims: tuple) -> bool:
    """Whether the rule covers the call (False: NotImplemented); asserts its value if it does."""
    rule = get_registry().rules["batch"][name]
    shared = examples[0]
    inputs = [
        y if d is None else np.stack([ex[i] for ex in examples], axis=d)
        for i, (y, d) in enumerate(zip(shared, dims))
    ]
    expected = np.stack([example_call(name, ex, shared, dims, params) for ex in examples])
    result = rule(dims, *inputs, **params)
    if result is NotImplemented:
        return False
    out, out_dim = result
    out = np.moveaxis(np.asarray(out), out_dim, 0)
    assert out.shape == expected.shape and out.dtype == expected.dtype, (out.shape, expected.shape)
    if name in EXACT:
        np.testing.assert_array_equal(out, expected)
    else:
        tol = RTOL[out.dtype.char]
        np.testing.assert_allclose(out, expected, rtol=tol, atol=tol * np.max(np.abs(expected), initial=0.0))
    return True


RTOL = {"d": 1e-12, "D": 1e-12, "f": 1e-5, "F": 1e-5}
DTYPES = (np.float64, np.float32, np.complex128)


def cases(names) -> list:
    registry = get_registry()
    return [
        pytest.param(name, dtype, k, id=f"{name}-{np.dtype(dtype).name}-{k}")
        for name in sorted(names)
        for dtype in DTYPES
        if np.dtype(dtype).kind != "c" or registry.ops[name].accepts_complex
        for k in range(len(batches(name, dtype)))
    ]


@pytest.mark.parametrize(("name", "dtype", "k"), cases(EXACT | ROUNDED))
def test_rule_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    looped = [not check(name, examples, params, dims) for dims in layouts(examples)]
    assert looped == [LOOPS.get(name, lambda dims: False)(dims) for dims in layouts(examples)]
