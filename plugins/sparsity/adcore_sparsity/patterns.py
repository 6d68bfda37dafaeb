"""The pattern algebra of the sparsity tracer: boolean CSR matrices combined as an op's rule says.

A traced array carries P, a bool CSR (array.size, n): row k holds the differentiated input elements
its element k may depend on. An op's rule gives, per input, a dependency D_i (None, DENSE or a
sparse (ans.size, input.size) matrix); the output's P is the union of the terms D_i @ P_i. A DENSE
dependency's term is kept as `DenseRows` (every row the same set: the support of P_i), so Hessian
terms never multiply out ans.size identical rows (adcore_sparsity.second_order pairs the terms).

Imports SciPy: import this module only when tracing (the plugin's hooks never do).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from adcore_sparsity.extend import DENSE


@dataclass(frozen=True)
class DenseRows:
    """A term whose `rows` rows all hold the columns `support` (sorted): a DENSE dependency's."""

    rows: int
    support: np.ndarray


Term = Any  # a csr_array (rows, n) or DenseRows


def empty(rows: int, n: int) -> sparse.csr_array:
    """No dependency at all: a bool (rows, n) pattern without entries."""
    return sparse.csr_array((rows, n), dtype=bool)


def identity(n: int) -> sparse.csr_array:
    """The pattern of the differentiated input itself: element k depends on element k."""
    return sparse.csr_array(
        (np.ones(n, dtype=bool), np.arange(n, dtype=np.int32), np.arange(n + 1, dtype=np.int32)), shape=(n, n)
    )


def as_bool(matrix: Any) -> sparse.csr_array:
    """A rule's sparse matrix as a canonical bool CSR: every stored entry is a dependency, whatever
    its value (a rule's stored values mean nothing)."""
    csr = sparse.csr_array(matrix) if not isinstance(matrix, sparse.csr_array) else matrix
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.data = np.ones(csr.nnz, dtype=bool)
        csr.sum_duplicates()
    if csr.dtype == bool and csr.data.all():
        return csr
    return sparse.csr_array((np.ones(csr.nnz, dtype=bool), csr.indices, csr.indptr), shape=csr.shape)


def support(pattern: sparse.csr_array) -> np.ndarray:
    """The columns that appear in any row of `pattern`, sorted."""
    return np.unique(pattern.indices)


def apply(dependency: Any, pattern: sparse.csr_array, rows: int) -> Term | None:
    """The term D @ P of one input: its dependency D (DENSE or sparse (rows, input.size)) applied to
    its P (input.size, n); None when nothing flows."""
    n = pattern.shape[1]
    if isinstance(dependency, str):
        if dependency != DENSE:
            raise ValueError(
                f"a sparsity rule gave {dependency!r}; an entry is None, DENSE or a sparse matrix"
            )
        if pattern.shape[0] == 0 or rows == 0:
            return None
        return DenseRows(rows, support(pattern))
    d = as_bool(dependency)
    if d.shape != (rows, pattern.shape[0]):
        raise ValueError(f"a sparsity rule gave a {d.shape} matrix; the op needs {(rows, pattern.shape[0])}")
    if d.nnz == 0 or pattern.nnz == 0:
        return None
    counts = np.diff(d.indptr)
    if counts.max(initial=0) <= 1:  # a gather (copy, slice, broadcast, elementwise): move P's rows
        if d.shape[0] == d.shape[1] and d.nnz == rows and np.array_equal(d.indices, np.arange(rows)):
            return pattern  # the identity: the elementwise op on an input of the output's shape
        source = np.full(rows, -1, dtype=np.int64)
        source[counts == 1] = d.indices
        return gather_rows(pattern, source, n)
    return as_bool(d @ pattern)


def gather_rows(pattern: sparse.csr_array, source: np.ndarray, n: int) -> sparse.csr_array:
    """The pattern whose row r is row source[r] of `pattern` (-1: an empty row), without a product."""
    indptr = pattern.indptr
    taken = source >= 0
    lengths = np.zeros(source.size, dtype=np.int64)
    lengths[taken] = indptr[source[taken] + 1] - indptr[source[taken]]
    out_indptr = np.zeros(source.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_indptr[1:])
    total = int(out_indptr[-1])
    starts = np.zeros(source.size, dtype=np.int64)
    starts[taken] = indptr[source[taken]]
    positions = np.repeat(starts - out_indptr[:-1], lengths) + np.arange(total, dtype=np.int64)
    indices = pattern.indices[positions]
    return sparse.csr_array(
        (np.ones(total, dtype=bool), indices, out_indptr), shape=(source.size, n)
    )  # rows of a canonical CSR stay sorted and distinct


