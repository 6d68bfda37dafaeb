"""Graph colorings that let a sparse Jacobian or Hessian be computed from a few compressed products,
and the decompression that reads its entries back out of them.

Columns of a Jacobian J (m, n) that share no row can be summed into one seed direction: J @ seed
gives each of their entries alone in its row (Curtis, Powell & Reid, "On the estimation of sparse
Jacobian matrices", IMA J. Appl. Math. 13, 1974). A `column_coloring` gives every column a color
so that no two columns of one color share a row: a partial distance-2 coloring of the bipartite
graph of rows and columns, one JVP (or one difference) per color. `row_coloring` is the same on
J's transpose, one VJP per color, for when rows are fewer. `star_coloring` colors a symmetric
Hessian's columns so that every path on four vertices of its adjacency graph uses at least three
colors: fewer colors than a distance-2 coloring, and still every entry read directly from one
product H @ seed. All three follow Gebremedhin, Manne & Pothen, "What color is your Jacobian?
Graph coloring for computing derivatives", SIAM Review 47(4), 2005 (Algorithms 3.1 and 4.1), with
their vertex orderings: "natural", "largest_first" (by degree), "smallest_last" and
"incidence_degree", and for column and row colorings "dsatur" (Brélaz 1979: next the vertex with
the most distinct colors around it). The default, "auto", is largest_first, then DSATUR when that
left more colors than the lower bound (a 2-D 5-point stencil: 7 colors, DSATUR's 5 the optimum),
with ties broken in a few seeded random orders while the bound is not reached (see DSATUR_RUNS).

Cost: a greedy column coloring keeps one bitset of used colors per row, O(nnz x colors / 64);
DSATUR, smallest_last and incidence_degree visit every pair of non-zeros sharing a row,
O(sum of squared row counts); star coloring O(sum over vertices of degree x neighbours' degrees).
A row holding every column is not colored: every column gets its own color at once.

The loops are numba kernels (adcore_sparsity._coloring_kernels), compiled on the first coloring
(cache=True: later processes load them); numba and scipy are imported then, never at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

if TYPE_CHECKING:
    from scipy.sparse import csr_array

KINDS = ("column", "row", "star")
ORDERS = ("auto", "natural", "largest_first", "smallest_last", "incidence_degree", "dsatur")
# DSATUR keeps one bit per vertex and color its neighbours may have, and visits every pair of
# non-zeros in a row. When largest_first left colors above the lower bound, "auto" runs it with ties
# to the lower vertex, then with ties in random (seeded) orders, which find lattice colorings greedy
# orders miss (the 2-D Brusselator's 6 colors), up to DSATUR_RUNS runs and 10^7 pairs visited in
# all, until one reaches the bound; only under 64 MB of bits. Greedy's row bitsets stop at 64 MB too.
DSATUR_WORDS = 1 << 23
DSATUR_PAIRS = 10**7
DSATUR_RUNS = 8
BITSET_WORDS = 1 << 23


class Coloring:
    """A coloring of a pattern's columns (kind "column" or "star") or rows ("row"), with the seed
    matrix that compresses by it and the decompression that recovers every entry of the pattern.

    `lower_bound` is a number of colors no coloring of this kind can go under: for "column" the
    most non-zeros in a row (those columns all share the row), for "row" the most non-zeros in a
    column, for "star" the larger of a clique of the adjacency graph found greedily (a clique's
    vertices all need distinct colors) and 3 when some connected component is not a star (has a
    path on four vertices or a triangle, which two colors cannot star-color)."""

    def __init__(
        self, kind: str, colors: np.ndarray, pattern: csr_array, lower_bound: int, check: bool = True
    ) -> None:
        """check=False skips verifying that the colors are a valid coloring of the kind (the
        colorings here pass it: theirs are valid by construction); a star coloring is always
        verified while its recovery is worked out."""
        if kind not in KINDS:
            raise InvalidValueError(f"a coloring's kind is one of {KINDS}, not {kind!r}")
        self.kind = kind
        self.pattern = pattern
        self.colors = np.asarray(colors, dtype=np.int64)
        self.ncolors = int(self.colors.max()) + 1 if self.colors.size else 0
        self.lower_bound = int(lower_bound)
        expected = pattern.shape[0] if kind == "row" else pattern.shape[1]
        if self.colors.shape != (expected,) or (self.colors.size and self.colors.min() < 0):
            raise InvalidValueError(
                f"a {kind} coloring of a {pattern.shape} pattern has one color >= 0 per "
                f"{'row' if kind == 'row' else 'column'}: {expected}, got shape {self.colors.shape}"
            )
        if check and kind != "star":
            _check_distance2(kind, self.colors, self.ncolors, pattern)
        self._source = _sources(kind, self.colors, self.ncolors, pattern)

    @property
    def compressed_shape(self) -> tuple[int, int]:
        """The shape `decompress` takes: one row per color, of the length of a product."""
        m, n = self.pattern.shape
        return (self.ncolors, n if self.kind == "row" else m)

    def seeds(self, dtype: Any = np.float64) -> np.ndarray:
        """(ncolors, n) for "column"/"star", (ncolors, m) for "row": row c is the indicator of the
        columns (rows) of color c, the direction of the c-th JVP (VJP)."""
        seeds = np.zeros((self.ncolors, self.colors.size), dtype=dtype)
        seeds[self.colors, np.arange(self.colors.size)] = 1
        return seeds

    def decompress(self, compressed: np.ndarray) -> csr_array:
        """The (m, n) Jacobian (star: the (n, n) Hessian) with exactly the pattern's structure, in
        compressed's dtype, from compressed[c] = J @ seeds[c] ("column", "star") or seeds[c] @ J ("row")."""
        from scipy.sparse import csr_array

        compressed = np.asarray(compressed)
        if compressed.shape != self.compressed_shape:
            raise InvalidValueError(
                f"a {self.kind} coloring with {self.ncolors} colors of a {self.pattern.shape} pattern "
                f"decompresses an array of shape {self.compressed_shape}, not {compressed.shape}"
            )
        data = compressed.reshape(-1)[self._source]
        # fresh index arrays: a caller's in-place edit (eliminate_zeros) must not reach the pattern
        out = csr_array(
            (data, self.pattern.indices.copy(), self.pattern.indptr.copy()), shape=self.pattern.shape
        )
        out.has_canonical_format = True
        return out

    def __repr__(self) -> str:
        return (
            f"Coloring(kind={self.kind!r}, ncolors={self.ncolors}, lower_bound={self.lower_bound}, "
            f"pattern shape={self.pattern.shape}, nnz={self.pattern.nnz})"
        )


