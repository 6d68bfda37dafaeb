"""The sparsity tracer's pattern algebra: terms of a rule's dependencies, unions, rows moved and
deduplicated, against dense boolean arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity import patterns
from adcore_sparsity.extend import DENSE
from scipy import sparse

RNG = np.random.default_rng(11)


def random_pattern(rows, n, density=0.3):
    return patterns.as_bool(sparse.random_array((rows, n), density=density, format="csr", rng=RNG))


def test_as_bool_keeps_every_stored_entry_whatever_its_value():
    stored = sparse.csr_array(
        (np.array([0.0, 2.0, -1.0]), np.array([0, 2, 1]), np.array([0, 2, 3])), shape=(2, 3)
    )
    got = patterns.as_bool(stored)
    assert got.dtype == bool
    np.testing.assert_array_equal(got.toarray(), [[1, 0, 1], [0, 1, 0]])
    duplicated = sparse.coo_array((np.ones(3), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    np.testing.assert_array_equal(patterns.as_bool(duplicated).toarray(), [[0, 1], [1, 0]])


def test_apply_matches_the_boolean_product():
    p = random_pattern(6, 9)
    for d in [
        random_pattern(4, 6, 0.5),
        sparse.eye_array(6, format="csr"),
        sparse.eye_array(6, format="csr")[[5, 0, 0]],
    ]:
        term = patterns.apply(d, p, d.shape[0])
        want = (d.toarray() != 0).astype(int) @ p.toarray().astype(int) != 0
        got = np.zeros_like(want) if term is None else patterns.materialize(term, 9).toarray()
        np.testing.assert_array_equal(got, want)
    assert patterns.apply(sparse.eye_array(6, format="csr"), p, 6) is p  # the identity moves nothing


def test_a_dense_dependency_is_one_support_row():
    p = patterns.as_bool(sparse.csr_array(np.array([[0, 1, 0, 0], [0, 1, 0, 1]])))
    term = patterns.apply(DENSE, p, 3)
    assert isinstance(term, patterns.DenseRows) and term.rows == 3
    np.testing.assert_array_equal(term.support, [1, 3])
    np.testing.assert_array_equal(patterns.materialize(term, 4).toarray(), np.tile([0, 1, 0, 1], (3, 1)))
    other = patterns.as_bool(sparse.csr_array(np.eye(3, 4)))
    union = patterns.union([term, other], 3, 4).toarray()
    np.testing.assert_array_equal(union, np.tile([0, 1, 0, 1], (3, 1)) | (np.eye(3, 4) != 0))


def test_a_dependency_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="needs"):
        patterns.apply(sparse.eye_array(3, format="csr"), random_pattern(4, 4), 3)
    with pytest.raises(ValueError, match="None, DENSE"):
        patterns.apply("everything", random_pattern(4, 4), 3)


def test_gather_rows_with_empty_rows():
    p = random_pattern(5, 7)
    source = np.array([4, -1, 0, 0, -1, 2])
    got = patterns.gather_rows(p, source, 7).toarray()
    want = np.where(source[:, None] >= 0, p.toarray()[np.maximum(source, 0)], False)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(30))
def test_distinct_rows_drops_exactly_the_repeats(seed):
    rng = np.random.default_rng(seed)
    base = random_pattern(int(rng.integers(1, 6)), int(rng.integers(1, 9)), 0.5)
    p = patterns.as_bool(base[rng.integers(0, base.shape[0], int(rng.integers(2, 40)))])
    got = patterns.distinct_rows(p).toarray()
    assert np.unique(got, axis=0).shape[0] == got.shape[0] or p.nnz == 0
    np.testing.assert_array_equal(np.unique(got, axis=0), np.unique(p.toarray(), axis=0))


def test_gram_is_the_pairs_of_each_rows_entries():
    a, b = random_pattern(5, 6), random_pattern(5, 6)
    want = a.toarray().astype(int).T @ b.toarray().astype(int) != 0
    got = patterns.gram(a, b, 6)
    np.testing.assert_array_equal(np.zeros((6, 6), bool) if got is None else got.toarray(), want)
    dense = patterns.DenseRows(5, np.array([1, 4]))
    want = a.toarray().astype(int).T @ patterns.materialize(dense, 6).toarray().astype(int) != 0
    np.testing.assert_array_equal(patterns.gram(a, dense, 6).toarray(), want)