def materialize(term: Term, n: int) -> sparse.csr_array:
    """A term as a bool CSR (rows, n)."""
    if not isinstance(term, DenseRows):
        return term
    k = term.support.size
    indptr = np.arange(term.rows + 1, dtype=np.int64) * k
    indices = np.tile(term.support, term.rows)
    return sparse.csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=(term.rows, n))


def union(terms: list[Term], rows: int, n: int) -> sparse.csr_array:
    """The union of the terms, a bool CSR (rows, n) (every term has `rows` rows)."""
    if not terms:
        return empty(rows, n)
    terms = list({id(t): t for t in terms}.values())  # x + x, x * x: one term
    if len(terms) == 1:
        return materialize(terms[0], n)
    dense = [t for t in terms if isinstance(t, DenseRows)]
    if dense:  # every row holds the union of the supports, plus the sparse terms' own entries
        merged = DenseRows(rows, np.unique(np.concatenate([t.support for t in dense])))
        terms = [t for t in terms if not isinstance(t, DenseRows)] + [merged]
    total = materialize(terms[0], n)
    for term in terms[1:]:
        total = total + materialize(term, n)
    return total


def _outer(rows: np.ndarray, columns: np.ndarray, n: int) -> sparse.csr_array:
    """The (n, n) pattern holding every pair (rows[i], columns[j])."""
    r = np.repeat(rows, columns.size)
    c = np.tile(columns, rows.size)
    return sparse.coo_array((np.ones(r.size, dtype=bool), (r, c)), shape=(n, n)).tocsr()


def gram(a: Term, b: Term, n: int) -> sparse.csr_array | None:
    """The (n, n) pattern a^T b: pairs (p, q) with p in row k of a and q in row k of b for some
    element k (both terms have the same rows): the second-derivative pairs an op creates."""
    if isinstance(a, DenseRows) and isinstance(b, DenseRows):
        return _outer(a.support, b.support, n) if a.rows else None
    if isinstance(a, DenseRows):
        return _outer(a.support, support(b), n) if b.nnz else None
    if isinstance(b, DenseRows):
        return _outer(support(a), b.support, n) if a.nnz else None
    if a.nnz == 0 or b.nnz == 0:
        return None
    return as_bool(a.T @ b)


def distinct_rows(pattern: sparse.csr_array) -> sparse.csr_array:
    """The pattern's rows without repeats (in no particular order): the same second-derivative pairs
    for fewer rows. Rows are grouped by a hash of their columns and length, then compared entry by
    entry with their group's first row, so a hash collision keeps both rows."""
    rows = pattern.shape[0]
    if rows < 2 or pattern.nnz == 0:
        return pattern
    if not pattern.has_sorted_indices:
        pattern = pattern.sorted_indices()
    indptr, indices = pattern.indptr, pattern.indices
    lengths = np.diff(indptr)
    with np.errstate(over="ignore"):
        mixed = (indices.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        mixed ^= mixed >> np.uint64(29)
        sums = np.add.reduceat(np.append(mixed, np.uint64(0)), indptr[:-1])  # (an empty row's: masked)
        key = np.where(lengths > 0, sums, 0) ^ (lengths.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
    order = np.argsort(key)
    ordered = key[order]
    starts = np.ones(rows, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    representative = np.empty(rows, dtype=np.int64)
    representative[order] = order[np.maximum.accumulate(np.where(starts, np.arange(rows), 0))]
    row_of = np.repeat(np.arange(rows), lengths)
    offsets = np.arange(indices.size) - np.repeat(indptr[:-1], lengths)
    same_length = lengths[representative] == lengths
    within = np.repeat(same_length, lengths)  # a collision across lengths: compare nothing, keep
    compared = np.repeat(indptr[:-1][representative], lengths) + offsets
    same = within & (indices == indices[np.minimum(compared, indices.size - 1)])
    differs = np.bincount(row_of[~same], minlength=rows) > 0
    keep = np.flatnonzero((representative == np.arange(rows)) | differs)
    if keep.size == rows:
        return pattern
    return gather_rows(pattern, keep, pattern.shape[1])