def color(pattern: Any, kind: str, order: str = "auto") -> Coloring:
    """The coloring of `kind` ("column", "row" or "star") of a pattern."""
    try:
        coloring = _COLORINGS[kind]
    except KeyError:
        raise InvalidValueError(f"a coloring's kind is one of {KINDS}, not {kind!r}") from None
    return coloring(pattern, order=order)


def column_coloring(pattern: Any, order: str = "auto") -> Coloring:
    """Colors of the columns such that no two columns of one color have a non-zero in the same row
    (partial distance-2 coloring of the bipartite graph, GMP 2005 Algorithm 3.1; the CPR grouping
    when order="natural")."""
    csr = as_pattern(pattern)
    lower_bound = _max_count(csr.indptr)
    colors = _distance2(csr.tocsc(), csr, lower_bound, order)
    return Coloring("column", colors, csr, lower_bound, check=False)


def row_coloring(pattern: Any, order: str = "auto") -> Coloring:
    """Colors of the rows such that no two rows of one color have a non-zero in the same column:
    the column coloring of the transpose, for one VJP per color."""
    csr = as_pattern(pattern)
    csc = csr.tocsc()
    lower_bound = _max_count(csc.indptr)
    colors = _distance2(csr, csc, lower_bound, order)
    return Coloring("row", colors, csr, lower_bound, check=False)


