"""adcore_sparsity.coloring: column, row and star colorings and their decompression.

Every coloring is checked for validity (no two columns of a color share a row; no two-colored path on
four vertices for star), color counts against known optima and the lower bound, and decompression
against random matrices with the pattern (J @ seeds -> decompress == J, exactly)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from adcore_sparsity.coloring import (
    ORDERS,
    Coloring,
    as_pattern,
    color,
    column_coloring,
    row_coloring,
    star_coloring,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError

STATIC_ORDERS = [order for order in ORDERS if order != "dsatur"]
RNG = np.random.default_rng(5)


# ---- patterns ----------------------------------------------------------------------------------------


def banded(n: int, lower: int, upper: int, m: int | None = None) -> sp.csr_array:
    """Entries (i, j) with -lower <= j - i <= upper."""
    i, j = np.indices((n if m is None else m, n))
    return sp.csr_array((j - i >= -lower) & (j - i <= upper))


def laplacian_2d(size: int) -> sp.csr_array:
    """The 5-point stencil on a size x size grid (row-major)."""
    path = sp.diags_array([np.ones(size - 1), np.ones(size), np.ones(size - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(size)
    return sp.csr_array((sp.kron(eye, path) + sp.kron(path, eye)) != 0)


def dense_row_and_diagonal(n: int) -> sp.csr_array:
    """The Jacobian of x -> (x_0^2, ..., x_{n-2}^2, sum(x)): a diagonal and one dense last row."""
    pattern = np.eye(n, dtype=bool)
    pattern[-1] = True
    return sp.csr_array(pattern)


def arrowhead(n: int) -> sp.csr_array:
    """A symmetric arrowhead: dense first row and column, and the diagonal."""
    pattern = np.eye(n, dtype=bool)
    pattern[0] = pattern[:, 0] = True
    return sp.csr_array(pattern)


def bundle_adjustment(cameras: int, points: int, observations: int, seed: int = 0) -> sp.csr_array:
    """Two residual rows per observation, each on its camera's 11 columns and its point's 3."""
    rng = np.random.default_rng(seed)
    camera = rng.integers(0, cameras, observations)
    point = rng.integers(0, points, observations)
    columns = np.concatenate(
        [camera[:, None] * 11 + np.arange(11), cameras * 11 + point[:, None] * 3 + np.arange(3)], axis=1
    )
    rows = np.repeat(np.arange(2 * observations), 14)
    cols = np.repeat(columns, 2, axis=0).ravel()
    return sp.csr_array(
        (np.ones(rows.size, bool), (rows, cols)), shape=(2 * observations, cameras * 11 + points * 3)
    )


def random_values(pattern: sp.csr_array, dtype: type, rng: np.random.Generator) -> np.ndarray:
    """A dense matrix with non-zero values exactly on the pattern."""
    values = rng.uniform(0.5, 2.0, pattern.nnz) * rng.choice([-1, 1], pattern.nnz)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.uniform(0.5, 2.0, pattern.nnz)
    matrix = sp.csr_array((values.astype(dtype), pattern.indices, pattern.indptr), shape=pattern.shape)
    return matrix.toarray()


def symmetric_values(pattern: sp.csr_array, dtype: type, rng: np.random.Generator) -> np.ndarray:
    upper = np.triu(random_values(pattern, dtype, rng))
    return upper + np.triu(upper, 1).T


def compress(coloring: Coloring, matrix: np.ndarray) -> np.ndarray:
    """What the compressed products give: J @ seeds[c] per color, or seeds[c] @ J for rows."""
    seeds = coloring.seeds(matrix.dtype)
    return seeds @ matrix if coloring.kind == "row" else (matrix @ seeds.T).T


# ---- validity checks (brute force) -------------------------------------------------------------------


def assert_distance2(coloring: Coloring) -> None:
    """No two columns (rows) of one color share a row (column)."""
    dense = coloring.pattern.toarray()
    lines = dense if coloring.kind == "column" else dense.T
    for line in lines:
        members = coloring.colors[np.flatnonzero(line)]
        assert members.size == np.unique(members).size


def assert_star(coloring: Coloring) -> None:
    """A distance-1 coloring with no path on four vertices in two colors."""
    adjacency = coloring.pattern.toarray()
    np.fill_diagonal(adjacency, False)
    assert (adjacency == adjacency.T).all()
    colors = coloring.colors
    neighbours = [np.flatnonzero(row) for row in adjacency]
    for a, b in zip(*np.nonzero(adjacency), strict=True):
        assert colors[a] != colors[b]
        for c in neighbours[b]:
            if c == a:
                continue
            for d in neighbours[c]:
                if d not in (a, b):
                    assert not (colors[a] == colors[c] and colors[b] == colors[d]), (a, b, c, d)


# ---- known colorings ----------------------------------------------------------------------------------


def test_tridiagonal_in_three_colors() -> None:
    pattern = banded(100, 1, 1)
    for order in ORDERS:
        coloring = column_coloring(pattern, order=order)
        assert (coloring.ncolors, coloring.lower_bound) == (3, 3), order
        assert_distance2(coloring)


def test_laplacian_2d_in_five_colors() -> None:
    coloring = column_coloring(laplacian_2d(32))
    assert coloring.lower_bound == 5
    assert coloring.ncolors == 5
    assert_distance2(coloring)
    # plain greedy in a static order needs more: "auto" is what gets the optimum
    assert column_coloring(laplacian_2d(32), order="largest_first").ncolors > 5


def test_brusselator_2d_in_six_colors() -> None:
    """Two species on a 32 x 32 grid, each on its own 5-point stencil and the other's value at the
    point: 6 columns a row, and a 6-coloring exists ((i + 2j + 3 species) mod 6) which greedy orders
    miss (9 to 12 colors) and DSATUR with seeded random ties finds."""
    stencil = laplacian_2d(32)
    eye = sp.eye_array(32 * 32)
    pattern = sp.csr_array(sp.block_array([[stencil, eye], [eye, stencil]]) != 0)
    coloring = column_coloring(pattern)
    assert coloring.ncolors == coloring.lower_bound == 6
    assert_distance2(coloring)
    assert (column_coloring(pattern).colors == coloring.colors).all()  # seeded: the same every call
    assert column_coloring(pattern, order="largest_first").ncolors > 6


def test_dense_row_and_diagonal_by_rows_in_two_colors() -> None:
    pattern = dense_row_and_diagonal(40)
    rows = row_coloring(pattern)
    assert (rows.ncolors, rows.lower_bound) == (2, 2)
    assert_distance2(rows)
    columns = column_coloring(pattern)  # the dense row makes every pair of columns clash
    assert (columns.ncolors, columns.lower_bound) == (40, 40)
    assert_distance2(columns)


@pytest.mark.parametrize(
    ("n", "lower", "upper"), [(50, 0, 0), (50, 1, 1), (60, 2, 1), (80, 3, 3), (40, 0, 4)]
)
@pytest.mark.parametrize("kind", ["column", "row"])
def test_banded_hits_the_lower_bound(n: int, lower: int, upper: int, kind: str) -> None:
    coloring = color(banded(n, lower, upper), kind)
    assert coloring.lower_bound == lower + upper + 1
    assert coloring.ncolors == coloring.lower_bound
    assert_distance2(coloring)


def test_bundle_adjustment_hits_the_lower_bound() -> None:
    coloring = column_coloring(bundle_adjustment(5, 60, 300))
    assert coloring.ncolors == coloring.lower_bound == 14
    assert_distance2(coloring)


def test_star_coloring_of_an_arrowhead_in_two_colors() -> None:
    coloring = star_coloring(arrowhead(30))
    assert (coloring.ncolors, coloring.lower_bound) == (2, 2)
    assert_star(coloring)
    # a distance-2 coloring of the same symmetric pattern needs every column apart
    assert column_coloring(arrowhead(30)).ncolors == 30


def test_star_coloring_of_a_tridiagonal_in_three_colors() -> None:
    for order in STATIC_ORDERS:
        coloring = star_coloring(banded(100, 1, 1), order=order)
        assert (coloring.ncolors, coloring.lower_bound) == (3, 3), order
        assert_star(coloring)


def test_star_lower_bounds() -> None:
    assert star_coloring(sp.eye_array(5)).lower_bound == 1  # diagonal only: one product
    assert star_coloring(banded(2, 1, 1)).lower_bound == 2  # one edge
    assert star_coloring(np.ones((6, 6))).lower_bound == 6  # a clique
    assert star_coloring(np.ones((6, 6))).ncolors == 6
    pentadiagonal = star_coloring(banded(40, 2, 2))
    assert pentadiagonal.lower_bound == 3  # triangles
    assert pentadiagonal.ncolors >= pentadiagonal.lower_bound
    assert_star(pentadiagonal)


def test_star_coloring_symmetrises_and_keeps_the_diagonal_as_given() -> None:
    upper = sp.csr_array(np.triu(np.ones((4, 4), bool), 1))  # no diagonal, upper triangle only
    coloring = star_coloring(upper)
    assert (coloring.pattern.toarray() == ~np.eye(4, dtype=bool)).all()
    hessian = symmetric_values(coloring.pattern, np.float64, np.random.default_rng(0))
    assert (coloring.decompress(compress(coloring, hessian)).toarray() == hessian).all()


# ---- validity and exact recovery on random patterns ----------------------------------------------------


@st.composite
def patterns(draw: st.DrawFn, square: bool = False) -> np.ndarray:
    m = draw(st.integers(0, 14))
    n = m if square else draw(st.integers(0, 14))
    density = draw(st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0]))
    seed = draw(st.integers(0, 2**31))
    return np.random.default_rng(seed).random((m, n)) < density


@settings(max_examples=60, deadline=None, derandomize=True)
@given(pattern=patterns(), order=st.sampled_from(ORDERS), kind=st.sampled_from(["column", "row"]))
def test_distance2_colorings_are_valid_and_recover_exactly(
    pattern: np.ndarray, order: str, kind: str
) -> None:
    coloring = color(pattern, kind, order=order)
    assert_distance2(coloring)
    assert coloring.ncolors >= coloring.lower_bound
    assert coloring.colors.shape == (pattern.shape[0] if kind == "row" else pattern.shape[1],)
    matrix = random_values(coloring.pattern, np.float64, np.random.default_rng(0))
    recovered = coloring.decompress(compress(coloring, matrix))
    assert (recovered.toarray() == matrix).all()
    assert (recovered.toarray() != 0).sum() == recovered.nnz == pattern.sum()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(pattern=patterns(square=True), order=st.sampled_from(STATIC_ORDERS))
def test_star_colorings_are_valid_and_recover_exactly(pattern: np.ndarray, order: str) -> None:
    coloring = star_coloring(pattern, order=order)
    assert_star(coloring)
    assert coloring.ncolors >= coloring.lower_bound
    assert (coloring.pattern.toarray() == (pattern | pattern.T)).all()
    hessian = symmetric_values(coloring.pattern, np.float64, np.random.default_rng(1))
    assert (coloring.decompress(compress(coloring, hessian)).toarray() == hessian).all()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["column", "row"])
def test_more_than_64_colors(kind: str, order: str) -> None:
    """The greedy coloring's bitsets and DSATUR's grow past one 64-bit word."""
    pattern = np.random.default_rng(3).random((30, 150)) < 0.9
    coloring = color(pattern if kind == "column" else pattern.T, kind, order=order)
    assert coloring.ncolors > 64
    assert_distance2(coloring)
    matrix = random_values(coloring.pattern, np.float64, np.random.default_rng(4))
    assert (coloring.decompress(compress(coloring, matrix)).toarray() == matrix).all()


def test_the_fallbacks_past_the_memory_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    import adcore_sparsity.coloring as coloring_module

    pattern = laplacian_2d(12)
    by_bitsets = {order: column_coloring(pattern, order=order).colors for order in STATIC_ORDERS}
    monkeypatch.setattr(coloring_module, "BITSET_WORDS", 0)  # greedy by visiting the neighbours
    for order in STATIC_ORDERS:  # the same greedy coloring, found the slower way
        coloring = column_coloring(pattern, order=order)
        assert_distance2(coloring)
        assert (coloring.colors == by_bitsets[order]).all()
    monkeypatch.setattr(coloring_module, "DSATUR_WORDS", 0)  # no DSATUR: "auto" is largest_first
    assert column_coloring(pattern).ncolors == column_coloring(pattern, order="largest_first").ncolors
    with pytest.raises(InvalidValueError, match="MB of color bits"):
        column_coloring(pattern, order="dsatur")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("kind", ["column", "row", "star"])
def test_decompress_recovers_in_the_dtype(kind: str, dtype: type) -> None:
    rng = np.random.default_rng(2)
    base = sp.random_array((60, 60), density=0.08, rng=rng) != 0
    pattern = base + base.T if kind == "star" else base
    coloring = color(pattern, kind)
    values = symmetric_values if kind == "star" else random_values
    matrix = values(coloring.pattern, dtype, rng)
    recovered = coloring.decompress(compress(coloring, matrix))
    assert recovered.dtype == dtype
    assert isinstance(recovered, sp.csr_array)
    assert recovered.has_canonical_format
    assert (recovered.toarray() == matrix).all()
    assert coloring.ncolors < 60


@pytest.mark.parametrize("kind", ["column", "row", "star"])
def test_the_structure_is_the_patterns_even_where_values_are_zero(kind: str) -> None:
    coloring = color(banded(10, 1, 1), kind)
    recovered = coloring.decompress(np.zeros(coloring.compressed_shape))
    assert recovered.nnz == coloring.pattern.nnz
    recovered.eliminate_zeros()  # the caller's edit must not reach the next decompression
    assert coloring.decompress(np.zeros(coloring.compressed_shape)).nnz == coloring.pattern.nnz
    matrix = (symmetric_values if kind == "star" else random_values)(coloring.pattern, np.float64, RNG)
    fortran = np.asfortranarray(compress(coloring, matrix))  # any memory layout
    assert (coloring.decompress(fortran).toarray() == matrix).all()


# ---- edge cases ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (5, 0), (4, 6)])
@pytest.mark.parametrize("kind", ["column", "row"])
def test_empty_patterns(shape: tuple[int, int], kind: str) -> None:
    coloring = color(np.zeros(shape, bool), kind)
    length = shape[0] if kind == "row" else shape[1]
    assert coloring.colors.shape == (length,)
    assert coloring.lower_bound == 0
    assert coloring.ncolors == (1 if length else 0)  # structurally empty vectors share color 0
    assert coloring.seeds().shape == (coloring.ncolors, length)
    recovered = coloring.decompress(np.zeros(coloring.compressed_shape))
    assert recovered.shape == shape
    assert recovered.nnz == 0


@pytest.mark.parametrize("n", [0, 3])
def test_empty_star_pattern(n: int) -> None:
    coloring = star_coloring(sp.csr_array((n, n), dtype=bool))
    assert (coloring.ncolors, coloring.lower_bound) == (min(n, 1), min(n, 1))
    assert coloring.decompress(np.zeros(coloring.compressed_shape)).shape == (n, n)


def test_a_single_dense_row() -> None:
    pattern = np.ones((1, 9), bool)
    columns, rows = column_coloring(pattern), row_coloring(pattern)
    assert (columns.ncolors, columns.lower_bound) == (9, 9)
    assert (rows.ncolors, rows.lower_bound) == (1, 1)
    matrix = np.arange(1.0, 10.0)[None]
    assert (columns.decompress(compress(columns, matrix)).toarray() == matrix).all()
    assert (rows.decompress(compress(rows, matrix)).toarray() == matrix).all()


def test_seeds() -> None:
    coloring = column_coloring(banded(5, 1, 1), order="natural")
    assert coloring.colors.tolist() == [0, 1, 2, 0, 1]
    seeds = coloring.seeds(np.float32)
    assert seeds.dtype == np.float32
    assert seeds.tolist() == [[1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [0, 0, 1, 0, 0]]
    assert coloring.colors.dtype == np.int64


def test_as_pattern_keeps_every_stored_entry() -> None:
    stored_zero = sp.csr_array((np.array([0.0, 2.0]), np.array([0, 2]), np.array([0, 1, 2])), shape=(2, 3))
    pattern = as_pattern(stored_zero)
    assert pattern.dtype == bool
    assert pattern.toarray().tolist() == [[True, False, False], [False, False, True]]
    duplicates = sp.coo_array((np.ones(3), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    assert as_pattern(duplicates).nnz == 2
    assert as_pattern(np.array([[0.0, 3.0], [0.0, 0.0]])).nnz == 1


# ---- typed errors ---------------------------------------------------------------------------------------


def test_errors() -> None:
    with pytest.raises(InvalidInputError, match="2-D"):
        column_coloring(np.ones(3))
    with pytest.raises(InvalidInputError, match="2-D"):
        column_coloring(sp.coo_array(np.ones(3)))
    with pytest.raises(InvalidInputError, match="square"):
        star_coloring(np.ones((2, 3)))
    with pytest.raises(InvalidValueError, match="kind"):
        color(np.ones((2, 2)), "diagonal")
    with pytest.raises(InvalidValueError, match="order"):
        column_coloring(np.ones((2, 2)), order="random")
    with pytest.raises(InvalidValueError, match="static order"):
        star_coloring(np.ones((2, 2)), order="dsatur")
    coloring = column_coloring(banded(6, 1, 1))
    with pytest.raises(InvalidValueError, match=r"shape \(3, 6\)"):
        coloring.decompress(np.zeros((3, 5)))
    assert issubclass(InvalidValueError, AdcoreError)


def test_a_coloring_that_is_not_one_is_refused() -> None:
    tridiagonal = as_pattern(banded(4, 1, 1))
    with pytest.raises(InvalidValueError, match="column coloring.*share row"):
        Coloring("column", np.array([0, 1, 0, 0]), tridiagonal, 3)
    with pytest.raises(InvalidValueError, match="row coloring.*share column"):
        Coloring("row", np.array([0, 0, 1, 2]), tridiagonal, 3)
    with pytest.raises(InvalidValueError, match="same color"):
        Coloring("star", np.array([0, 0, 1, 2]), tridiagonal, 3)
    path = as_pattern(banded(4, 1, 1).toarray() & ~np.eye(4, dtype=bool))
    with pytest.raises(InvalidValueError, match="path on four vertices"):
        Coloring("star", np.array([0, 1, 0, 1]), path, 3)  # distance-1, but 0-1-2-3 in two colors
    with pytest.raises(InvalidValueError, match="one color >= 0 per column"):
        Coloring("column", np.array([0, 1]), tridiagonal, 3)
    with pytest.raises(InvalidValueError, match="kind"):
        Coloring("diagonal", np.array([0, 1, 2, 0]), tridiagonal, 3)
    assert Coloring("column", np.array([0, 1, 2, 0]), tridiagonal, 3).ncolors == 3


# ---- imports and large patterns -----------------------------------------------------------------------


def test_importing_the_module_imports_neither_numba_nor_scipy() -> None:
    code = (
        "import sys, adcore_sparsity.coloring; "
        "print(sorted(m for m in ('numba', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "pattern",
    [laplacian_2d(91), bundle_adjustment(50, 8000, 30000)],
    ids=["laplacian-8281", "bundle-adjustment"],
)
def test_large_patterns_color_validly_at_the_lower_bound(pattern: sp.csr_array) -> None:
    """Valid, in as few colors as any coloring can have (their time, 0.2 s targeted after numba's
    compile, is measured by benchmarks/bench_sparsity_rules.py, not asserted on a shared machine)."""
    coloring = column_coloring(pattern)
    # no two columns of one color share a row: each row meets each color at most once
    per_color = sp.csr_array((np.ones(pattern.shape[1]), (np.arange(pattern.shape[1]), coloring.colors)))
    assert (sp.csr_array(pattern, dtype=float) @ per_color).max() == 1
    assert coloring.ncolors == coloring.lower_bound
