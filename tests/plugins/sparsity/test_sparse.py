"""adcore-sparsity's sparse Jacobians and Hessians (jacobian/hessian(sparse=True), prepare_*, *_sparsity)
against the dense ones of every backend, the colorings' counts, and every typed error."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from adcore_reverse.backend import ReverseBackend

import adcore

EXACT = ("forward", "reverse")


# --- the problems: functions of one array with known patterns -----------------------------------


def tridiagonal(x):
    """A discretised 1-D reaction-diffusion: output i reads x[i-1], x[i], x[i+1]."""
    inner = x[:-2] - 2 * x[1:-1] + x[2:] + np.sin(x[1:-1])
    return np.concatenate([x[:1] ** 2 + x[1:2], inner, x[-1:] * x[-2:-1]])


def tridiagonal_pattern(n):
    return sp.csr_array(sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1]).astype(bool))


def laplacian(u):
    """The periodic 5-point Laplacian of a 2-D grid (u of shape (N, N)) plus a cubic reaction."""
    neighbours = (
        np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1)
    )
    return neighbours - 4 * u + u**3


def laplacian_pattern(N):
    index = np.arange(N * N).reshape(N, N)
    rows, cols = [], []
    for shift, axis in ((0, 0), (1, 0), (-1, 0), (1, 1), (-1, 1)):
        rows.append(index.ravel())
        cols.append(np.roll(index, -shift, axis=axis).ravel())
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(N * N, N * N))


def arrow(x):
    """A dense first row over a diagonal: rows 1.. share no column, so 2 row colors (n column colors)."""
    return np.concatenate([np.sum(np.sin(x), keepdims=True), x[1:] ** 2])


def arrow_pattern(n):
    dense = np.eye(n, dtype=bool)
    dense[0] = True
    return sp.csr_array(dense)


def block_diagonal(x, blocks=4, size=3):
    """Independent nonlinear blocks: output block k reads input block k only."""
    w = np.arange(1.0, size * size + 1).reshape(size, size) / 10
    xb = x.reshape(blocks, size)
    return np.tanh(xb @ w.T + xb**2).reshape(-1)


def block_pattern(blocks=4, size=3):
    return sp.csr_array(sp.block_diag([np.ones((size, size), dtype=bool)] * blocks).astype(bool))


PROBLEMS = {
    "tridiagonal": (tridiagonal, lambda: np.linspace(0.3, 1.7, 9), lambda: tridiagonal_pattern(9)),
    "laplacian": (laplacian, lambda: np.linspace(-1, 1, 36).reshape(6, 6), lambda: laplacian_pattern(6)),
    "arrow": (arrow, lambda: np.linspace(0.2, 1.4, 7), lambda: arrow_pattern(7)),
    "block_diagonal": (block_diagonal, lambda: np.linspace(-0.9, 1.1, 12), lambda: block_pattern()),
}


def dense_jacobian(f, x, backend="reverse"):
    jac = adcore.jacobian(f, backend=backend)(x)
    return np.asarray(jac).reshape(-1, x.size)


# --- compressed evaluation against the dense Jacobians --------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_detected_sparse_jacobian_equals_the_dense_one_exactly(problem, backend):
    f, point, pattern = PROBLEMS[problem]
    x = point()
    jac = adcore.jacobian(f, backend=backend, sparse=True)(x)
    assert isinstance(jac, sp.csr_array) and jac.dtype == np.float64
    assert jac.shape == (f(x).size, x.size)
    np.testing.assert_array_equal(jac.toarray(), dense_jacobian(f, x, backend))
    # the structure is the pattern: a superset of the true non-zeros, the analytic one here
    detected = adcore.jacobian_sparsity(f)(x)
    assert (detected != pattern()).nnz == 0


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_numeric_sparse_jacobian_agrees_within_its_error(problem):
    f, point, _ = PROBLEMS[problem]
    x = point()
    jac = adcore.jacobian(f, backend="numeric", sparse=True)(x)
    np.testing.assert_allclose(jac.toarray(), dense_jacobian(f, x), rtol=1e-7, atol=1e-8)


def test_symbolic_sparse_jacobian_is_its_dense_one_restricted_to_the_pattern():
    x = np.linspace(0.3, 1.7, 6)
    jac = adcore.jacobian(tridiagonal, backend="symbolic", sparse=True)(x)
    np.testing.assert_allclose(jac.toarray(), dense_jacobian(tridiagonal, x), rtol=1e-14, atol=0)
    assert (jac != 0).sum() <= tridiagonal_pattern(6).nnz


@pytest.mark.parametrize(
    ("problem", "backend", "kind", "colors"),
    [
        ("tridiagonal", "forward", "column", 3),
        ("tridiagonal", "reverse", "row", 3),
        ("arrow", "reverse", "row", 2),
        ("block_diagonal", "forward", "column", 3),
        ("block_diagonal", "reverse", "row", 3),
    ],
)
def test_the_backend_picks_its_coloring_and_the_known_color_counts(problem, backend, kind, colors):
    f, point, _ = PROBLEMS[problem]
    prep = adcore.prepare_jacobian(f, point(), backend=backend)
    assert prep.coloring.kind == kind
    assert prep.coloring.ncolors == colors


def test_the_2d_laplacian_stencil_takes_at_most_5_colors():
    u = np.linspace(-1, 1, 100).reshape(10, 10)
    prep = adcore.prepare_jacobian(laplacian, u, backend="forward")
    assert prep.coloring.ncolors <= 5
    np.testing.assert_array_equal(prep(u).toarray(), dense_jacobian(laplacian, u, "forward"))


def test_symbolic_has_no_coloring_and_a_prepared_symbolic_jacobian_still_works():
    x = np.linspace(0.3, 1.7, 5)
    prep = adcore.prepare_jacobian(tridiagonal, x, backend="symbolic")
    assert prep.coloring is None
    np.testing.assert_allclose(prep(x + 1).toarray(), dense_jacobian(tridiagonal, x + 1), rtol=1e-14)


def test_float32_in_gives_a_float32_sparse_jacobian():
    x = np.linspace(0.3, 1.7, 9).astype(np.float32)
    for backend in ("forward", "reverse", "numeric"):
        jac = adcore.jacobian(tridiagonal, backend=backend, sparse=True)(x)
        assert jac.dtype == np.float32


def test_a_sparse_jacobian_of_a_function_with_keyword_arguments_and_an_int_argument():
    def shifted(x, k, scale=1.0):
        return scale * np.roll(x, k) * x

    x = np.linspace(0.5, 1.5, 8)
    jac = adcore.jacobian(shifted, sparse=True, backend="forward")(x, 2, scale=3.0)
    np.testing.assert_array_equal(jac.toarray(), dense_jacobian(lambda x: shifted(x, 2, scale=3.0), x))


@pytest.mark.parametrize("backend", ["forward", "reverse", "numeric", "symbolic"])
def test_every_backend_takes_index_arrays_and_strings_next_to_the_differentiated_argument(backend):
    def picked(x, mode, index):
        return np.sin(x[index]) if mode == "sin" else np.cos(x)

    x, index = np.linspace(0.5, 1.5, 5), np.array([0, 2, 4])
    jac = adcore.jacobian(picked, backend=backend, sparse=True, argnums=0)(x, "sin", index)
    expected = np.zeros((3, 5))
    expected[np.arange(3), index] = np.cos(x[index])
    np.testing.assert_allclose(jac.toarray(), expected, rtol=1e-7 if backend == "numeric" else 1e-15)
    hess = adcore.hessian(lambda x, i: np.sum(x[i] ** 3), sparse=True, outer=backend)(x, index)
    np.testing.assert_allclose(hess.diagonal(), np.where(np.isin(np.arange(5), index), 6 * x, 0), rtol=1e-6)


def test_chunk_size_splits_the_colors_over_several_jvp_calls(monkeypatch):
    be = adcore.get_backend("forward")
    calls = []
    original = type(be).jvp

    def counted(self, f, args, tangents, **options):
        calls.append(len(tangents[0]))
        return original(self, f, args, tangents, **options)

    monkeypatch.setattr(type(be), "jvp", counted)
    x = np.linspace(-1, 1, 36).reshape(6, 6)
    expected = dense_jacobian(laplacian, x)
    ncolors = adcore.prepare_jacobian(laplacian, x, backend="forward").coloring.ncolors
    jac = adcore.jacobian(laplacian, backend="forward", sparse=True, chunk_size=2)(x)
    np.testing.assert_array_equal(jac.toarray(), expected)
    assert calls == [2] * (ncolors // 2) + [1] * (ncolors % 2)
    calls.clear()
    adcore.jacobian(laplacian, backend="forward", sparse=True)(x)
    assert calls == [ncolors]  # without chunk_size: one jvp call, every color in its batch


# --- given patterns ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("form", ["csr", "coo_matrix", "dense bool"])
def test_a_given_pattern_skips_detection(backend, form, monkeypatch):
    x = np.linspace(0.3, 1.7, 9)
    pattern = tridiagonal_pattern(9)
    given = {"csr": pattern, "coo_matrix": sp.coo_matrix(pattern), "dense bool": pattern.toarray()}[form]
    be = adcore.get_backend("sparsity")
    monkeypatch.setattr(type(be), "jacobian_pattern", lambda *a, **k: pytest.fail("detection ran"))
    jac = adcore.jacobian(tridiagonal, backend=backend, sparse=True, sparsity=given)(x)
    np.testing.assert_array_equal(jac.toarray(), dense_jacobian(tridiagonal, x))
    assert (jac.astype(bool) != pattern).nnz == 0


def test_a_given_superset_pattern_gives_the_same_values():
    x = np.linspace(0.3, 1.7, 9)
    band = sp.csr_array(sp.diags([np.ones(9 - k) for k in (2, 1, 0, 1, 2)], [-2, -1, 0, 1, 2]).astype(bool))
    jac = adcore.jacobian(tridiagonal, backend="forward", sparse=True, sparsity=band)(x)
    np.testing.assert_array_equal(jac.toarray(), dense_jacobian(tridiagonal, x))


def test_a_given_pattern_of_the_wrong_shape_is_a_typed_error():
    x = np.linspace(0.3, 1.7, 9)
    with pytest.raises(adcore.InvalidInputError, match=r"differentiated argument has 9 elements"):
        adcore.jacobian(tridiagonal, sparse=True, sparsity=tridiagonal_pattern(8))(x)
    wrong_rows = sp.csr_array(np.ones((5, 9), dtype=bool))
    for backend in ("forward", "reverse", "symbolic"):
        with pytest.raises(adcore.InvalidInputError, match=r"output has 9 element\(s\) but .* 5 rows"):
            adcore.jacobian(tridiagonal, backend=backend, sparse=True, sparsity=wrong_rows)(x)
    with pytest.raises(adcore.InvalidInputError, match="2-D bool array"):
        adcore.jacobian(tridiagonal, sparse=True, sparsity=np.ones((9, 9)))
    with pytest.raises(adcore.InvalidInputError, match="2-D bool array"):
        adcore.jacobian(tridiagonal, sparse=True, sparsity="tridiagonal")


def test_a_given_pattern_missing_an_entry_is_caught_on_the_dense_path():
    x = np.linspace(0.3, 1.7, 6)
    diagonal = sp.csr_array(sp.eye(6, dtype=bool))
    with pytest.raises(adcore.InvalidValueError, match=r"sparsity= pattern misses .* first at \(0, 1\)"):
        adcore.jacobian(tridiagonal, backend="symbolic", sparse=True, sparsity=diagonal)(x)


def test_the_detected_pattern_never_misses_an_entry():
    """The compressed paths trust the pattern (a missed entry cannot be seen cheaply): the default,
    detected pattern must hold every non-zero, and the values then agree."""
    rng = np.random.default_rng(0)
    for name, (f, point, _) in sorted(PROBLEMS.items()):
        x = point() + rng.uniform(-0.1, 0.1, point().shape)
        nonzero = sp.csr_array(dense_jacobian(f, x) != 0)
        detected = adcore.jacobian_sparsity(f)(x)
        assert (nonzero > detected).nnz == 0, name


# --- Hessians --------------------------------------------------------------------------------------


def arrow_energy(x):
    return np.sum(x[0] * x[1:]) + np.sum(x**3)


def chain_energy(x):
    return np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum((1 - x) ** 2)


def stencil_energy(u):
    dx, dy = np.diff(u, axis=0), np.diff(u, axis=1)
    return 0.5 * np.sum(dx**2) + 0.5 * np.sum(dy**2) + np.sum(u**4) / 4


HESSIANS = {
    "arrow": (arrow_energy, lambda: np.linspace(0.2, 1.4, 7)),
    "chain": (chain_energy, lambda: np.linspace(-0.5, 1.5, 8)),
    "stencil": (stencil_energy, lambda: np.linspace(-1, 1, 25).reshape(5, 5)),
}


@pytest.mark.parametrize("problem", sorted(HESSIANS))
def test_sparse_hessian_equals_the_dense_one(problem):
    f, point = HESSIANS[problem]
    x = point()
    hess = adcore.hessian(f, sparse=True)(x)
    dense = np.asarray(adcore.hessian(f)(x)).reshape(x.size, x.size)
    assert isinstance(hess, sp.csr_array) and hess.shape == (x.size, x.size)
    np.testing.assert_array_equal(hess.toarray(), dense)


def test_sparse_hessian_on_other_inner_and_outer_backends():
    x = np.linspace(-0.5, 1.5, 8)
    dense = np.asarray(adcore.hessian(chain_energy)(x))
    for inner, outer in (("forward", "forward"), ("reverse", "reverse")):
        hess = adcore.hessian(chain_energy, sparse=True, inner=inner, outer=outer)(x)
        np.testing.assert_allclose(hess.toarray(), dense, rtol=1e-14, atol=1e-14)
    hess = adcore.hessian(chain_energy, sparse=True, outer="numeric")(x)
    np.testing.assert_allclose(hess.toarray(), dense, rtol=1e-6, atol=1e-7)


def test_the_arrow_hessian_takes_two_star_colors_in_one_forward_pass(monkeypatch):
    be = adcore.get_backend("forward")
    calls = []
    original = type(be).jvp

    def counted(self, f, args, tangents, **options):
        calls.append(len(tangents[0]))
        return original(self, f, args, tangents, **options)

    x = np.linspace(0.2, 1.4, 7)
    prep = adcore.prepare_hessian(arrow_energy, x)
    assert prep.coloring.kind == "star" and prep.coloring.ncolors == 2
    monkeypatch.setattr(type(be), "jvp", counted)
    prep(x)
    assert calls == [2]


def test_a_given_hessian_pattern_is_made_symmetric_and_checked_for_its_shape():
    x = np.linspace(-0.5, 1.5, 8)
    upper = sp.csr_array(sp.diags([np.ones(8), np.ones(7)], [0, 1]).astype(bool))
    hess = adcore.hessian(chain_energy, sparse=True, sparsity=upper)(x)
    np.testing.assert_array_equal(hess.toarray(), np.asarray(adcore.hessian(chain_energy)(x)))
    with pytest.raises(adcore.InvalidInputError, match="must be square"):
        adcore.hessian(chain_energy, sparse=True, sparsity=np.ones((8, 7), dtype=bool))
    with pytest.raises(adcore.InvalidInputError, match="differentiated argument has 8 elements"):
        adcore.hessian(chain_energy, sparse=True, sparsity=np.eye(9, dtype=bool))(x)


def test_the_hessian_of_a_non_scalar_function_is_a_typed_error():
    with pytest.raises(adcore.NonScalarOutputError):
        adcore.hessian(np.sin, sparse=True, sparsity=np.eye(3, dtype=bool))(np.ones(3))


# --- prepared derivatives ------------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch):
    """Counts of the sparsity backend's detections and colorings."""
    be = adcore.get_backend("sparsity")
    counts = {"jacobian_pattern": 0, "hessian_pattern": 0, "color": 0}
    for name in counts:
        original = getattr(type(be), name)

        def wrapped(self, *args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(type(be), name, wrapped)
    return counts


@pytest.mark.parametrize("backend", ["forward", "reverse", "numeric"])
def test_a_prepared_jacobian_detects_and_colors_once(backend, counted):
    x = np.linspace(-1, 1, 36).reshape(6, 6)
    prep = adcore.prepare_jacobian(laplacian, x, backend=backend)
    assert counted == {"jacobian_pattern": 1, "hessian_pattern": 0, "color": 1}
    assert isinstance(prep, adcore.PreparedJacobian) and prep.pattern.shape == (36, 36)
    rng = np.random.default_rng(1)
    for _ in range(3):
        y = rng.normal(size=(6, 6))
        jac = prep(y)
        if backend == "numeric":
            np.testing.assert_allclose(jac.toarray(), dense_jacobian(laplacian, y), rtol=1e-7, atol=1e-8)
        else:
            np.testing.assert_array_equal(jac.toarray(), dense_jacobian(laplacian, y))
    assert counted == {"jacobian_pattern": 1, "hessian_pattern": 0, "color": 1}


def test_a_prepared_hessian_detects_and_colors_once(counted):
    x = np.linspace(-1, 1, 25).reshape(5, 5)
    prep = adcore.prepare_hessian(stencil_energy, x)
    assert isinstance(prep, adcore.PreparedHessian)
    for y in (x, x**2, -x):
        np.testing.assert_array_equal(
            prep(y).toarray(), np.asarray(adcore.hessian(stencil_energy)(y)).reshape(25, 25)
        )
    assert counted == {"jacobian_pattern": 0, "hessian_pattern": 1, "color": 1}


def scaled_gather(x, index, weights):
    """Reads x at an int index array, scaled by float weights (not differentiated)."""
    return weights * x[index] ** 2


def test_a_prepared_call_checks_its_arguments_and_stays_usable():
    x, index, weights = np.linspace(0.5, 1.5, 6), np.array([0, 2, 4, 5]), np.ones(4)
    prep = adcore.prepare_jacobian(scaled_gather, x, index, weights, backend="forward")

    def expected(x, weights):
        return dense_jacobian(lambda x: scaled_gather(x, index, weights), x)

    # float arguments not differentiated may change: a global pattern holds for all of them
    new_weights = np.array([2.0, 0.0, -1.0, 3.0])
    np.testing.assert_array_equal(prep(x, index, new_weights).toarray(), expected(x, new_weights))
    with pytest.raises(adcore.InvalidInputError, match=r"argument 0 .* shape \(7,\)"):
        prep(np.ones(7), index, weights)
    with pytest.raises(adcore.InvalidInputError, match=r"dtype float32"):
        prep(x.astype(np.float32), index, weights)
    with pytest.raises(adcore.InvalidInputError, match=r"argument 1 differs"):
        prep(x, np.array([1, 2, 4, 5]), weights)
    with pytest.raises(adcore.InvalidInputError, match=r"argument 2 .* shape \(5,\)"):
        prep(x, index, np.ones(5))
    with pytest.raises(adcore.InvalidInputError, match=r"2 positional argument\(s\) but prepared with 3"):
        prep(x, index)
    with pytest.raises(adcore.InvalidInputError, match="dtype int64"):
        prep(np.arange(6), index, weights)
    # nothing was broken by the errors
    np.testing.assert_array_equal(prep(2 * x, index, weights).toarray(), expected(2 * x, weights))


def test_a_float_argument_s_zeros_at_preparation_do_not_shape_the_pattern():
    """A matrix passed as an argument may change between calls: its zeros when prepared (the
    identity) must not leave out the entries a full matrix has later."""
    x = np.linspace(0.5, 1.5, 4)
    prep = adcore.prepare_jacobian(lambda x, m, c: np.real(c) * (m @ np.sin(x)), x, np.eye(4), 1 + 0j)
    full = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(prep(x, full, 2 + 0j).toarray(), 2 * full * np.cos(x))


def test_a_prepared_call_sees_an_index_array_changed_in_place():
    x, index, weights = np.linspace(0.5, 1.5, 6), np.array([0, 2, 4, 5]), np.ones(4)
    prep = adcore.prepare_jacobian(scaled_gather, x, index, weights, backend="forward")
    index[0] = 1
    with pytest.raises(adcore.InvalidInputError, match="argument 1 differs"):
        prep(x, index, weights)


def test_a_prepared_jacobian_with_a_given_pattern_and_its_repr():
    x = np.linspace(0.3, 1.7, 9)
    prep = adcore.prepare_jacobian(tridiagonal, x, backend="forward", sparsity=tridiagonal_pattern(9))
    assert prep.pattern.nnz == 25 and "3 column colors" in repr(prep)
    np.testing.assert_array_equal(prep(x**2).toarray(), dense_jacobian(tridiagonal, x**2))


def test_prepare_refuses_a_local_pattern_and_dense_preparation():
    x = np.linspace(-1, 1, 6)
    with pytest.raises(adcore.InvalidInputError, match="holds at the point it was detected at only"):
        adcore.prepare_jacobian(np.abs, x, local=True)
    with pytest.raises(adcore.InvalidInputError, match="holds at the point it was detected at only"):
        adcore.prepare_hessian(np.sum, x, local=True)
    with pytest.raises(adcore.InvalidInputError, match="prepares sparse derivatives"):
        adcore.prepare_jacobian(np.abs, x, sparse=False)


# --- local patterns -------------------------------------------------------------------------------


def ramp(x):
    """Each output reads its neighbour only where x > 0: the global pattern has both, a local one
    only the branch taken."""
    return np.where(x > 0, x * np.roll(x, 1), x**2)


def test_a_local_pattern_follows_the_branch_taken_and_the_one_shot_jacobian_takes_it():
    x = np.array([1.0, -1.0, 2.0, -2.0, 0.5])
    glob = adcore.jacobian_sparsity(ramp)(x)
    local = adcore.jacobian_sparsity(ramp, local=True)(x)
    assert (local > glob).nnz == 0 and local.nnz < glob.nnz
    jac = adcore.jacobian(ramp, backend="forward", sparse=True, local=True)(x)
    np.testing.assert_array_equal(jac.toarray(), dense_jacobian(ramp, x))
    assert (jac.astype(bool) != local).nnz == 0


def test_hessian_sparsity_is_symmetric_and_holds_the_hessian():
    x = np.linspace(-1, 1, 16).reshape(4, 4)
    pattern = adcore.hessian_sparsity(stencil_energy)(x)
    assert (pattern != pattern.T).nnz == 0
    nonzero = sp.csr_array(np.asarray(adcore.hessian(stencil_energy)(x)).reshape(16, 16) != 0)
    assert (nonzero > pattern).nnz == 0


# --- what the sparse path refuses -------------------------------------------------------------------


def test_one_array_in_one_array_out():
    x = np.linspace(0.5, 1.5, 4)
    with pytest.raises(adcore.InvalidArgnumsError, match="argnums must be an int"):
        adcore.jacobian(lambda a, b: a * b, argnums=(0, 1), sparse=True)(x, x)
    with pytest.raises(adcore.InvalidInputError, match="flatten it into one array"):
        adcore.jacobian(lambda p: p["a"] * p["b"], sparse=True)({"a": x, "b": x})
    with pytest.raises(adcore.InvalidOutputError, match="must return one array"):
        adcore.jacobian(lambda x: (x, x**2), sparse=True, backend="forward")(x)
    with pytest.raises(adcore.InvalidOutputError, match="must return one array"):
        adcore.prepare_jacobian(lambda x: {"y": x}, x)
    with pytest.raises(adcore.ComplexValueError, match="real arguments only"):
        adcore.jacobian(np.sin, sparse=True)(x + 1j)
    with pytest.raises(adcore.InvalidInputError, match="dtype int64"):
        adcore.jacobian(np.sin, sparse=True)(np.arange(3))
    with pytest.raises(adcore.InvalidArgnumsError, match="out of range"):
        adcore.jacobian(np.sin, argnums=1, sparse=True)(x)
    with pytest.raises(adcore.InvalidArgnumsError, match="argnums must be an int"):
        adcore.hessian(np.sum, argnums=(0,), sparse=True)(x)


def test_options_that_do_not_belong_to_the_sparse_path():
    x = np.linspace(0.5, 1.5, 4)
    with pytest.raises(adcore.InvalidInputError, match="add sparse=True"):
        adcore.jacobian(np.sin, sparsity=np.eye(4, dtype=bool))
    with pytest.raises(adcore.InvalidInputError, match="add sparse=True"):
        adcore.hessian(np.sum, local=True)
    with pytest.raises(adcore.InvalidInputError, match="neither has_aux nor holomorphic"):
        adcore.jacobian(np.sin, sparse=True, has_aux=True)
    with pytest.raises(adcore.InvalidInputError, match="no error estimate"):
        adcore.jacobian(np.sin, backend="numeric", sparse=True, return_error=True)
    with pytest.raises(adcore.InvalidInputError, match="for backends with a jvp"):
        adcore.jacobian(np.sin, backend="reverse", sparse=True, chunk_size=2)
    with pytest.raises(adcore.InvalidInputError, match="chunk_size must be a positive int"):
        adcore.jacobian(np.sin, backend="forward", sparse=True, chunk_size=0)
    with pytest.raises(adcore.InvalidInputError, match="has no option 'methd'"):
        adcore.jacobian(np.sin, backend="numeric", sparse=True, methd="central")
    with pytest.raises(adcore.InvalidInputError, match="pass one or the other"):
        adcore.jacobian(np.sin, sparse=True, local=True, sparsity=np.eye(4, dtype=bool))
    with pytest.raises(adcore.InvalidInputError, match="gives dependency patterns"):
        adcore.jacobian(np.sin, backend="sparsity", sparse=True)
    with pytest.raises(adcore.UnknownBackendError):
        adcore.jacobian(np.sin, backend="nope", sparse=True)
    with pytest.raises(adcore.InvalidInputError, match="expected a function"):
        adcore.jacobian_sparsity(3)
    # numeric's own options pass through
    jac = adcore.jacobian(np.sin, backend="numeric", sparse=True, method="forward")(x)
    np.testing.assert_allclose(jac.toarray(), np.diag(np.cos(x)), rtol=1e-6)


def test_a_sparse_jacobian_inside_another_derivative_is_a_typed_error():
    def inner_norm(x):
        return adcore.jacobian(np.sin, sparse=True, backend="forward")(x).sum()

    with pytest.raises(adcore.InvalidInputError, match="cannot be differentiated again"):
        adcore.grad(inner_norm)(np.ones(3))


def test_without_the_sparsity_backend_the_error_says_what_to_install(monkeypatch):
    monkeypatch.delitem(adcore.plugins.get_registry().backends, "sparsity")
    with pytest.raises(adcore.MissingDependencyError, match="pip install adcore-sparsity"):
        adcore.jacobian(np.sin, sparse=True)(np.ones(3))


def test_numeric_sparse_columns_each_get_their_own_relative_step():
    """One difference per color moves columns of very different |x| together: each is scaled so its
    step is relative to its own |x|, as a dense estimate's is (a shared step gave 53.66 for 54.03)."""
    f = lambda x: np.sin(x * np.array([1.0, 100.0]))  # noqa: E731
    x = np.array([1000.0, 0.01])
    sparse_diagonal = adcore.jacobian(f, backend="numeric", sparse=True)(x).diagonal()
    dense_diagonal = np.diagonal(adcore.jacobian(f, backend="numeric")(x))
    exact = np.cos(x * [1.0, 100.0]) * [1.0, 100.0]
    np.testing.assert_allclose(sparse_diagonal, dense_diagonal, rtol=1e-6)
    np.testing.assert_allclose(sparse_diagonal, exact, rtol=1e-5)


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_reverse_row_colors_pulled_back_in_one_vmapped_sweep_equal_one_pullback_per_color(
    problem, monkeypatch
):
    f, point, _ = PROBLEMS[problem]
    x = point()
    batched = adcore.jacobian(f, backend="reverse", sparse=True)(x)
    monkeypatch.setattr(ReverseBackend, "batches", False)
    per_color = adcore.jacobian(f, backend="reverse", sparse=True)(x)
    np.testing.assert_allclose(batched.toarray(), per_color.toarray(), rtol=1e-14, atol=0)
    assert (
        batched != per_color
    ).nnz == 0 or problem == "block_diagonal"  # (its matmul sums in another order)


def test_reverse_row_colors_fall_back_to_one_pullback_each_where_the_sweep_converts_its_cotangent():
    seen = []

    @adcore.custom_vjp
    def cube(x):
        return x**3

    def bwd(x, g):
        seen.append(type(g).__name__)
        return (3 * x**2 * np.asarray(g),)  # plain NumPy on the cotangent: no batched meaning

    cube.defvjp(lambda x: (x**3, x), bwd)
    x = np.linspace(0.5, 1.5, 5)
    jac = adcore.jacobian(lambda x: cube(x) + x[::-1], backend="reverse", sparse=True)(x)
    np.testing.assert_allclose(jac.toarray(), np.diag(3 * x**2) + np.eye(5)[::-1], rtol=1e-14)
    assert seen[0] == "BatchTracer" and set(seen[1:]) == {"ndarray"}  # tried batched once, then per color