def _distance2(vertices: Any, others: Any, lower_bound: int, order: str) -> np.ndarray:
    """Colors of the vertices (the columns of `vertices`, a CSC or CSR matrix whose compressed axis
    they are) such that no two of one color meet in one of the others (`others`, the same pattern
    compressed along the other axis)."""
    from adcore_sparsity import _coloring_kernels as kernels

    if order not in ORDERS:
        raise InvalidValueError(f"a coloring's order is one of {ORDERS}, not {order!r}")
    n = vertices.indptr.size - 1
    if lower_bound == n:  # one row holds every column: n colors, whatever the order
        return np.arange(n, dtype=np.int64)
    graph = (*_ints(vertices.indptr, vertices.indices), *_ints(others.indptr, others.indices), n)
    if order not in ("auto", "dsatur"):
        return _greedy(_order(order, graph), graph)
    by_degree, top = kernels.largest_first(graph[0], graph[1], graph[2], True)
    words = (min(top, n - 1) + 64) // 64  # DSATUR's colors are at most the largest degree + 1
    if order == "dsatur":
        if n * words > DSATUR_WORDS:
            raise InvalidValueError(
                f"order='dsatur' would keep {n * words * 8 / 2**20:.0f} MB of color bits for this pattern "
                f"(the limit is {DSATUR_WORDS * 8 / 2**20:.0f} MB): use order='auto' or 'largest_first'"
            )
        return kernels.dsatur(*graph, words, np.arange(n, dtype=np.int64))
    colors = _greedy(by_degree, graph)
    if not colors.size or colors.max() + 1 == lower_bound or n * words > DSATUR_WORDS:
        return colors
    runs = min(DSATUR_RUNS, DSATUR_PAIRS // max(_pairs(others), 1))
    rng = np.random.default_rng(0)  # the same colors on every call
    for run in range(runs):
        rank = np.arange(n, dtype=np.int64) if run == 0 else rng.permutation(n).astype(np.int64)
        better = kernels.dsatur(*graph, words, rank)
        if better.max() < colors.max():
            colors = better
        if colors.max() + 1 == lower_bound:
            break
    return colors


def _greedy(order: np.ndarray, graph: tuple) -> np.ndarray:
    """Greedy distance-2 coloring in `order`: by row bitsets when they fit in BITSET_WORDS words,
    else by visiting every column that shares a row."""
    from adcore_sparsity import _coloring_kernels as kernels

    a_ptr, a_idx, b_ptr, _, n = graph
    n_rows = b_ptr.size - 1
    colors = kernels.greedy_by_rows(order, a_ptr, a_idx, n_rows, max(1, BITSET_WORDS // max(n_rows, 1)))
    return colors if colors.size == n else kernels.greedy(order, *graph)


def star_coloring(pattern: Any, order: str = "auto") -> Coloring:
    """A star coloring of a symmetric pattern's columns (GMP 2005 Algorithm 4.1): a distance-1
    coloring of its adjacency graph in which every path on four vertices has three colors, so every
    entry of the Hessian is read directly from one product H @ seed. A pattern that is not symmetric
    is made so (the union with its transpose: a Hessian is symmetric); the diagonal may be stored
    or not and is kept as given."""
    from scipy.sparse import csr_array

    from adcore_sparsity import _coloring_kernels as kernels

    csr = as_pattern(pattern)
    n = csr.shape[0]
    if csr.shape != (n, n):
        raise InvalidInputError(
            f"a star coloring colors a square (symmetric) pattern, not one of shape {csr.shape}"
        )
    symmetric = as_pattern(csr + csr.T)
    rows = np.repeat(np.arange(n), np.diff(symmetric.indptr))
    off = rows != symmetric.indices
    adjacency = as_pattern(
        csr_array((np.ones(off.sum(), bool), (rows[off], symmetric.indices[off])), shape=(n, n))
    )
    ptr, idx = _ints(adjacency.indptr, adjacency.indices)
    identity = np.arange(n + 1, dtype=np.int64)
    graph = (ptr, idx, identity, identity[:n].copy(), n)
    if order == "auto":
        order = "largest_first"
    elif order == "dsatur":
        raise InvalidValueError(
            "star coloring takes a static order: 'auto', " + ", ".join(map(repr, ORDERS[1:-1]))
        )
    colors = kernels.star(_order(order, graph, bipartite=False), ptr, idx, n)
    lower = kernels.greedy_clique(ptr, idx, n)
    if not kernels.is_star_forest(ptr, idx, n):
        lower = max(lower, 3)
    return Coloring("star", colors, symmetric, lower)


_COLORINGS = {"column": column_coloring, "row": row_coloring, "star": star_coloring}


def as_pattern(pattern: Any) -> csr_array:
    """A pattern as a canonical bool csr_array (sorted indices, no duplicates): a SciPy sparse
    matrix's stored entries (whatever their values: a stored entry may be non-zero), or a dense
    array's non-zero entries."""
    import scipy.sparse as sp

    if sp.issparse(pattern):
        csr = sp.csr_array(pattern, copy=True)
    else:
        dense = np.asarray(pattern)
        if dense.ndim != 2:
            raise InvalidInputError(
                f"a sparsity pattern is 2-D (outputs x inputs), not of shape {dense.shape}"
            )
        csr = sp.csr_array(dense != 0)
    if csr.ndim != 2:
        raise InvalidInputError(f"a sparsity pattern is 2-D (outputs x inputs), not of shape {csr.shape}")
    csr.sum_duplicates()
    return sp.csr_array((np.ones(csr.nnz, dtype=bool), csr.indices, csr.indptr), shape=csr.shape)


def _ints(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Index arrays as fresh writeable int64 arrays: the one type the kernels are compiled for."""
    return tuple(np.array(a, dtype=np.int64) for a in arrays)


def _pairs(others: Any) -> int:
    """The pairs of non-zeros sharing a row: the work of visiting every column's neighbours."""
    counts = np.diff(others.indptr).astype(np.int64)
    return int(counts @ counts)


def _max_count(indptr: np.ndarray) -> int:
    return int(np.diff(indptr).max()) if indptr.size > 1 else 0


def _order(order: str, graph: tuple, bipartite: bool = True) -> np.ndarray:
    """The vertices of graph (a_ptr, a_idx, b_ptr, b_idx, n) in the order greedy coloring visits them
    (bipartite: a column intersection graph, else b is the identity and a the adjacency lists)."""
    from adcore_sparsity import _coloring_kernels as kernels

    a_ptr, a_idx, b_ptr, _, n = graph
    if order == "natural":
        return np.arange(n, dtype=np.int64)
    if order == "largest_first":
        return kernels.largest_first(a_ptr, a_idx, b_ptr, bipartite)[0]
    if order in ("smallest_last", "incidence_degree"):
        return kernels.dynamic_order(*graph, order == "smallest_last")
    raise InvalidValueError(f"a coloring's order is one of {ORDERS}, not {order!r}")


def _check_distance2(kind: str, colors: np.ndarray, ncolors: int, pattern: csr_array) -> None:
    """Raise unless no two columns (rows) of one color share a row (column)."""
    rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    cols = pattern.indices.astype(np.int64)
    line, member = (rows, cols) if kind == "column" else (cols, rows)
    key = np.sort(line * max(ncolors, 1) + colors[member])
    clash = np.flatnonzero(key[1:] == key[:-1])
    if clash.size:
        where, c = divmod(int(key[clash[0]]), max(ncolors, 1))
        raise InvalidValueError(
            f"the colors are not a {kind} coloring of the pattern: two {'columns' if kind == 'column' else 'rows'} "
            f"of color {c} share {'row' if kind == 'column' else 'column'} {where}, so their sum cannot be "
            "told apart there"
        )


def _sources(kind: str, colors: np.ndarray, ncolors: int, pattern: csr_array) -> np.ndarray:
    """For each stored entry of the pattern (CSR order), its flat position in the compressed array."""
    m, n = pattern.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
    cols = pattern.indices.astype(np.int64)
    if kind == "column":
        return colors[cols] * m + rows
    if kind == "row":
        return colors[rows] * n + cols
    return _star_sources(colors, ncolors, rows, cols, n)


def _star_sources(colors: np.ndarray, ncolors: int, rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Star coloring's direct recovery (GMP 2005, section 4.2): H[i, i] is row i of group color(i);
    H[i, j] is row i of group color(j) when j is i's only neighbour of that color, else row j of
    group color(i), where i must be j's only neighbour of its color (a star coloring guarantees one)."""
    off = rows != cols
    key = rows[off] * ncolors + colors[cols[off]]  # (vertex, color of a neighbour)
    unique, counts = np.unique(key, return_counts=True)

    def alone(vertex: np.ndarray, neighbour_color: np.ndarray) -> np.ndarray:
        """Whether vertex has exactly one neighbour of that color."""
        wanted = vertex * ncolors + neighbour_color
        at = np.minimum(np.searchsorted(unique, wanted), max(unique.size - 1, 0))
        return (unique[at] == wanted) & (counts[at] == 1) if unique.size else np.zeros(vertex.size, bool)

    sources = colors[cols] * n + rows  # row i of group color(j); the diagonal's too
    i, j = rows[off], cols[off]
    if np.any(colors[i] == colors[j]):
        bad = np.flatnonzero(colors[i] == colors[j])[0]
        raise InvalidValueError(
            f"the colors are not a star coloring of the pattern: {i[bad]} and {j[bad]} are neighbours "
            f"of the same color {colors[i[bad]]}"
        )
    direct = alone(i, colors[j])
    flipped = alone(j, colors[i])
    if not np.all(direct | flipped):
        bad = np.flatnonzero(~(direct | flipped))[0]
        raise InvalidValueError(
            f"the colors are not a star coloring of the pattern: H[{i[bad]}, {j[bad]}] shares its product "
            "with another entry in both its row and its column (a path on four vertices in two colors)"
        )
    sources[off] = np.where(direct, sources[off], colors[i] * n + j)
    return sources
